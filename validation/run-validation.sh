#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot the validation kernel under QEMU (TCG) once per readahead_emulate=
# set and run the ra-repro scenarios in it.
#
# Usage: run-validation.sh [-k bzImage] [-c ra_cases] [-o results] SET...
#   SET is a readahead_emulate= value, or "none" for the plain kernel.
#   ra_cases: comma-separated list of sticky, exec, frames, pieces,
#   sticky16k, descending (default: all).
#
# The initramfs (busybox, mkfs.ext4, mkfs.xfs, losetup, a static ra-repro)
# is built under a temporary directory. RESULT lines are printed and
# appended to the results file (default validation/results.txt).

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${RA_KERNEL_CACHE:-/var/cache/readahead-selftests/kernel}
kernel=$cache/obj/arch/x86/boot/bzImage
cases=all
results=$here/results.txt
timeout=${RA_VM_TIMEOUT:-900}

while getopts k:c:o: opt; do
	case $opt in
	k) kernel=$OPTARG ;;
	c) cases=$OPTARG ;;
	o) results=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || set -- none
[ -f "$kernel" ] || { echo "no kernel $kernel" >&2; exit 2; }

work=$(mktemp -d /tmp/ra-validation.XXXXXX)
trap 'rm -rf "$work"' EXIT

# initramfs
root=$work/root
mkdir -p "$root"/{bin,sbin,lib,lib64,etc,proc,sys,dev,tmp,mnt}
cp /bin/busybox "$root/bin/busybox"
gcc -static -O2 -Wall -o "$root/ra-repro" "$here/repro/ra-repro.c"
for tool in mkfs.ext4 mkfs.xfs losetup; do
	src=$(command -v $tool)
	cp "$src" "$root/sbin/"
	ldd "$src" | awk '/=> \//{print $3} /^\t\/lib64/{print $1}' |
	while read -r lib; do
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
done
cp /lib64/ld-linux-x86-64.so.2 "$root/lib64/" 2>/dev/null || true
cp "$here/repro/guest-init.sh" "$root/init"
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initrd.gz"

for set in "$@"; do
	emu=$set
	[ "$set" = none ] && emu=
	log=$work/console-$set.log
	start=$(date +%s)
	timeout "$timeout" qemu-system-x86_64 -accel tcg -cpu max -m 2G \
		-nographic -no-reboot -nic none -kernel "$kernel" \
		-initrd "$work/initrd.gz" \
		-append "console=ttyS0 quiet readahead_emulate=$emu ra_cases=$cases" \
		</dev/null >"$log" 2>&1 || true
	secs=$(($(date +%s) - start))
	if ! grep -q '^RA-END' "$log"; then
		echo "boot with readahead_emulate=$emu failed after ${secs}s; log:" >&2
		tail -30 "$log" >&2
		cp "$log" "/tmp/ra-validation-failed-$set.log"
		continue
	fi
	{
		echo "## readahead_emulate=${emu:-(none)} ($(grep -o -m1 'RA-BEGIN [^ ]*' "$log" | cut -d' ' -f2), ${secs}s)"
		grep -E '^RA-(DMESG|RESULT)' "$log" | tr -d '\r'
	} | tee -a "$results"
done
