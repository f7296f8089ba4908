#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the jobs of bench/jobs/plan on the running kernel (the host or a
# QEMU guest, as root) and print one record per fio run and per phase of
# a sqlite3 run.
#
#   bench/run-jobs.sh [--jobs DIR] [--only REGEX] [--list]
#
# --only (or BENCH_ONLY in the environment, for a guest) runs only the
# job sections whose names match the extended regular expression (a
# .sql job file is one section, its name without .sql); a bad regex, or
# one that matches no section of the plan, is a usage error found before
# any setup. --list prints the runs ("<fs> <ra_kb> <section>", one a
# line) and exits without running them.
#
# For each filesystem of the plan: a 4 GiB sparse image on a private
# tmpfs, a loop device over it, mkfs, mount, the files laid out by fio
# (real data, fsynced; on xfs4k also "big", reflinked copies of a piece
# fio wrote; only when the plan runs fio jobs there), then every section
# of every job file of that filesystem at the plan's read_ahead_kb, one
# fio run each, after every file of the filesystem was dropped from the
# page cache (POSIX_FADV_DONTNEED through xfs_io, checked with mincore: a
# run that would start with cached pages is not run).
#
# A job file <name>.sql is a sqlite3 script: before its first run on a
# filesystem, <name>-db.sql makes the database <name>.db there; then, from
# a cold page cache, one "sqlite3 -readonly -bail" process reads the
# script on its stdin. The script marks its phases with ".shell
# $BENCH_SAMPLE <phase>" (the first one "start"), which samples sqlite3's
# major faults (/proc/<pid>/stat) and the loop device's read counters, and
# prints a "result <phase> <rows> ..." line per phase.
#
# stdout: "@@bench-kernel <uname -r>", fio's progress lines, and per run
#   @@bench-run fs=<fs> ra_kb=<n> job=<section> read_ios=<n> read_sectors=<n> wall_ms=<n>
#   <fio's JSON output>
#   @@bench-end
# and per phase of a sqlite3 run, one line
#   @@bench-sqlite fs=<fs> ra_kb=<n> job=<section> phase=<phase> rows=<n> majflt=<n> read_ios=<n> read_sectors=<n> wall_ms=<n> db_bytes=<n> sqlite=<version>
# read_ios and read_sectors (512 bytes) are the loop device's read
# counters from /sys/block/<dev>/stat across the run or phase: exact,
# where fio's own disk statistics are sampled every 250 ms. A phase's
# wall_ms has the resolution of /proc/uptime (10 ms).
# Exit status: 0; 1 when a fio or sqlite3 run fails; 2 usage; 3 setup
# failure (tmpfs, loop device, mkfs, mount, database).
#
# Everything lives under one ${TMPDIR:-/tmp}/bench.XXXXXX, removed on exit;
# when its tmpfs will not unmount, it is left and named on stderr. A run
# killed with SIGKILL leaves it (tmpfs, loop device, mount) for the
# administrator: another run may still be using its own.

set -euo pipefail

prog=${0##*/}
jobs=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/jobs
only=${BENCH_ONLY:-}
list=0

usage() {
	echo "usage: $prog [--jobs DIR] [--only REGEX] [--list]" >&2
	exit 2
}

die() {
	echo "$prog: $*" >&2
	exit 3
}

# --jobs and --only set the variable of their name.
while [ $# -gt 0 ]; do
	[ "$1" != --list ] || { list=1; shift; continue; }
	case $1 in --jobs | --only) [ $# -ge 2 ] || usage ;; *) usage ;; esac
	declare "${1#--}=$2"
	shift 2
done
[ -f "$jobs/plan" ] || { echo "$prog: no plan in '$jobs' (--jobs DIR)" >&2; exit 2; }

# The sections of job file $1 that --only selects, one a line.
sections_of() {
	local sections

	case $1 in
	*.sql) sections=$(basename "$1" .sql) ;;
	*) sections=$(sed -n 's/^\[\([^]]*\)\]$/\1/p' "$1" | grep -vx global || true) ;;
	esac
	[ -z "$only" ] || sections=$(grep -E -- "$only" <<<"$sections" || true)
	[ -z "$sections" ] || echo "$sections"
}

