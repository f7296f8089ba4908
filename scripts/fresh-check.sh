#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Prove that "make deps" installs everything the suite and the in-tree
# kselftest install need, on a Debian root that has nothing else.
#
#   scripts/fresh-check.sh [--keep DIR]
#
# Builds a minimal root of the machine's Debian release with mmdebstrap
# (--variant=minbase plus make, from the machine's own mirror and suites:
# vm/debian-apt.sh sources), copies the checkout's files into it (tracked
# and untracked, not ignored: no build/), and runs there, with /dev, /proc
# and /sys of the machine bound in:
#
#   make deps run_tests              what the suite needs, then its
#                                    verdicts against the running
#                                    kernel's column of verdicts/expected.tsv
#   make deps                        the project's whole package list
#   make ARCH=arm64, ARCH=powerpc    the cross builds vm/run-vm.sh boots
#   scripts/intree-test.sh --install-only
#                                    fresh 7.3 tree, make headers, the
#                                    kselftest install of mm
#
# The root's package and source caches start empty. On a failure, one
# line names the step and the first missing command, header or Python
# module found in its log, with the package that provides it on this
# machine, and the log, kept as /var/tmp/ra-fresh-<step>.log. --keep DIR
# builds the root in DIR (new, empty or an earlier --keep DIR) and
# leaves it there.
#
# All of it runs in a mount namespace of its own (mmdebstrap's mounts
# included), and each step in a PID namespace that dies with the script:
# nothing stays mounted or running after it ends, however it ends. A root
# left in /var/tmp by a killed run is removed by the next run. The root
# is bound onto itself, so that its "/" is a mount point, as the tests'
# private mount namespaces need. Needs root. Exit status: 0 when every
# step passes, 1 when one fails, 2 on usage errors, 3 when the root
# cannot be built.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/cli.sh
. "$top/scripts/cli.sh"
keep=

usage() {
	sed -n '/^#   scripts\/fresh-check.sh/p' "$0" | sed 's/^# *//' >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--keep) [ $# -ge 2 ] || usage; keep=$2; shift 2 ;;
	*) usage ;;
	esac
done
[ "$(id -u)" = 0 ] || die "needs root (chroot, mounts, the suite)"
command -v mmdebstrap > /dev/null || die "mmdebstrap not found (make deps)"
if [ -n "$keep" ]; then
	[ ! -e "$keep" ] || [ -d "$keep" ] || { echo "$prog: --keep $keep is not a directory" >&2; exit 2; }
	if [ -d "$keep" ] && [ -n "$(ls -A "$keep")" ] && [ ! -e "$keep/.ra-fresh" ]; then
		echo "$prog: --keep $keep is neither empty nor an earlier --keep directory" >&2
		exit 2
	fi
fi
# Everything below in a private mount namespace: mmdebstrap's mounts of
# the root go with it.
if [ -z "${RA_FRESH_NS:-}" ]; then
	RA_FRESH_NS=1 exec unshare --mount --propagation private "$0" "$@"
fi
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$codename" ] || die "no VERSION_CODENAME in /etc/os-release"
sources=$("$top/vm/debian-apt.sh" sources) || exit 3

# Roots of killed runs: their lock is free, their namespaces are gone.
for d in /var/tmp/ra-fresh.*; do
	[ -d "$d" ] && [ -e "$d/.ra-fresh" ] && flock -n "$d/.ra-fresh" true &&
		rm -rf --one-file-system "$d"
done
work_dir "$keep" ra-fresh
[ -n "$keep" ] || trap 'exit 130' INT TERM HUP
exec 8>> "$work/.ra-fresh"
flock -n 8 || { echo "$prog: $work is in use by another run" >&2; exit 3; }
root=$work/root
rm -rf --one-file-system "$root"

# A log that outlives the work directory, for a failure line to name.
keep_log() {
	local kept

	kept=/var/tmp/ra-fresh-$(basename "$1")
	cp "$1" "$kept" 2> /dev/null && echo "$kept" || echo "$1"
}

start=$(date +%s)
mapfile -t mirrors <<< "$sources"
# The machine's apt settings on how far to trust its mirror's dates (a
# snapshot mirror's Release files are past their Valid-Until), so that
# the root reaches the same mirror as the machine.
aptopts=()
while read -r opt; do
	aptopts+=(--aptopt="$opt")
