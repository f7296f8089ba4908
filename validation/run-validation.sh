#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot the validation kernel with vm/run-vm.sh once per readahead_emulate=
# set and run the ra-repro scenarios (repro/run-repro.sh) in it.
#
# Usage: run-validation.sh [-k bzImage] [-c ra_cases] [-o results] SET...
#   SET is a readahead_emulate= value, or "none" for the plain kernel.
#   ra_cases: comma-separated list of sticky, exec, frames, pieces,
#   sticky16k, descending (default: all).
#
# ra-repro is compiled into a temporary build directory that run-vm.sh
# puts in the guest. RESULT lines are printed and appended to the results
# file (default validation/results.txt). $RA_VM_TIMEOUT limits each boot
# (seconds, default 900). Exit status 1 if a boot gave no results.

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

mkdir "$work/build"
gcc -O2 -Wall -Wextra -o "$work/build/ra-repro" "$here/repro/ra-repro.c"

failed=0
for set in "$@"; do
	out=$work/out-$set
	start=$(date +%s)
	rc=0
	"$here/../vm/run-vm.sh" --kernel "$kernel" --build "$work/build" \
		--runner "$here/repro/run-repro.sh" --env "RA_CASES=$cases" \
		--cmdline "readahead_emulate=$set" --timeout "$timeout" \
		--boot-timeout 300 >"$out" || rc=$?
	secs=$(($(date +%s) - start))
	if ! grep -q '^RA-END' "$out"; then
		echo "boot with readahead_emulate=$set failed after ${secs}s (run-vm.sh status $rc); output:" >&2
		tail -30 "$out" >&2
		failed=1
		continue
	fi
	[ "$rc" = 0 ] || echo "readahead_emulate=$set: a scenario setup failed (see the error results)" >&2
	label=$set
	[ "$set" != none ] || label="(none)"
	{
		echo "## readahead_emulate=$label ($(grep -o -m1 'RA-BEGIN [^ ]*' "$out" | cut -d' ' -f2), ${secs}s)"
		grep -E '^RA-(DMESG|RESULT)' "$out"
	} | tee -a "$results"
done
exit "$failed"
