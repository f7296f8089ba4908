#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the workloads of bench/jobs (fio jobs, and a sqlite3 client) on
# several kernels and write bench/RESULTS.md and bench/chart.png (the
# chart only when fio jobs ran).
#
#   bench/bench.sh [--kernels "host 6.18 7.3 ..."] [--only REGEX]
#                  [--logs DIR] [--results FILE] [--chart FILE]
#
# Each word of --kernels (default "host 6.18 v7.3 v7.3+restart_v2
# v7.3+fixes", the kernels of the committed RESULTS.md) is one of:
#   host            the running kernel, natively
#   <series>        Debian's newest cloud kernel of that series (6.12,
#                   6.18, 7.3, ...), fetched with vm/debian-kernel.sh,
#                   run in QEMU
#   <configuration> a validation kernel named in validation/configurations
#                   (v7.3, v7.3+restart_v2, ...; "7.3+restart_v2" works
#                   too), built or reused by validation/build-kernel.sh,
#                   run in QEMU
#   <path>          a kernel image with loop, ext4 and xfs built in, run
#                   in QEMU (a word with a "/")
# Every name is checked before the first kernel runs.
#
# fio's progress lines and a line per run are printed as the bench goes;
# each kernel's whole output (fio's JSON included) is kept in the logs
# directory (default /var/cache/readahead-selftests/bench/logs).
# --only REGEX runs only the job sections whose names match (BENCH_ONLY
# in the environment is ignored). One bench at a time per logs directory.
# A kernel that did not run, or not completely, gets a line on stderr
# with the last error line of its log. Ctrl-C or SIGTERM stops the whole
# bench and writes nothing but the logs.
#
# Exit status: 0 when every kernel ran; 1 when one did not (its column
# is left out, RESULTS.md says so); 2 usage (unknown kernel, bad --only,
# unwritable --results or --chart); 3 when nothing ran, not root, or
# another bench holds the logs directory; 130/143 on SIGINT/SIGTERM.

set -euo pipefail

prog=${0##*/}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(dirname "$here")
kernels="host 6.18 v7.3 v7.3+restart_v2 v7.3+fixes"
only=
logs=/var/cache/readahead-selftests/bench/logs
results=$here/RESULTS.md
chart=$here/chart.png

usage() {
	sed -n '4,/^$/s/^# \{0,1\}//p' "$0" >&2
	exit 2
}

# Each option sets the variable of its name.
while [ $# -gt 0 ]; do
	case $1 in
	--kernels | --only | --logs | --results | --chart) [ $# -ge 2 ] || usage ;;
	-h | --help) usage ;;
	*) echo "$prog: unknown argument '$1'" >&2; usage ;;
	esac
	declare "${1#--}=$2"
	shift 2
done
[ -n "${kernels// /}" ] || usage
[ "$(id -u)" = 0 ] || { echo "$prog: needs root (loop devices, mount, $logs)" >&2; exit 3; }
# run-jobs.sh would read it on the host; --only is passed on explicitly.
unset BENCH_ONLY
# test -w says yes to root even where writing fails (/proc): try it.
for f in "$results" "$chart"; do
	if [ -d "$f" ] || ! probe=$(mktemp -p "$(dirname "$f")" .bench.XXXXXX 2>/dev/null); then
		echo "$prog: cannot write '$f'" >&2
		exit 2
	fi
	rm -f "$probe"
done
"$here/run-jobs.sh" --list ${only:+--only "$only"} >/dev/null || exit
for tool in fio xfs_io sqlite3 gnuplot python3; do
	command -v "$tool" >/dev/null ||
		{ echo "$prog: $tool not found (make deps)" >&2; exit 3; }
done
mkdir -p "$logs" || { echo "$prog: cannot make the logs directory '$logs'" >&2; exit 3; }
exec 9<"$logs"
flock -n 9 || { echo "$prog: another bench is running (logs $logs)" >&2; exit 3; }

# The terminal gets the progress lines, not the JSON. Like tee it
# outlives a stop, to pass on what the runner says while it cleans up.
show() {
	trap '' INT TERM
	awk '
	/^@@bench-run / { sub(/^@@bench-run /, "  done: "); print; skip = 1; fflush(); next }
	/^@@bench-end/ { skip = 0; next }
	/^@@bench-sqlite / { sub(/^@@bench-sqlite /, "  done: "); print; fflush(); next }
	/^@@bench-kernel / { print "# kernel " $2; fflush(); next }
	!skip { print; fflush() }'
}

