#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the validation initramfs: sets up loop filesystems on tmpfs,
# runs the ra-repro scenarios named by "ra_cases=" on the kernel command
# line (default: all) and powers off. Result lines start with "RA-RESULT".

/bin/busybox --install -s /bin
export PATH=/bin:/sbin
mkdir -p /proc /sys /dev /tmp /mnt
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs -o size=1600m tmpfs /tmp

cases=all
for arg in $(cat /proc/cmdline); do
	case $arg in
	ra_cases=*) cases=${arg#ra_cases=} ;;
	esac
done

say() { echo "RA-RESULT $*"; }

want() {
	[ "$cases" = all ] && return 0
	case ",$cases," in *,$1,*) return 0 ;; esac
	return 1
}

# fs_up TYPE READ_AHEAD_KB IMAGE_MIB [mkfs options]
fs_up() {
	local type=$1 ra=$2 mib=$3
	shift 3
	fs_down
	truncate -s ${mib}M /tmp/img
	case $type in
	ext4) mkfs.ext4 -q -F "$@" /tmp/img ;;
	xfs) mkfs.xfs -q -f "$@" /tmp/img ;;
	esac || { say "error mkfs $type $*"; return 1; }
	losetup /dev/loop0 /tmp/img || { say "error losetup"; return 1; }
	mkdir -p /mnt/fs
	mount -t $type /dev/loop0 /mnt/fs || { say "error mount $type"; return 1; }
	echo $ra >/sys/block/loop0/queue/read_ahead_kb
	export RA_DEV=loop0
	FS="$type $* ra=${ra}k"
}

fs_down() {
	if grep -q ' /mnt/fs ' /proc/mounts; then
		umount /mnt/fs
		losetup -d /dev/loop0
	fi
	rm -f /tmp/img
}

set_ra() { echo $1 >/sys/block/loop0/queue/read_ahead_kb; FS="${FS% ra=*} ra=${1}k"; }

run() {
	local name=$1 t0 t1 out
	shift
	t0=$(cut -d' ' -f1 /proc/uptime)
	out=$(/ra-repro "$@" 2>&1)
	t1=$(cut -d' ' -f1 /proc/uptime)
	say "$name [$FS] $out secs=$(echo "$t0 $t1" | awk '{printf "%.1f", $2 - $1}')"
}

echo "RA-BEGIN $(uname -r) $(cat /proc/cmdline)"
dmesg | grep 'readahead_emulate' | sed 's/^/RA-DMESG /'
echo madvise >/sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null

# ext4, 4 KiB blocks, read_ahead_kb 128: sticky miss, exec, VMA layouts
if want sticky || want exec || want frames || want pieces; then
	fs_up ext4 128 512 && /ra-repro mkfile /mnt/fs/f 384
	if want sticky; then
		run sticky-ext4-r50 sticky /mnt/fs/f -r 50
		run sticky-ext4-r300 sticky /mnt/fs/f -r 300
	fi
	want exec && run sticky-ext4-exec-r300 sticky /mnt/fs/f -r 300 -x
	if want frames; then
		run frames-ext4 frames /mnt/fs/f -n 20
		run split-ext4 split /mnt/fs/f -v 4
	fi
	if want pieces; then
		set_ra 512
		run pieces-ext4-ra512 pieces /mnt/fs/f -o 64 -p 8 -n 8
		run pieces-ext4-ra512-off0 pieces /mnt/fs/f -o 0 -p 8 -n 8
		set_ra 8192
		run pieces-ext4-ra8192 pieces /mnt/fs/f -o 64 -p 8 -n 16
		run pieces-ext4-ra8192-off0 pieces /mnt/fs/f -o 0 -p 8 -n 16
	fi
fi

# XFS, 16 KiB blocks (min folio order 2), read_ahead_kb 512: sticky miss
if want sticky16k; then
	fs_up xfs 512 512 -b size=16k && /ra-repro mkfile /mnt/fs/f 384
	run sticky-xfs16k-r300 sticky /mnt/fs/f -r 300
fi

# XFS, 4 KiB blocks (large folios): descending walks
if want descending; then
	fs_up xfs 512 512 && /ra-repro mkfile /mnt/fs/f 256 &&
		/ra-repro mkfile /mnt/fs/g 64
	run revwalk-xfs-hugepage revwalk /mnt/fs/f -H -m 3000
	run revwalk-xfs-seq revwalk /mnt/fs/g -S -m 3000
	set_ra 128
	run revwalk-xfs-seq-ra128 revwalk /mnt/fs/g -S -m 3000
fi

fs_down
echo "RA-END"
# -no-reboot makes QEMU exit on reboot (no ACPI power-off in this kernel)
reboot -f

