#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The tests as patch series for linux-source-7.3, as scripts/series_plan.py
# plans them from verdicts/expected.tsv and validation/configurations:
# first the tests that pass on released 7.3, then one series per fix, its
# kernel change(s) from validation/patches/ first, then the tests it makes
# pass; then single patches posted apart (a test that pins a rule of the
# code, on the first series; mm's own test with our cases, on the
# pristine tree); each series in a directory of its own
# (OUT/<n>-<name>/), with a cover letter where it has more than one
# patch. Each test patch is made by install-in-tree.sh from a payload
# holding only the tests so far and the lib's functions, types and
# macros they use, so that a helper goes in with its first user; the first patch adds the "readahead" category, the helpers
# its first test uses and the MAINTAINERS lines (under PAGE CACHE) for
# its files, with that test.
#
# Then checks each series as a maintainer would: checkpatch.pl --strict on
# every patch; git am on a clean checkout of the pristine tree (a fix
# series on the tree with the first series applied, and on the series
# before it applied in order, the lists of the Makefile and run_vmtests.sh
# merged as a union), the result equal to the generated
# branch; each test source, in the last series that touches it, equal
# to ours; the mm selftests of each series built with W=1
# warnings, none in our files, and every test of the series built; the
# verdicts each series is planned by (series_plan.py verdicts); no
# internal configuration name in any patch or cover letter.
#
#   scripts/make-series.sh [--out DIR] [--keep DIR] [--no-build]
#
#   --out DIR    where the series go (default: build/series; emptied)
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
who=${GIT_AUTHOR_NAME:-$(git -C "$top" config user.name || true)}
email=${GIT_AUTHOR_EMAIL:-$(git -C "$top" config user.email || true)}
if [ -z "$who" ] || [ -z "$email" ]; then
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
rm -rf "$out"/[0-9]*-*
src=${RA_SOURCE:-$("$top/vm/debian-apt.sh" source "$series")} ||
	infra "linux-source-$series: download failed"

export GIT_AUTHOR_NAME=$who GIT_AUTHOR_EMAIL=$email
export GIT_COMMITTER_NAME=${GIT_COMMITTER_NAME:-$who}
export GIT_COMMITTER_EMAIL=${GIT_COMMITTER_EMAIL:-$email}
# Fixed dates: the same sources give the same patches.
export GIT_AUTHOR_DATE="2026-01-01 00:00:00 +0000"
export GIT_COMMITTER_DATE=$GIT_AUTHOR_DATE
signoff="Signed-off-by: $who <$email>"

tree=$work/linux-source-$series
rm -rf "$tree"
tar -xJf "$src" -C "$work" || infra "extracting $src failed"
git() { command git -C "$tree" -c core.autocrlf=false -c gc.auto=0 "$@"; }
git init -q -b base
# Debian's top-level .gitignore ignores everything at the top ("/*"):
# the pristine tree is added as it is, our files in mm with -f.
git add -A -f
git commit -q -m "linux-source-$series ($(make -s -C "$tree" kernelversion 2>/dev/null))"
mmdir=tools/testing/selftests/mm
bad=0
fail() {
	echo "FAIL: $*"
	bad=1
}

plan=$("$top/scripts/series_plan.py" plan)
while read -r p; do
	fail "series plan: $p"
done < <(echo "$plan" | sed -n 's/^problem //p')
mapfile -t names < <(echo "$plan" | sed -n 's/^series \([^ ]*\).*/\1/p')
first=${names[0]}

# The tests of a series and its kernel patches, from the plan.
series_tests() {
	echo "$plan" | awk -v s="$1" '$1 == "series" { on = $2 == s; next }
		on && $1 == "test" { print $2 }'
}
series_onto() {
	echo "$plan" | awk -v s="$1" '$1 == "series" { on = $2 == s; next }
		on && $0 == "onto base" { b = 1 }
		END { print b ? "base" : "'"$first"'" }'
}
series_patches() {
	echo "$plan" | awk -v s="$1" '$1 == "series" { on = $2 == s; next }
		on && $1 == "patch" { print $2 }'
}

