#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The tests as a patch series for linux-source-7.3: a git repository made
# from the pristine tree, one commit with the shared helpers and the
# "readahead" category, then one commit per selftests-mm/*.c (each made
# by install-in-tree.sh, so the tree's own layout; new files listed in
# MAINTAINERS under PAGE CACHE), and git format-patch
# with a cover letter. Then checks the series as a maintainer would:
# checkpatch.pl --strict on every patch, git am on a clean checkout of
# the pristine tree (the result must equal the generated branch), and
# the mm selftests build there with W=1 warnings, none in our files.
#
#   scripts/make-series.sh [--out DIR] [--keep DIR] [--no-build]
#
#   --out DIR    where the patches go (default: build/series; emptied)
#   --keep DIR   work in DIR and keep it (git repository of the tree)
#   --no-build   leave out the W=1 build
#
# RA_SOURCE overrides the linux-source tarball (default: vm/debian-apt.sh
# source 7.3). Changelog texts: scripts/series-text.py. Ends with one
# result line. Exit status: 0 when every check passes, 1 when one fails,
# 2 on usage errors or without a submitter identity (From: and
# Signed-off-by: are GIT_AUTHOR_NAME/GIT_AUTHOR_EMAIL, else git's
# user.name/user.email), 3 when the download, extraction or the tree's own
# build fails.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
prog=${0##*/}
series=7.3
out=$top/build/series
keep=
build=1

usage() {
	sed -n '/^#   scripts\/make-series.sh/,/^#   --no-build/s/^# \{0,1\}//p' "$0" >&2
	exit 2
}
infra() {
	echo "$prog: $*" >&2
	exit 3
}

while [ $# -gt 0 ]; do
	case $1 in
	--out) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
	--keep) [ $# -ge 2 ] || usage; keep=$2; shift 2 ;;
	--no-build) build=0; shift ;;
	*) usage ;;
	esac
done

# The submitter: GIT_AUTHOR_NAME and GIT_AUTHOR_EMAIL, else git's
# user.name and user.email; From: and Signed-off-by: carry it.
name=${GIT_AUTHOR_NAME:-$(git -C "$top" config user.name || true)}
email=${GIT_AUTHOR_EMAIL:-$(git -C "$top" config user.email || true)}
if [ -z "$name" ] || [ -z "$email" ]; then
	echo "$prog: no submitter identity: set git's user.name and user.email (or GIT_AUTHOR_NAME and GIT_AUTHOR_EMAIL)" >&2
	exit 2
fi

if [ -n "$keep" ]; then
	mkdir -p "$keep"
	work=$(cd "$keep" && pwd)
else
	work=$(mktemp -d /var/tmp/ra-series.XXXXXX)
	trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out"/*.patch
src=${RA_SOURCE:-$("$top/vm/debian-apt.sh" source "$series")} ||
	infra "linux-source-$series: download failed"

export GIT_AUTHOR_NAME=$name GIT_AUTHOR_EMAIL=$email
export GIT_COMMITTER_NAME=${GIT_COMMITTER_NAME:-$name}
export GIT_COMMITTER_EMAIL=${GIT_COMMITTER_EMAIL:-$email}
# Fixed dates: the same sources give the same patches.
export GIT_AUTHOR_DATE="2026-01-01 00:00:00 +0000"
export GIT_COMMITTER_DATE=$GIT_AUTHOR_DATE
signoff="Signed-off-by: $name <$email>"

tree=$work/linux-source-$series
rm -rf "$tree"
tar -xJf "$src" -C "$work" || infra "extracting $src failed"
git() { command git -C "$tree" -c core.autocrlf=false -c gc.auto=0 "$@"; }
git init -q -b base
# Debian's top-level .gitignore ignores everything at the top ("/*"):
# the pristine tree is added as it is, our files in mm with -f.
git add -A -f
git commit -q -m "linux-source-$series ($(make -s -C "$tree" kernelversion 2>/dev/null))"
git checkout -q -b readahead

# The tests go to the maintainers of the code they test: an F: line in
# the PAGE CACHE section (mm/filemap.c, mm/readahead.c) for each new
# file, in sorted order.
maintainers_add() {
	F=$1 LC_ALL=C awk '
		$0 == "PAGE CACHE" { sect = 1 }
		sect && !done && /^F:\t/ && substr($0, 4) > ENVIRON["F"] {
			print "F:\t" ENVIRON["F"]; done = 1 }
		sect && !done && /^$/ { print "F:\t" ENVIRON["F"]; done = 1 }
		{ print }
		END { if (!done) exit 1 }' "$tree/MAINTAINERS" > "$work/MAINTAINERS"
	cat "$work/MAINTAINERS" > "$tree/MAINTAINERS"
}