# Validation configuration names, when validation/ has them.
configs=
if [ -x "$top/validation/build-kernel.sh" ]; then
	configs=$("$top/validation/build-kernel.sh" --list 2>/dev/null) || configs=
fi

# What kernel name $1 is: host, series, path or the validation
# configuration's name; status 1 when none.
resolve() {
	local name

	if [ "$1" = host ]; then
		echo host
	elif [[ $1 == */* ]]; then
		[ -f "$1" ] && echo path
	elif [[ $1 =~ ^[0-9]+\.[0-9]+$ ]]; then
		echo series
	else
		for name in "$1" "v$1"; do
			if grep -qxF -- "$name" <<<"$configs"; then
				echo "$name"
				return 0
			fi
		done
		return 1
	fi
}

kinds=()
for k in $kernels; do
	kind=$(resolve "$k") || {
		echo "$prog: unknown kernel '$k' (host, a series, a validation" \
			"configuration or an existing image path)" >&2
		exit 2
	}
	kinds+=("$kind")
done

# Run the bench on kernel $1 of kind $2, output on stdout; status as
# run-vm.sh's.
run_one() {
	local k=$1 kernel='' modules='' out
	local -a vm_env=()

	[ -z "$only" ] || vm_env=(--env "BENCH_ONLY=$only")
	case $2 in
	host)
		nice -n 10 "$here/run-jobs.sh" ${only:+--only "$only"}
		return
		;;
	path)
		kernel=$k
		;;
	series)
		out=$("$top/vm/debian-kernel.sh" "$k") || return 3
		kernel=$(sed -n 's/^KERNEL=//p' <<<"$out")
		modules=$(sed -n 's/^MODULES=//p' <<<"$out")
		;;
	*)
		out=$(nice -n 10 "$top/validation/build-kernel.sh" "$2") || return 3
		kernel=$(awk -F '\t' -v n="$2" '$1 == n { print $2 }' <<<"$out")
		;;
	esac
	[ -n "$kernel" ] || { echo "$prog: no kernel image for '$k'" >&2; return 3; }
	nice -n 10 "$top/vm/run-vm.sh" --kernel "$kernel" \
		${modules:+--modules "$modules"} --mem 2G --smp 2 --timeout 1800 \
		--build "$here" --runner "$here/run-jobs.sh" \
		--program fio --program xfs_io --program sqlite3 \
		${vm_env[@]+"${vm_env[@]}"}
}

keep() {
	trap '' INT TERM
	tee -a "$1"
}

# The running kernel's jobs are a process group of their own: a stop
# ends all of it and waits for its cleanup (loop devices, mounts, QEMU).
job=
# shellcheck disable=SC2317 # called from the traps
stop() {
	trap '' INT TERM
	if [ -n "$job" ]; then
		kill -TERM -- "-$job" 2>/dev/null || true
		wait "$job" || true
	fi
	echo "$prog: stopped, no results written (logs in $logs)" >&2
	exit "$1"
}
trap 'stop 130' INT
trap 'stop 143' TERM

# The last "program: message" line of log $1.
last_error() {
	grep -E '^[[:alnum:]_.-]+: .' "$1" | grep -v 'exited with status' | tail -n 1
}

failed=()
logfiles=()
i=0
for k in $kernels; do
	i=$((i + 1))
	log=$logs/$(printf '%02d' $i)-${k//\//_}.log
	how=qemu
	[ "$k" != host ] || how=host
	echo "# ===== $k"
	echo "@@bench-label $k $how" >"$log"
	echo "@@bench-load $(cut -d ' ' -f 1 /proc/loadavg)" >>"$log"
	rc=0
	set -m
	(run_one "$k" "${kinds[i - 1]}" 2>&1 | keep "$log" | show) </dev/null &
	job=$!
	set +m
	wait "$job" || rc=$?
	job=
	echo "@@bench-load $(cut -d ' ' -f 1 /proc/loadavg)" >>"$log"
	if [ "$rc" != 0 ]; then
		failed+=("$prog: not complete on $k (status $rc): $(last_error "$log" || echo 'no error line')")
	fi
	logfiles+=("$log")
done
trap - INT TERM
[ ${#failed[@]} -eq 0 ] || printf '%s\n' "${failed[@]}" >&2

command="make bench KERNELS=\"$kernels\""
[ -z "$only" ] || command="bench/bench.sh --kernels \"$kernels\" --only '$only'"
python3 "$here/report.py" --results "$results" --chart "$chart" \
	--command "$command" "${logfiles[@]}" || exit 3
[ ${#failed[@]} -eq 0 ] || exit 1