# The plan's runs: "<fs> <ra_kb> <job file> <section>", one a line.
plan_runs() {
	local fs ra job sec

	while read -r fs ra job _; do
		case $fs in '' | '#'*) continue ;; esac
		[ -f "$jobs/$job" ] || die "job file '$job' of the plan is missing"
		case $job in
		*.sql) [ -f "$jobs/${job%.sql}-db.sql" ] ||
			die "job file '$job' of the plan has no ${job%.sql}-db.sql" ;;
		esac
		for sec in $(sections_of "$jobs/$job"); do
			echo "$fs $ra $job $sec"
		done
	done <"$jobs/plan"
}

if [ -n "$only" ]; then
	err=0
	msg=$(grep -E -- "$only" 2>&1 </dev/null) || err=$?
	if [ "$err" = 2 ]; then
		echo "$prog: bad --only regex '$only': ${msg#grep: }" >&2
		exit 2
	fi
fi
runs=$(plan_runs)
[ -n "$runs" ] || { echo "$prog: --only '$only' matches no job section of the plan" >&2; exit 2; }
if [ "$list" = 1 ]; then
	awk '{ print $1, $2, $4 }' <<<"$runs"
	exit 0
fi
[ "$(id -u)" = 0 ] || die "needs root (loop devices, mount)"
for tool in fio losetup mkfs.ext4 mkfs.xfs xfs_io; do
	command -v "$tool" >/dev/null || die "$tool not found"
done
if awk '$3 ~ /\.sql$/ { found = 1 } END { exit !found }' <<<"$runs"; then
	command -v sqlite3 >/dev/null || die "sqlite3 not found"
fi
# fio keeps its job state in System V shared memory.
[ -d /proc/sysvipc ] || die "kernel without System V IPC (CONFIG_SYSVIPC), which fio needs"

work=$(mktemp -d "${TMPDIR:-/tmp}/bench.XXXXXX") || die "cannot make a directory in ${TMPDIR:-/tmp}"
dev=
cur_fs=
img_mounted=0

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
		[ "$img_mounted" = 1 ] || break
		umount "$work/img" 2>/dev/null && img_mounted=0
		[ "$img_mounted" = 1 ] || break
		sleep 0.5
	done
	if [ "$img_mounted" = 1 ]; then
		echo "$prog: cannot unmount $work/img, left $work" >&2
		return
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The images live in RAM in the guest (no disk there); a tmpfs of our own
# keeps them out of a small /tmp, and does the same on the host.
mkdir -p "$work/img" "$work/mnt"
mount -t tmpfs -o size=1700m tmpfs "$work/img" || die "cannot mount a tmpfs"
img_mounted=1

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

	# The fio jobs' files, when the plan runs fio jobs here.
	awk -v fs="$fs" '$1 == fs && $3 ~ /\.fio$/ { found = 1 } END { exit !found }' \
		<<<"$runs" || return 0
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

# Drop every file of the filesystem from the page cache and print how
# many of their pages are still resident (0 expected). fio's invalidate=1
# drops only the range a job reads: a job with offset= would otherwise
# start among pages an earlier job left cached outside its range, which
# break its readahead (ext4 in-order read after mixed-5: 39 major faults
# instead of 1).
drop_files() {
	local f size left=0 n

	for f in "$work"/mnt/*; do
		[ -f "$f" ] || continue
		size=$(stat -c %s "$f")
		[ "$size" -gt 0 ] || continue
		n=$(xfs_io -r -c "fadvise -d 0 $size" -c "mmap -r 0 $size" \
			-c mincore "$f" | awk '{ n += $4 } END { print n + 0 }')
		left=$((left + n))
	done
	echo "$left"
}

# Progress lines: fio ends each status update with \r.
progress() {
	local line

	while IFS= read -r -d $'\r' line || [ -n "$line" ]; do
		line=${line//$'\n'/}
		[ -z "$line" ] || printf '  %s\n' "$line"
	done
}

# Make the database of sqlite job file $1 in the filesystem unless it is
# there, from <name>-db.sql.
make_db() {
	local db=$work/mnt/${1%.sql}.db t0

	[ ! -f "$db" ] || return 0
	echo "# ${db##*/}: made by ${1%.sql}-db.sql"
	t0=${EPOCHREALTIME/./}
	sqlite3 -batch -bail "$db" <"$jobs/${1%.sql}-db.sql" >/dev/null ||
		die "sqlite3 could not make ${db##*/} from ${1%.sql}-db.sql"
	sync
	echo "# ${db##*/}: $(stat -c %s "$db") bytes in $(((${EPOCHREALTIME/./} - t0) / 1000)) ms"
}

