#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of validation/debug-check.sh, its vm/run-vm.sh --runner:
# stress-ng's file-backed mmap, readahead and madvise stressors, with
# --verify, on an ext4 and an XFS filesystem of a loop device.
#
# RA_STRESS_SECS: seconds per filesystem (default 60). Prints stress-ng's
# output and "stress-ng <fs>: exit <status>" per filesystem. Exit status:
# 0 when stress-ng exited 0 on both; 1 otherwise.
set -u
secs=${RA_STRESS_SECS:-60}
rc=0
for fs in ext4 xfs; do
	img=/tmp/$fs.img
	mnt=/mnt/$fs
	truncate -s 512M "$img"
	dev=$(losetup -f --show "$img") || { echo "stress-ng $fs: no loop device"; rc=1; continue; }
	case $fs in
	ext4) mkfs.ext4 -q -F "$dev" ;;
	xfs) mkfs.xfs -q -f "$dev" ;;
	esac
	mkdir -p "$mnt"
	if mount -t "$fs" "$dev" "$mnt"; then
		r=0
		stress-ng --mmap 2 --mmap-file --mmap-bytes 8M \
			--readahead 2 --readahead-bytes 64M --madvise 2 \
			--temp-path "$mnt" --verify --timeout "${secs}s" \
			--metrics-brief || r=$?
		umount "$mnt"
	else
		r=mount
	fi
	echo "stress-ng $fs: exit $r"
	[ "$r" = 0 ] || rc=1
	losetup -d "$dev"
	rm -f "$img"
done
exit $rc
