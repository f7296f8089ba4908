#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the fio jobs of bench/jobs/plan on the running kernel (the host or a
# QEMU guest, as root) and print one record per fio run.
#
#   bench/run-jobs.sh [--jobs DIR] [--only REGEX]
#
# --only (or BENCH_ONLY in the environment, for a guest) runs only the
# job sections whose names match the extended regular expression.
#
# For each filesystem of the plan: a 4 GiB sparse image on a private
# tmpfs, a loop device over it, mkfs, mount, the files laid out by fio
# (real data, fsynced; on xfs4k also "big", reflinked copies of a piece
# fio wrote), then every section of every job file of that filesystem at
# the plan's read_ahead_kb, one fio run each (fio drops the file's cache
# first, invalidate=1).
#
# stdout: "@@bench-kernel <uname -r>", fio's progress lines, and per run
#   @@bench-run fs=<fs> ra_kb=<n> job=<section> read_ios=<n> read_sectors=<n> wall_ms=<n>
#   <fio's JSON output>
#   @@bench-end
# read_ios and read_sectors (512 bytes) are the loop device's read
# counters from /sys/block/<dev>/stat across the run: exact, where fio's
# own disk statistics are sampled every 250 ms.
# Exit status: 0; 1 when a fio run fails; 2 usage; 3 setup failure
# (tmpfs, loop device, mkfs, mount).

set -euo pipefail

prog=${0##*/}
jobs=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/jobs
only=${BENCH_ONLY:-}

usage() {
	echo "usage: $prog [--jobs DIR] [--only REGEX]" >&2
	exit 2
}

die() {
	echo "$prog: $*" >&2
	exit 3
}

while [ $# -gt 0 ]; do
	case $1 in
	--jobs) [ $# -ge 2 ] || usage; jobs=$2; shift 2 ;;
	--only) [ $# -ge 2 ] || usage; only=$2; shift 2 ;;
	*) usage ;;
	esac
done
[ -f "$jobs/plan" ] || usage
[ "$(id -u)" = 0 ] || die "needs root (loop devices, mount)"
for tool in fio losetup mkfs.ext4 mkfs.xfs xfs_io; do
	command -v "$tool" >/dev/null || die "$tool not found"
done
# fio keeps its job state in System V shared memory.
[ -d /proc/sysvipc ] || die "kernel without System V IPC (CONFIG_SYSVIPC), which fio needs"

work=$(mktemp -d "${TMPDIR:-/tmp}/bench.XXXXXX")
dev=
cur_fs=

teardown() {
	if [ -n "$cur_fs" ]; then
		umount "$work/mnt"
	fi
	if [ -n "$dev" ]; then
		losetup -d "$dev"
		dev=
	fi
	rm -f "$work/img/disk"
	cur_fs=
}

# shellcheck disable=SC2317 # called from the trap
cleanup() {
	local _

	teardown || true
	# The loop device lets go of its file a moment after losetup -d.
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		umount "$work/img" 2>/dev/null && break
		sleep 0.5
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The images live in RAM in the guest (no disk there); a tmpfs of our own
# keeps them out of a small /tmp, and does the same on the host.
mkdir -p "$work/img" "$work/mnt"
mount -t tmpfs -o size=1700m tmpfs "$work/img" || die "cannot mount a tmpfs"

# fio, quiet except for its progress lines; $1 the directory.
layout() {
	fio --minimal --directory="$1" --ioengine=psync --rw=write --bs=1m \
		--end_fsync=1 "${@:2}" >/dev/null || die "fio could not lay out $*"
}

setup() {
	local fs=$1

	truncate -s 4G "$work/img/disk"
	dev=$(losetup --show -f "$work/img/disk") || die "losetup failed"
	case $fs in
	ext4) mkfs.ext4 -q -F "$dev" ;;
	xfs4k) mkfs.xfs -q -f -b size=4k "$dev" ;;
	xfs16k) mkfs.xfs -q -f -b size=16k "$dev" ;;
	xfs64k) mkfs.xfs -q -f -b size=64k "$dev" ;;
	*) die "unknown filesystem '$fs' in the plan" ;;
	esac >/dev/null || die "mkfs for $fs failed"
	mount "$dev" "$work/mnt" || die "cannot mount $fs (kernel support?)"
	cur_fs=$fs

	if [ "$fs" = ext4 ]; then
		layout "$work/mnt" --name=data --filename=data --size=512m
	else
		layout "$work/mnt" --name=data --filename=data --size=256m
	fi
	if [ "$fs" = xfs4k ]; then
		# 16 GiB of real extents in 64 MiB of disk: every page read
		# goes to the device, and the guest keeps only the piece.
		local cmds=() off

		layout "$work/mnt" --name=piece --filename=piece --size=64m
		for ((off = 0; off < 16384; off += 64)); do
			cmds+=(-c "reflink $work/mnt/piece 0 ${off}m 64m")
		done
		xfs_io -f "${cmds[@]}" "$work/mnt/big" >/dev/null ||
			die "xfs_io reflink failed"
		sync
	fi
}

# Read ios and sectors of the loop device.
dev_reads() {
	local stat

	read -r -a stat <"/sys/block/${dev##*/}/stat"
	echo "${stat[0]} ${stat[2]}"
}

# Progress lines: fio ends each status update with \r.
progress() {
	local line

	while IFS= read -r -d $'\r' line || [ -n "$line" ]; do
		line=${line//$'\n'/}
		[ -z "$line" ] || printf '  %s\n' "$line"
	done
}

echo "@@bench-kernel $(uname -r)"
rc=0
while read -r fs ra job _; do
	case $fs in '' | '#'*) continue ;; esac
	[ -f "$jobs/$job" ] || die "job file '$job' of the plan is missing"
	sections=$(sed -n 's/^\[\([^]]*\)\]$/\1/p' "$jobs/$job" | grep -vx global || true)
	if [ -n "$only" ]; then
		sections=$(grep -E -- "$only" <<<"$sections" || true)
	fi
	[ -n "$sections" ] || continue
	if [ "$fs" != "$cur_fs" ]; then
		teardown
		echo "# $fs: mkfs, laying out files"
		setup "$fs"
	fi
	for sec in $sections; do
		echo "$ra" >"/sys/block/${dev##*/}/queue/read_ahead_kb"
		echo "# $sec on $fs, read_ahead_kb $ra"
		read -r ios0 sect0 <<<"$(dev_reads)"
		t0=${EPOCHREALTIME/./}
		BENCH_MNT=$work/mnt fio --section="$sec" --output-format=json \
			--output="$work/out.json" --eta=always --eta-interval=2s \
			"$jobs/$job" | progress || { rc=1; continue; }
		t1=${EPOCHREALTIME/./}
		read -r ios1 sect1 <<<"$(dev_reads)"
		echo "@@bench-run fs=$fs ra_kb=$ra job=$sec read_ios=$((ios1 - ios0))" \
			"read_sectors=$((sect1 - sect0)) wall_ms=$(((t1 - t0) / 1000))"
		cat "$work/out.json"
		echo "@@bench-end"
	done
done <"$jobs/plan"
exit "$rc"