# Run sqlite job file $3 (section $4) on filesystem $1 at read_ahead_kb
# $2: one sqlite3 process, one @@bench-sqlite line per phase.
run_sql() {
	local fs=$1 ra=$2 job=$3 sec=$4 db out=$work/sql.out version bytes

	db=$work/mnt/${job%.sql}.db
	bytes=$(stat -c %s "$db")
	version=$(sqlite3 -version | cut -d ' ' -f 1)
	# $1 the phase; fields 4 and 6 of the device's stat are read ios
	# and read sectors (after major faults and uptime).
	cat >"$work/sample" <<-'EOF'
	#!/bin/sh
	set -- "$1" $(cut -d ' ' -f 12 "/proc/$BENCH_PID/stat") \
		$(cut -d ' ' -f 1 /proc/uptime) $(cat "/sys/block/$BENCH_DEV/stat")
	echo "@@sample $1 majflt=$2 uptime=$3 read_ios=$4 read_sectors=$6"
	EOF
	chmod +x "$work/sample"
	# The subshell's pid is sqlite3's after exec.
	if ! (
		export BENCH_PID=$BASHPID BENCH_SAMPLE=$work/sample BENCH_DEV=${dev##*/}
		exec sqlite3 -readonly -batch -bail "$db"
	) <"$jobs/$job" >"$out" 2>&1; then
		echo "$prog: sqlite3 failed on $job: $(grep -v '^@@sample' "$out" | tail -n 1)" >&2
		return 1
	fi
	# Each phase from the sample before it to its own; the mapping must
	# cover the file (PRAGMA mmap_size prints what SQLite grants).
	awk -v fs="$fs" -v ra="$ra" -v job="$sec" -v bytes="$bytes" -v version="$version" '
	NR == 1 && /^[0-9]+$/ { mmap = $1 }
	$1 == "@@sample" {
		for (i = 3; i <= NF; i++) {
			split($i, kv, "=")
			v[$2, kv[1]] = kv[2]
		}
		if ($2 != "start")
			phases[++n] = $2
		next
	}
	$1 == "result" { rows[$2] = $3 }
	END {
		if (mmap < bytes) {
			printf "mmap_size %d is below the database size %d\n", mmap, bytes > "/dev/stderr"
			exit 1
		}
		if (!(("start", "majflt") in v) || !n) {
			print "no phase samples in the output" > "/dev/stderr"
			exit 1
		}
		prev = "start"
		for (i = 1; i <= n; i++) {
			p = phases[i]
			if (!(p in rows)) {
				print "no result line for phase " p > "/dev/stderr"
				exit 1
			}
			printf "@@bench-sqlite fs=%s ra_kb=%s job=%s phase=%s rows=%s", fs, ra, job, p, rows[p]
			printf " majflt=%d read_ios=%d read_sectors=%d wall_ms=%d", \
				v[p, "majflt"] - v[prev, "majflt"], \
				v[p, "read_ios"] - v[prev, "read_ios"], \
				v[p, "read_sectors"] - v[prev, "read_sectors"], \
				(v[p, "uptime"] - v[prev, "uptime"]) * 1000 + 0.5
			printf " db_bytes=%s sqlite=%s\n", bytes, version
			prev = p
		}
	}' "$out" || { echo "$prog: cannot read the phases of $job (output in the log above)" >&2; sed 's/^/  /' "$out"; return 1; }
}

echo "@@bench-kernel $(uname -r)"
rc=0
while read -r fs ra job sec; do
	if [ "$fs" != "$cur_fs" ]; then
		teardown
		echo "# $fs: mkfs, laying out files"
		setup "$fs"
	fi
	echo "$ra" >"/sys/block/${dev##*/}/queue/read_ahead_kb"
	echo "# $sec on $fs, read_ahead_kb $ra"
	case $job in *.sql) make_db "$job" ;; esac
	left=$(drop_files)
	if [ "$left" != 0 ]; then
		echo "$prog: $left pages of $fs stay cached after POSIX_FADV_DONTNEED, $sec not run" >&2
		rc=1
		continue
	fi
	case $job in
	*.sql)
		run_sql "$fs" "$ra" "$job" "$sec" || rc=1
		continue
		;;
	esac
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
done <<<"$runs"
exit "$rc"