# The tests go to the maintainers of the code they test: F: lines in the
# PAGE CACHE section (mm/filemap.c, mm/readahead.c), each at its sorted
# place, for every file of the category (the tests, their lib, the
# ksft_ wrapper).
maintainers_add() {
	local f

	for f in "$mmdir/ksft_readahead.sh" "$mmdir/ra_*" "$mmdir/readahead_*"; do
		F=$f LC_ALL=C awk '
			$0 == "PAGE CACHE" { sect = 1 }
			sect && !done && /^F:\t/ && substr($0, 4) > ENVIRON["F"] {
				print "F:\t" ENVIRON["F"]; done = 1 }
			sect && !done && /^$/ { print "F:\t" ENVIRON["F"]; done = 1 }
			{ print }
			END { if (!done) exit 1 }' "$tree/MAINTAINERS" > "$work/MAINTAINERS"
		cat "$work/MAINTAINERS" > "$tree/MAINTAINERS"
	done
}

# One commit of the tree's changes, with the changelog series-text.py
# writes for the arguments and a sign-off; what it writes after a "---"
# line becomes the commit's note, which format-patch sends below the
# patch's own "---".
commit() {
	"$top/scripts/series-text.py" "$@" > "$work/text"
	sed '/^---$/,$d' "$work/text" > "$work/msg"
	printf '\n%s\n' "$signoff" >> "$work/msg"
	git add -A -f "$mmdir" MAINTAINERS
	git commit -q -F "$work/msg"
	! grep -qx -- --- "$work/text" ||
		sed '1,/^---$/d' "$work/text" | git notes add -f -F -
}

# The tests named into the tree: install-in-tree.sh of a payload
# staged with only them and what they use (--ext4-xfs first: without
# the other filesystems).
install() {
	local only=()
	[ "$1" != --ext4-xfs ] || { only=("$1"); shift; }
	"$top/scripts/series_plan.py" stage "$work/stage" "${only[@]}" "$@"
	RA_TESTS="$*" "$work/stage/scripts/install-in-tree.sh" "$tree" > /dev/null
}