# One commit: the changes install-in-tree.sh makes, the changelog from
# series-text.py (subject, blank line, body) and a sign-off.
commit() {
	local msg=$work/msg

	"$top/scripts/series-text.py" "$@" > "$msg"
	printf '\n%s\n' "$signoff" >> "$msg"
	git add -A -f tools/testing/selftests/mm
	for f in $(git diff --cached --name-only --diff-filter=A); do
		maintainers_add "$f"
	done
	git add MAINTAINERS
	git commit -q -F "$msg"
}

tests=$(cd "$top/selftests-mm" && printf '%s\n' *.c | sed 's/\.c$//' | LC_ALL=C sort)
RA_TESTS="" "$top/scripts/install-in-tree.sh" "$tree" > /dev/null
commit helpers
for t in $tests; do
	RA_TESTS=$t "$top/scripts/install-in-tree.sh" "$tree" > /dev/null
	commit test "$t"
done
# shellcheck disable=SC2086 # a list of names
cover=$("$top/scripts/series-text.py" cover $tests)
git format-patch -q --cover-letter --no-signature -o "$out" base..readahead
COVER=$cover python3 - "$out"/0000-cover-letter.patch <<'EOF'
import os, sys
path = sys.argv[1]
subject, _, blurb = os.environ['COVER'].partition('\n\n')
text = open(path).read()
text = text.replace('*** SUBJECT HERE ***', subject)
text = text.replace('*** BLURB HERE ***', blurb)
open(path, 'w').write(text)
EOF
bad=0

# checkpatch --strict on each patch (not on the cover letter).
for p in "$out"/0*.patch; do
	case $p in */0000-cover-letter.patch) continue ;; esac
	if ! (cd "$tree" && perl scripts/checkpatch.pl --strict --terse \
		--show-types "$p") > "$work/checkpatch.log" 2>&1; then
		echo "FAIL: checkpatch --strict: $(basename "$p")"
		grep -E 'ERROR|WARNING|CHECK' "$work/checkpatch.log"
		bad=1
	fi
done

# git am on a clean checkout of the pristine tree.
git checkout -q -f -b am base
git clean -q -fdx
patches=()
for p in "$out"/0*.patch; do
	[ "${p##*/}" = 0000-cover-letter.patch ] || patches+=("$p")
done
if ! git am -q "${patches[@]}" > "$work/am.log" 2>&1; then
	echo "FAIL: git am of the series on pristine $series"
	head -5 "$work/am.log"
	git am --abort 2> /dev/null || true
	bad=1
elif [ "$(git rev-parse 'HEAD^{tree}')" != "$(git rev-parse 'readahead^{tree}')" ]; then
	echo "FAIL: git am on pristine $series gives another tree than the series"
	bad=1
fi

# The mm selftests of the patched tree, with the kernel's W=1 warnings
# (scripts/Makefile.warn: W=1 on top of what every build has) for every
# file; none may be in ours.
w1="-Wextra -Wundef -Wmissing-declarations -Wmissing-prototypes -Wunused"
w1="$w1 -Wmissing-format-attribute -Wmissing-include-dirs"
w1="$w1 -Wunused-const-variable -Wno-unused-parameter -Wno-sign-compare"
w1="$w1 -Wno-missing-field-initializers"
if [ "$build" = 1 ] && [ "$bad" = 0 ]; then
	nice -n 10 make -s -C "$tree" headers > "$work/headers.log" 2>&1 ||
		infra "make headers in $tree failed (see $work/headers.log)"
	if ! nice -n 10 make -j3 -C "$tree/tools/testing/selftests" TARGETS=mm \
		W=1 USERCFLAGS="$w1" > "$work/w1.log" 2>&1; then
		grep -E 'error|Error' "$work/w1.log" | head -5 >&2
		infra "building the mm selftests failed (see $work/w1.log)"
	fi
	if grep -E '(^|/)(readahead_[a-z_0-9]*|ra_[a-z]+)\.[ch]:[0-9]+:[0-9]+: (warning|error)' "$work/w1.log"; then
		echo "FAIL: W=1 warnings in our files (above)"
		bad=1
	fi
	for t in $tests; do
		[ -x "$tree/tools/testing/selftests/mm/$t" ] || {
			echo "FAIL: $t was not built"
			bad=1
		}
	done
fi

if [ "$bad" = 0 ]; then
	echo "series: ${#patches[@]} patches and a cover letter in $out; checkpatch --strict clean, git am on pristine $series$([ "$build" = 1 ] && echo ", W=1 build without warnings in our files"): pass"
else
	echo "series: fail${keep:+ (kept in $keep)}"
fi
exit "$bad"