done < <(apt-config dump | grep -E '^Acquire::Check-(Valid-Until|Date) ' | sort -u)
if ! mmdebstrap --variant=minbase --include=make --skip=cleanup/apt/lists \
	"${aptopts[@]}" "$codename" "$root" "${mirrors[@]}" \
	> "$work/mmdebstrap.log" 2>&1; then
	tail -5 "$work/mmdebstrap.log" >&2
	die "mmdebstrap of $codename failed (log: $(keep_log "$work/mmdebstrap.log"))"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
mkdir -p "$root/src"
git -C "$top" ls-files -z --cached --others --exclude-standard |
	(cd "$top" && xargs -0 cp --parents -t "$root/src" 2> /dev/null) || true
[ -f "$root/src/Makefile" ] || die "copying the checkout into $root/src failed"
echo "$prog: minimal $codename root in $(( $(date +%s) - start )) s: $root"

# The first missing command, header or module a log names, and the
# package of this machine that provides it.
missing() {
	local log=$1 what kind path pkg

	what=$(grep -m1 -oE "[A-Za-z0-9_.+-]+: (command )?not found|^make(\[[0-9]+\])?: [A-Za-z0-9_.+-]+: (No such file or directory|Command not found)|fatal error: [^:]+: No such file or directory|No module named '[^']+'|[A-Za-z0-9_.+-]+ not found \(install" "$log") || return 1
	case $what in
	"fatal error"*)
		kind=header
		what=${what#fatal error: }
		what=${what%%: *}
		path="/usr/include/$what"
		;;
	"No module named"*)
		kind="Python module"
		what=${what#*\'}
		what=${what%\'}
		path="/${what//.//}"
		;;
	make*)
		kind="command"
		what=${what#*: }
		what=${what%%: *}
		path="bin/$what"
		;;
	*)
		kind="command"
		what=${what%%: *}
		what=${what%% not found*}
		path="bin/$what"
		;;
	esac
	pkg=$(dpkg -S "*$path" 2> /dev/null | head -n 1 | cut -d: -f1)
	echo "$kind $what missing${pkg:+ (package $pkg on this machine)}"
}

# One step inside the root; its log is kept next to the root.
step() {
	local name=$1 cmd=$2 log t0 rc why

	log=$work/$(echo "$name" | tr -c 'a-z0-9\n' '-').log
	t0=$(date +%s)
	set +e
	# Its own PID namespace, killed with the script: unshare gets
	# SIGKILL when the script dies, and its child, the namespace's
	# init, when unshare dies.
	setpriv --pdeathsig KILL \
	unshare --mount --propagation private --pid --fork --kill-child /bin/sh -c '
		r=$1; shift
		mount --bind "$r" "$r" &&
		mount --rbind /dev "$r/dev" && mount -t proc proc "$r/proc" &&
		mount --rbind /sys "$r/sys" || exit 3
		exec chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
			HOME=/root LANG=C.UTF-8 TERM=dumb /bin/sh -c "cd /src && $1"' \
		sh "$root" "$cmd" > "$log" 2>&1
	rc=$?
	set -e
	if [ "$rc" = 0 ]; then
		echo "$prog: $name: pass ($(( $(date +%s) - t0 )) s)"
		return 0
	fi
	why=$(missing "$log") || why="exit $rc: $(grep -v '^\s*$' "$log" | tail -n 1)"
	[ -n "$keep" ] || log=$(keep_log "$log")
	echo "FAIL: fresh root, $name: $why (log: $log)"
	exit 1
}

column=$(uname -r | sed -E 's/^([0-9]+\.[0-9]+).*/\1/')
# The README's first command, which installs only what it needs. The
# suite fails some tests by design: the verdicts decide, not make's
# status.
step "make deps run_tests" "make -s deps run_tests > /tmp/suite.tap 2>&1; cat /tmp/suite.tap; scripts/check-verdicts.sh $column /tmp/suite.tap"
step "make deps" "make -s deps"
step "cross builds" "make -s ARCH=arm64 all && make -s ARCH=powerpc all"
step "kselftest install of mm in a 7.3 tree" "scripts/intree-test.sh --install-only"
echo "fresh $codename root: make deps run_tests (column $column), make deps, cross builds, kselftest install of mm in a 7.3 tree: pass ($(( $(date +%s) - start )) s)"