# The first series: the category with its first test, the helpers that
# test uses and the MAINTAINERS lines, then one commit per test, with the
# helpers it is the first to use, all on ext4 and XFS; then the other
# filesystems' variants of its tests in a commit of their own.
git checkout -q -b "$first"
mapfile -t first_tests < <(series_tests "$first")
tests=()
for t in "${first_tests[@]}"; do
	tests+=("$t")
	install --ext4-xfs "${tests[@]}"
	args=(test "$t" --series "$first")
	if [ ${#tests[@]} = 1 ]; then
		maintainers_add
		args=(category "${args[@]}")
	fi
	commit "${args[@]}"
done
install "${first_tests[@]}"
[ -z "$(git status --porcelain)" ] || commit filesystems

# Every other series on the first (or, mm's own test alone, on the
# pristine tree): its kernel patches, then its tests.
for s in "${names[@]:1}"; do
	onto=$(series_onto "$s")
	git checkout -q -b "$s" "$onto"
	while read -r p; do
		git apply "$top/validation/patches/$p" ||
			fail "$p does not apply to linux-source-$series"
		"$top/scripts/series-text.py" kernel "$p" > "$work/msg"
		# The sign-off joins the trailers, or follows a blank line.
		tail -n 1 "$work/msg" | grep -Eq '^[A-Z][A-Za-z-]+: ' ||
			echo >> "$work/msg"
		printf '%s\n' "$signoff" >> "$work/msg"
		git commit -q -a -F "$work/msg"
	done < <(series_patches "$s")
	# Each test on those before it in the series, whose helpers stay.
	added=()
	while read -r t; do
		added+=("$t")
		if [ "$onto" = base ]; then
			install "${added[@]}"
		else
			install "${first_tests[@]}" "${added[@]}"
		fi
		commit test "$t" --series "$s"
	done < <(series_tests "$s")
done

# Each series as patches in OUT/<n>-<name>, with a cover letter where
# it has more than one.
dirs=()
summary=
for s in "${names[@]}"; do
	dir=$out/$(( ${#dirs[@]} + 1 ))-$s
	dirs+=("$dir")
	prev=$(series_onto "$s")
	[ "$s" != "$first" ] || prev=base
	cover=()
	[ "$(git rev-list --count "$prev..$s")" = 1 ] || cover=(--cover-letter)
	git format-patch -q --notes "${cover[@]}" --no-signature -o "$dir" "$prev..$s"
	[ ${#cover[@]} = 1 ] || { summary+="${summary:+, }$s 1"; continue; }
	"$top/scripts/series-text.py" cover "$s" > "$work/cover"
	python3 - "$dir"/0000-cover-letter.patch "$work/cover" <<'EOF'
import sys
path = sys.argv[1]
subject, _, blurb = open(sys.argv[2]).read().rstrip('\n').partition('\n\n')
text = open(path).read()
text = text.replace('*** SUBJECT HERE ***', subject)
text = text.replace('*** BLURB HERE ***', blurb)
open(path, 'w').write(text)
EOF
	summary+="${summary:+, }$s $(find "$dir" -name '0*.patch' ! -name 0000-cover-letter.patch | wc -l)"
done

# checkpatch --strict on each patch (not on the cover letters). Two of
# its warnings cannot hold here: the tree is a tarball without history,
# so no commit id of a Fixes: line is known (UNKNOWN_COMMIT_ID), and
# every patch that adds a file is asked whether MAINTAINERS needs it
# (FILE_PATH_CHANGES), which the check after this one answers.
for p in "$out"/*/0*.patch; do
	case $p in */0000-cover-letter.patch) continue ;; esac
	if ! (cd "$tree" && perl scripts/checkpatch.pl --strict --terse \
		--show-types --ignore UNKNOWN_COMMIT_ID,FILE_PATH_CHANGES "$p") \
		> "$work/checkpatch.log" 2>&1; then
		fail "checkpatch --strict: ${p#"$out"/}"
		grep -E 'ERROR|WARNING|CHECK' "$work/checkpatch.log"
	fi
done

# No internal configuration name in a changelog or cover letter (the
# diffs are our sources): the columns of verdicts/expected.tsv and the
# changes they name, our files.
# A change named as a test is (madv_random) names the test.
internal=$(sed -n 's/^test\t//p' "$top/verdicts/expected.tsv" | tr '\t' '\n' |
	sed -n 's/^[^+]*+\([a-z0-9]*_[a-z0-9_]*\)$/\1/p' | sort -u |
	grep -vxF -f <(sed -n 's/^[a-z_0-9]*\.[a-z_0-9]*\.\([a-z_0-9]*\)\t.*/\1/p' \
		"$top/verdicts/expected.tsv" | sort -u) | paste -sd '|')
internal+='|v7\.3[+-]|debian-[0-9]|[Kk]ill[ -]matrix|expected\.tsv|RESULTS\.md'
internal+='|validation/|[a-z0-9-]+\.patch\b'
for p in "$out"/*/0*.patch; do
	sed '/^diff --git /,$d' "$p" |
		grep -nE "(^|[^A-Za-z0-9_])($internal)" |
		sed "s|^|${p#"$out"/}:|" || true
done > "$work/internal.log"
if [ -s "$work/internal.log" ]; then
	fail "internal names in the series:"
	head -10 "$work/internal.log"
fi

printf '%s merge=union\n' tools/testing/selftests/mm/Makefile \
	tools/testing/selftests/mm/run_vmtests.sh > "$(git rev-parse --absolute-git-dir)/info/attributes"

# git am on a clean checkout of the pristine tree; a fix series on the
# first series applied there, and on the series before it applied in
# order (a maintainer may take them one after the other or pick one).
for i in "${!names[@]}"; do
	s=${names[$i]}
	patches=()
	for p in "${dirs[$i]}"/0*.patch; do
		[ "${p##*/}" = 0000-cover-letter.patch ] || patches+=("$p")
	done
	onto=base
	[ "$i" = 0 ] || [ "$(series_onto "$s")" = base ] || onto=am-$first
	git checkout -q -f -B "am-$s" "$onto"
	git clean -q -fdx
	if ! git am -q "${patches[@]}" > "$work/am.log" 2>&1; then
		fail "git am of $s on pristine $series${onto#base}"
		head -5 "$work/am.log"
		git am --abort 2> /dev/null || true
	elif [ "$(git rev-parse 'HEAD^{tree}')" != "$(git rev-parse "$s^{tree}")" ]; then
		fail "git am of $s gives another tree than the series"
	fi
	[ "$i" -ge 2 ] || continue
	git checkout -q -f -B "stack-$s" "$([ "$i" = 2 ] && echo "am-${names[1]}" || echo "stack-${names[$((i - 1))]}")"
	git clean -q -fdx
	# The Makefile and run_vmtests.sh name each test: two series adding
	# tests next to each other touch the same lines there, and a
	# maintainer keeps both sides' (a union merge, git am -3).
	if ! git am -q -3 "${patches[@]}" > "$work/am.log" 2>&1; then
		fail "git am of $s on the series before it: $(git diff --name-only --diff-filter=U | paste -sd ' ')"
		head -5 "$work/am.log"
		git am --abort 2> /dev/null || true
	fi
done

# Every file a series adds has a MAINTAINERS entry, and the category's
# files (tests, lib, wrapper) have the PAGE CACHE one (get_maintainer.pl's patterns: a directory covers
# what is below it, "*" any characters).
for s in "${names[@]}"; do
	git diff --name-only --diff-filter=A "base..$s"
done | sort -u > "$work/added"
git show "$first:MAINTAINERS" | python3 -c '
import re, sys
sect, pats = "", []
for line in sys.stdin:
    line = line.rstrip("\n")
    if line and not line[1:2] == ":":
        sect = line
    elif line.startswith("F:\t"):
        p = line[3:]
        rx = re.escape(p).replace(r"\*", ".*").replace(r"\?", ".")
        pats.append((sect, "^" + rx + ("" if p.endswith("/") else "$")))
for f in open(sys.argv[1]).read().split():
    hit = [s for s, rx in pats if re.match(rx, f)]
    ours = re.search(r"/(readahead_|ra_|ksft_readahead)", f)
    if not hit or (ours and "PAGE CACHE" not in hit):
        print(f)
' "$work/added" > "$work/unmaintained"
[ ! -s "$work/unmaintained" ] ||
	fail "files without their MAINTAINERS entry: $(paste -sd ' ' "$work/unmaintained")"

# Each test source, in the last series that touches it, is ours: a
# patched mm test is 7.3's file with selftests-mm/<test>.patch applied.
declare -A last
for s in "${names[@]}"; do
	while read -r t; do last[$t]=$s; done < <(series_tests "$s")
done
for t in "${!last[@]}"; do
	ours=$top/selftests-mm/$t.c
	if [ -f "$top/selftests-mm/$t.patch" ]; then
		ours=$work/$t.c
		git show "base:$mmdir/$t.c" > "$work/$t.c.orig"
		patch -s -o "$ours" "$work/$t.c.orig" "$top/selftests-mm/$t.patch" ||
			fail "selftests-mm/$t.patch does not apply to $mmdir/$t.c"
	fi
	git show "${last[$t]}:$mmdir/$t.c" | cmp -s - "$ours" ||
		fail "$t.c in series ${last[$t]} differs from ${ours#"$top"/}"
done

# The verdicts each series is planned by.
"$top/scripts/series_plan.py" verdicts > "$work/verdicts.log" ||
	fail "verdicts: $(paste -sd ';' "$work/verdicts.log")"

# The mm selftests of each series with the kernel's W=1 warnings
# (scripts/Makefile.warn: W=1 on top of what every build has) for every
# file; none may be in ours. The first series builds all of mm; a fix
# series rebuilds what it changes.
w1="-Wextra -Wundef -Wmissing-declarations -Wmissing-prototypes -Wunused"
w1="$w1 -Wmissing-format-attribute -Wmissing-include-dirs"
w1="$w1 -Wunused-const-variable -Wno-unused-parameter -Wno-sign-compare"
w1="$w1 -Wno-missing-field-initializers"
if [ "$build" = 1 ] && [ "$bad" = 0 ]; then
	git checkout -q -f "$first"
	nice -n 10 make -s -C "$tree" headers > "$work/headers.log" 2>&1 ||
		infra "make headers in $tree failed (see $work/headers.log)"
	for s in "${names[@]}"; do
		git checkout -q -f "$s"
		if ! nice -n 10 make -j3 -C "$tree/tools/testing/selftests" TARGETS=mm \
			W=1 USERCFLAGS="$w1" > "$work/w1-$s.log" 2>&1; then
			grep -E 'error|Error' "$work/w1-$s.log" | head -5 >&2
			infra "building the mm selftests of $s failed (see $work/w1-$s.log)"
		fi
		if grep -E '(^|/)(readahead_[a-z_0-9]*|ra_[a-z]+|prctl_thp_disable)\.[ch]:[0-9]+:[0-9]+: (warning|error)' \
			"$work/w1-$s.log"; then
			fail "W=1 warnings in our files of $s (above)"
		fi
		while read -r t; do
			[ -x "$tree/$mmdir/$t" ] || fail "$t was not built in $s"
		done < <(series_tests "$s")
	done
fi

if [ "$bad" = 0 ]; then
	echo "series: ${#names[@]} series ($summary patches, a cover letter where more than one) in $out; checkpatch --strict clean, git am on pristine $series (a fix series after the first, and stacked in order)$([ "$build" = 1 ] && echo ", W=1 build without warnings in our files"), verdicts as planned, no internal names: pass"
else
	echo "series: fail${keep:+ (kept in $keep)}"
fi
exit "$bad"
