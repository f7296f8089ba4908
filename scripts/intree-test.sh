#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The tests as a kernel tree's CI runs them: a fresh linux-source-7.3
# tree, install-in-tree, the kselftest build and install of mm (what
# KernelCI packs for its test machines), then in QEMU on a 7.3 kernel
# "run_kselftest.sh -t mm:ksft_readahead.sh" from that install, and the
# cases of mm's prctl_thp_disable (selftests-mm/*.patch; run_vmtests.sh
# runs them in the thp category, which is far longer). Checks
# that the tree builds our files without a warning, that the TAP has a
# line for every test of the verdict table, and that the verdicts match
# the table's column for the guest kernel's series.
#
#   scripts/intree-test.sh [--host | --install-only] [--keep DIR]
#                          [--kernel K --modules M]
#
#   --host        run the install on the running kernel instead of QEMU
#   --install-only
#                 stop after the kselftest install and its checks
#   --keep DIR    work in DIR and keep it (tree, install, TAP)
#   --kernel, --modules
#                 guest kernel (default: Debian's 7.3 from
#                 vm/debian-kernel.sh 7.3)
#
# RA_SOURCE overrides the linux-source tarball (default: vm/debian-apt.sh
# source 7.3). Prints the TAP lines of the readahead tests and one result
# line. Exit status: 0 when everything matches, 1 when a check fails, 2 on
# usage errors, 3 when a download, the tree's build or the guest fails for
# reasons of its own (one line naming the step).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/cli.sh
. "$top/scripts/cli.sh"
series=7.3
host=0
install_only=0
keep=
kernel=
modules=

usage() {
	sed -n '/^#   scripts\/intree-test.sh/,/^#  *vm\/debian-kernel.sh/s/^# \{0,1\}//p' "$0" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--host) host=1; shift ;;
	--install-only) install_only=1; shift ;;
	--keep) [ $# -ge 2 ] || usage; keep=$2; shift 2 ;;
	--kernel) [ $# -ge 2 ] || usage; kernel=$2; shift 2 ;;
	--modules) [ $# -ge 2 ] || usage; modules=$2; shift 2 ;;
	*) usage ;;
	esac
done

work_dir "$keep" ra-intree
src=${RA_SOURCE:-$("$top/vm/debian-apt.sh" source "$series")} ||
	die "linux-source-$series: download failed"
if [ "$host" = 0 ] && [ "$install_only" = 0 ] && [ -z "$kernel" ]; then
	fetched=$("$top/vm/debian-kernel.sh" "$series") ||
		die "Debian's $series kernel: download failed"
	kernel=$(sed -n 's/^KERNEL=//p' <<< "$fetched")
	modules=$(sed -n 's/^MODULES=//p' <<< "$fetched")
fi

# A fresh tree: what make headers and the selftests need, no drivers.
tree=$work/linux-source-$series
rm -rf "$tree" "$work/install"
tar -xJf "$src" -C "$work" --exclude="linux-source-$series/drivers" \
	--exclude="linux-source-$series/Documentation" ||
	die "extracting $src failed"
"$top/scripts/install-in-tree.sh" "$tree" > /dev/null
nice -n 10 make -s -C "$tree" headers > "$work/headers.log" 2>&1 ||
	die "make headers in $tree failed (see $work/headers.log)"
# The whole of mm, as CI builds it; our files must build without warning.
if ! nice -n 10 make -j3 -C "$tree/tools/testing/selftests" TARGETS=mm \
	INSTALL_PATH="$work/install" install > "$work/build.log" 2>&1; then
	# A missing tool first ("rsync: not found"), then the errors.
	grep -E ': (command )?not found|: No such file or directory' "$work/build.log" |
		head -3 >&2
	grep -E 'error|Error' "$work/build.log" | head -5 >&2
	die "kselftest install of mm failed (see $work/build.log)"
fi
bad=0
if grep -E '(^|/)(readahead_[a-z_0-9]*|ra_[a-z]+|prctl_thp_disable)\.[ch]:[0-9]+:[0-9]+: (warning|error)' "$work/build.log"; then
	echo "FAIL: warnings in our files (above)"
	bad=1
