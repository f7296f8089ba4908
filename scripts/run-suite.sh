#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Run every readahead selftest in this script's directory through the
# kselftest runner and print its TAP: the readahead_* binaries, and of
# mm's tests with this project's cases (selftests-mm/*.patch) those
# cases only. Arguments, or RA_ONLY="readahead_x ...", name the binaries
# to run instead. Exits 1 when a test failed; 129, 130, 143 on SIGHUP,
# SIGINT, SIGTERM.
BASE_DIR=$(cd "$(dirname "$0")" && pwd -P)
export BASE_DIR
# In a mount namespace of its own, with a tmpfs on /tmp, what the run
# mounts and writes there (prctl_thp_disable's loop XFS below) goes with
# its last process, even one killed by SIGKILL. Not so without the right
# to make one (not root) or a tmpfs, or where the tests lie under /tmp.
# unshare(1) execs this script again in the same process, RA_SUITE_NS=$$
# marking it: the namespace is its own if it is not its parent's.
if [ "${RA_SUITE_NS:-}" = $$ ]; then
	parent=$(readlink "/proc/$PPID/ns/mnt")
	case $(readlink /proc/self/ns/mnt):$BASE_DIR/ in
	"$parent":* | *:/tmp/*) ;;
	*)	[ -z "$parent" ] ||
		! mount -t tmpfs -o mode=1777 ra-suite /tmp 2>/dev/null ||
		TMPDIR=/tmp ;;
	esac
elif unshare -m --propagation private true 2>/dev/null; then
	RA_SUITE_NS=$$ exec unshare -m --propagation private sh "$0" "$@"
fi
unset RA_SUITE_NS
[ $# -eq 0 ] || RA_ONLY=$*
cd "$BASE_DIR" || exit 1
# shellcheck disable=SC1091 # the build copies it here
. "$BASE_DIR/kselftest/runner.sh"
# run_many() looks for "settings" in a subdirectory of BASE_DIR only: pass
# its per-binary timeout on explicitly.
if [ -z "${kselftest_override_timeout:-}" ] && [ -r settings ]; then
	kselftest_override_timeout=$(sed -n 's/^timeout=//p' settings)
	export kselftest_override_timeout
fi

# The processes below process $1, each listed before its parent.
below() {
	# shellcheck disable=SC3043 # dash and busybox sh have local
	local c

	for c in $(pgrep -P "$1"); do
		below "$c"
		echo "$c"
	done
}
# sh runs a trap only once its foreground job has ended: the tests run in
# the background, and a signal to this script ends them at once, every
# process below it listed first, then each sent SIGTERM (the runner's
# timeout(1) puts each test in a process group of its own). dash runs no
# EXIT trap on a signal. A SIGKILL leaves the running test to the end of
# its timeout.
stop() {
	trap '' HUP INT TERM
	# shellcheck disable=SC2046 # a list of pids
	kill -TERM $(below $$) 2>/dev/null
	wait
	clean
	exit "$1"
}
# prctl_thp_disable: its prctl_thp_disable_file fixture (the runner's
# per-test arguments). Its cases make their file in the directory they
# run from, the kselftest runner's directory of the test: it runs last,
# from a loop XFS that holds a link to it (in QEMU this directory is on
# tmpfs, where the cases skip), or from here when none can be made. The
# XFS is there only meanwhile: its log takes 64 MiB (of memory, on tmpfs).
KSELFTEST_PRCTL_THP_DISABLE_ARGS="-f prctl_thp_disable_file"
export KSELFTEST_PRCTL_THP_DISABLE_ARGS
xfs=
xfs_run() {
	# Their messages would land in the TAP: a comment line says enough
	if [ -n "$xfs" ] && truncate -s 300M "$xfs.img" 2> /dev/null &&
	   mkfs.xfs -q "$xfs.img" 2> /dev/null &&
	   mount -o loop "$xfs.img" "$xfs" 2> /dev/null &&
	   ln -s "$BASE_DIR/prctl_thp_disable" "$xfs/" 2> /dev/null; then
		run_many "$xfs/prctl_thp_disable"
	else
		echo "# prctl_thp_disable: no loop XFS could be made, its cases run in $PWD"
		run_many ./prctl_thp_disable
	fi
	xfs_clean
}
xfs_clean() {
	[ -n "$xfs" ] || return 0
	umount "$xfs" 2>/dev/null || umount -l "$xfs" 2>/dev/null
	rm -f "$xfs.img"
}
clean() {
	xfs_clean
	[ -z "$xfs" ] || [ ! -d "$xfs" ] || rmdir "$xfs"
}
trap clean EXIT
trap 'stop 129' HUP
trap 'stop 130' INT
trap 'stop 143' TERM
if [ -n "${RA_ONLY:-}" ]; then
	set -f --
	for t in $RA_ONLY; do
		set -- "$@" "./${t##*/}"
	done
	set +f
else
	set -- ./readahead_*
	[ ! -x ./prctl_thp_disable ] || set -- "$@" ./prctl_thp_disable
fi
prctl=0
for t; do
	shift
	if [ "$t" = ./prctl_thp_disable ]; then
		prctl=1
	else
		set -- "$@" "$t"
	fi
done
# Its directory, made here for clean() to find, by root only (a mount)
if [ "$prctl" = 1 ] && [ "$(id -u)" = 0 ]; then
	xfs=$(mktemp -d "${TMPDIR:-/tmp}/prctl_thp_disable.XXXXXX") || xfs=
fi
# The TAP, line by line as it comes; the exit status from its "not ok"s
{
	[ $# -eq 0 ] || run_many "$@"
	[ "$prctl" = 0 ] || xfs_run
} | {
	failed=0
	while IFS= read -r line || [ -n "$line" ]; do
		printf '%s\n' "$line"
		case $line in "not ok"*) failed=1 ;; esac
	done
	exit $failed
} &
wait $!
