#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of run-validation.sh, run by vm/run-vm.sh as its --runner
# with ra-repro in the same directory: sets up loop filesystems on an
# image in /tmp (tmpfs), runs the ra-repro scenarios named by $RA_CASES
# (comma-separated, default: all) and prints one "RA-RESULT" line each,
# between "RA-BEGIN" and "RA-END". Exits 1 if a setup step failed.

repro=$(dirname "$0")/ra-repro
cases=${RA_CASES:-all}
status=0

say() { echo "RA-RESULT $*"; }

error() {
	say "error $*"
	status=1
}

want() {
	[ "$cases" = all ] && return 0
	case ",$cases," in *,"$1",*) return 0 ;; esac
	return 1
}

fs_down() {
	if grep -q ' /mnt/fs ' /proc/mounts; then
		umount /mnt/fs
		losetup -d /dev/loop0
	fi
	rm -f /tmp/img
}

# fs_up TYPE READ_AHEAD_KB IMAGE_MIB [mkfs options]
fs_up() {
	fs_type=$1
	fs_ra=$2
	fs_mib=$3
	shift 3
	fs_down
	truncate -s "${fs_mib}M" /tmp/img
	case $fs_type in
	ext4) mkfs.ext4 -q -F "$@" /tmp/img ;;
	xfs) mkfs.xfs -q -f "$@" /tmp/img ;;
	esac || { error "mkfs $fs_type $*"; return 1; }
	losetup /dev/loop0 /tmp/img || { error losetup; return 1; }
	mkdir -p /mnt/fs
	mount -t "$fs_type" /dev/loop0 /mnt/fs || { error "mount $fs_type"; return 1; }
	echo "$fs_ra" >/sys/block/loop0/queue/read_ahead_kb
	export RA_DEV=loop0
	FS="$fs_type $* ra=${fs_ra}k"
}

set_ra() {
	echo "$1" >/sys/block/loop0/queue/read_ahead_kb
	FS="${FS% ra=*} ra=${1}k"
}

# run NAME RA-REPRO-ARGS...: one scenario, with its wall time
run() {
	run_name=$1
	shift
	read -r run_t0 _ </proc/uptime
	run_out=$("$repro" "$@" 2>&1)
	read -r run_t1 _ </proc/uptime
	say "$run_name [$FS] $run_out secs=$(echo "$run_t0 $run_t1" | awk '{printf "%.1f", $2 - $1}')"
}

echo "RA-BEGIN $(uname -r) $(cat /proc/cmdline)"
dmesg | grep 'readahead_emulate' | sed 's/^/RA-DMESG /'
echo madvise >/sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null

# ext4, 4 KiB blocks, read_ahead_kb 128: sticky miss, exec, VMA layouts
if want sticky || want exec || want frames || want pieces; then
	fs_up ext4 128 512 && "$repro" mkfile /mnt/fs/f 384
	if want sticky; then
		run sticky-ext4-r50 sticky /mnt/fs/f -r 50
		run sticky-ext4-r300 sticky /mnt/fs/f -r 300
	fi
	if want exec; then
		run sticky-ext4-exec-r300 sticky /mnt/fs/f -r 300 -x
	fi
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
	fs_up xfs 512 512 -b size=16k && "$repro" mkfile /mnt/fs/f 384
	run sticky-xfs16k-r300 sticky /mnt/fs/f -r 300
fi

# XFS, 4 KiB blocks (large folios): descending walks
if want descending; then
	fs_up xfs 512 512 && "$repro" mkfile /mnt/fs/f 256 &&
		"$repro" mkfile /mnt/fs/g 64
	run revwalk-xfs-hugepage revwalk /mnt/fs/f -H -m 3000
	run revwalk-xfs-seq revwalk /mnt/fs/g -S -m 3000
	set_ra 128
	run revwalk-xfs-seq-ra128 revwalk /mnt/fs/g -S -m 3000
fi

fs_down
echo "RA-END"
exit "$status"