fi
grep -qx 'mm:ksft_readahead.sh' "$work/install/kselftest-list.txt" || {
	echo "FAIL: mm:ksft_readahead.sh is not in kselftest-list.txt"
	bad=1
}
for t in "$top"/selftests-mm/*.c "$top"/selftests-mm/*.patch; do
	t=$(basename "${t%.*}")
	[ -x "$work/install/mm/$t" ] || {
		echo "FAIL: $t is not in the install"
		bad=1
	}
done
if [ "$install_only" = 1 ]; then
	if [ "$bad" = 0 ]; then
		echo "in-tree $series: kselftest install of mm: pass"
	else
		echo "in-tree $series: kselftest install of mm: fail${keep:+ (kept in $keep)}"
	fi
	exit "$bad"
fi

# Run it as KernelCI does: the install directory, one collection:test.
# prctl_thp_disable's cases make their file in the directory they run
# from: a loop XFS, as run-suite.sh runs them (the install is on tmpfs in
# QEMU, where they skip).
cat > "$work/runner.sh" << 'EOF'
#!/bin/sh
cd "$(dirname "$0")" || exit 1
./run_kselftest.sh -t mm:ksft_readahead.sh
rc=$?
t=$(pwd)/mm/prctl_thp_disable
d=$(mktemp -d) || exit 1
truncate -s 300M "$d.img" && mkfs.xfs -q "$d.img" && mount -o loop "$d.img" "$d"
(cd "$d" && "$t" -f prctl_thp_disable_file)
umount "$d"
rm -f "$d.img"
rmdir "$d"
exit $rc
EOF
chmod 755 "$work/runner.sh"
set +e
if [ "$host" = 1 ]; then
	column=$(uname -r | sed -E 's/^([0-9]+\.[0-9]+).*/\1/')
	cp "$work/runner.sh" "$work/install/ra-runner.sh"
	"$work/install/ra-runner.sh" > "$work/tap" 2>&1
	rc=$?
else
	"$top/vm/run-vm.sh" --kernel "$kernel" ${modules:+--modules "$modules"} \
		--build "$work/install" --runner "$work/runner.sh" \
		--timeout 2400 --log "$work/console.log" > "$work/tap"
	rc=$?
	[ "$rc" = 3 ] && die "the guest failed (console log: $work/console.log)"
	column=$(sed -n -E 's/^# guest kernel: ([0-9]+\.[0-9]+).*/\1/p' "$work/tap")
fi
set -e
[ "$column" = "$series" ] ||
	echo "$prog: note: kernel series $column, not $series: its column is checked"

# The TAP lines of the wrapper, of each test binary and of each test.
grep -E '^(# )*(not )?ok [0-9]+ (selftests: mm: ksft_readahead|readahead_|[a-z_0-9]+\.[a-z_0-9]+(\.[a-z_0-9]+)?( |$))' "$work/tap" || true
if ! grep -Eq '^(not )?ok [0-9]+ selftests: mm: ksft_readahead.sh' "$work/tap"; then
	echo "FAIL: no TAP line for selftests: mm: ksft_readahead.sh (exit $rc)"
	bad=1
fi
for t in "$top"/selftests-mm/*.c; do
	t=$(basename "$t" .c)
	grep -Eq "^# (not )?ok [0-9]+ $t( |\$)" "$work/tap" || {
		echo "FAIL: no TAP line for $t"
		bad=1
	}
done
"$top/scripts/check-verdicts.sh" "$column" "$work/tap" || bad=1
if [ "$bad" = 0 ]; then
	echo "in-tree $series: kselftest install, run_kselftest.sh -t mm:ksft_readahead.sh on $(sed -n 's/^# guest kernel: //p' "$work/tap" | grep . || uname -r): pass"
else
	echo "in-tree $series: fail${keep:+ (kept in $keep)}"
fi
exit "$bad"
