#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the fio workloads of bench/jobs on several kernels and write
# bench/RESULTS.md and bench/chart.png.
#
#   bench/bench.sh [--kernels "host 6.18 7.3 ..."] [--only REGEX]
#                  [--logs DIR] [--results FILE] [--chart FILE]
#
# Each word of --kernels (default "host 6.18 7.3") is one of:
#   host            the running kernel, natively
#   <series>        Debian's newest cloud kernel of that series (6.12,
#                   6.18, 7.3, ...), fetched with vm/debian-kernel.sh,
#                   run in QEMU
#   <configuration> a validation kernel named in validation/configurations
#                   (v7.3, v7.3+restart_v2, ...; "7.3+restart_v2" works
#                   too), built or reused by validation/build-kernel.sh,
#                   run in QEMU
#   <path>          a kernel image with loop, ext4 and xfs built in, run
#                   in QEMU
#
# fio's progress lines and a line per run are printed as the bench goes;
# each kernel's whole output (fio's JSON included) is kept in the logs
# directory (default /var/cache/readahead-selftests/bench/logs).
# --only REGEX runs only the job sections whose names match.
#
# Exit status: 0 when every kernel ran; 1 when one did not (its column
# is left out, RESULTS.md says so); 2 usage; 3 when nothing ran.

set -euo pipefail

prog=${0##*/}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(dirname "$here")
kernels="host 6.18 7.3"
only=
logs=/var/cache/readahead-selftests/bench/logs
results=$here/RESULTS.md
chart=$here/chart.png

usage() {
	sed -n '4,/^$/s/^# \{0,1\}//p' "$0" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--kernels) [ $# -ge 2 ] || usage; kernels=$2; shift 2 ;;
	--only) [ $# -ge 2 ] || usage; only=$2; shift 2 ;;
	--logs) [ $# -ge 2 ] || usage; logs=$2; shift 2 ;;
	--results) [ $# -ge 2 ] || usage; results=$2; shift 2 ;;
	--chart) [ $# -ge 2 ] || usage; chart=$2; shift 2 ;;
	-h | --help) usage ;;
	*) echo "$prog: unknown argument '$1'" >&2; usage ;;
	esac
done
[ -n "${kernels// /}" ] || usage
for tool in fio xfs_io gnuplot python3; do
	command -v "$tool" >/dev/null ||
		{ echo "$prog: $tool not found (make deps)" >&2; exit 3; }
done
mkdir -p "$logs"

# The terminal gets the progress lines, not the JSON.
show() {
	awk '
	/^@@bench-run / { sub(/^@@bench-run /, "  done: "); print; skip = 1; fflush(); next }
	/^@@bench-end/ { skip = 0; next }
	/^@@bench-kernel / { print "# kernel " $2; fflush(); next }
	!skip { print; fflush() }'
}

# Validation configuration names, when validation/ has them.
validation_name() {
	local name

	[ -x "$top/validation/build-kernel.sh" ] || return 1
	for name in "$1" "v$1"; do
		if "$top/validation/build-kernel.sh" --list 2>/dev/null | grep -qxF -- "$name"; then
			echo "$name"
			return 0
		fi
	done
	return 1
}

# Run the bench on one kernel, output on stdout; status as run-vm.sh's.
run_one() {
	local k=$1 kernel='' modules='' out name
	local -a vm_env=()

	[ -z "$only" ] || vm_env=(--env "BENCH_ONLY=$only")
	if [ "$k" = host ]; then
		nice -n 10 "$here/run-jobs.sh" ${only:+--only "$only"}
		return
	elif [[ $k == */* ]]; then
		kernel=$k
	elif [[ $k =~ ^[0-9]+\.[0-9]+$ ]]; then
		out=$("$top/vm/debian-kernel.sh" "$k") || return 3
		kernel=$(sed -n 's/^KERNEL=//p' <<<"$out")
		modules=$(sed -n 's/^MODULES=//p' <<<"$out")
	elif name=$(validation_name "$k"); then
		out=$(nice -n 10 "$top/validation/build-kernel.sh" "$name") || return 3
		kernel=$(awk -F '\t' -v n="$name" '$1 == n { print $2 }' <<<"$out")
	else
		echo "$prog: unknown kernel '$k' (host, a series, a validation" \
			"configuration or an image path)" >&2
		return 2
	fi
	[ -n "$kernel" ] || { echo "$prog: no kernel image for '$k'" >&2; return 3; }
	nice -n 10 "$top/vm/run-vm.sh" --kernel "$kernel" \
		${modules:+--modules "$modules"} --mem 2G --smp 2 --timeout 1800 \
		--build "$here" --runner "$here/run-jobs.sh" \
		--program fio --program xfs_io ${vm_env[@]+"${vm_env[@]}"}
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
	run_one "$k" 2>&1 | tee -a "$log" | show || rc=$?
	echo "@@bench-load $(cut -d ' ' -f 1 /proc/loadavg)" >>"$log"
	[ "$rc" = 0 ] || failed+=("$k (status $rc)")
	logfiles+=("$log")
done

command="make bench KERNELS=\"$kernels\""
[ -z "$only" ] || command="bench/bench.sh --kernels \"$kernels\" --only '$only'"
python3 "$here/report.py" --results "$results" --chart "$chart" \
	--command "$command" "${logfiles[@]}" || exit 3
echo "# wrote $results and $chart"
if [ ${#failed[@]} -gt 0 ]; then
	echo "$prog: not complete on: ${failed[*]}" >&2
	exit 1
fi
