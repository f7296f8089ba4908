#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The project's fixes under the kernel's debug checkers: a configuration
# of validation/configurations (v7.3+fixes) built twice, with lockdep
# (PROVE_LOCKING), DEBUG_VM, DEBUG_LIST, DEBUG_ATOMIC_SLEEP and generic
# KASAN (validation/build-kernel.sh --arch x86-debug), and with KCSAN
# (--arch x86-kcsan; KCSAN and KASAN exclude each other). Each kernel is
# booted in QEMU twice: (a) the whole suite, (b) stress-ng's file-backed
# mmap, readahead and madvise stressors with --verify on ext4 and XFS
# (validation/debug-stress.sh, the guest's runner). The suite runs on
# one vCPU under KASAN, on two under KCSAN (a data race needs two).
#
#   validation/debug-check.sh [--build DIR] [--column COLUMN] [--keep DIR]
#                             [--results FILE] [--arch ARCH]
#
#   --build DIR     the built suite (default build/)
#   --column C      the configuration (default v7.3+fixes)
#   --keep DIR      keep the suite's TAP, stress-ng's output, both console
#                   logs and run-vm.sh's stderr there (default: a
#                   temporary directory, removed)
#   --results FILE  also write the outcome there (make debug-check:
#                   validation/DEBUG-RESULTS.txt): a stamp line, then per
#                   kernel its patches, the suite's counts, stress-ng's
#                   lines, the wall times and the outcome line
#   --arch ARCH     one kernel only: x86-debug or x86-kcsan (default both)
#
# Environment: RA_DEBUG_MEM, guest memory (default 3G: KASAN's shadow
# takes an eighth); RA_DEBUG_TIMEOUT, seconds the suite's guest may run
# (default 7200); RA_STRESS_SECS, stress-ng's seconds per filesystem
# (default 60); RA_KERNEL_JOBS as for build-kernel.sh.
#
# Under KASAN and lockdep in TCG every case runs several times slower; the
# harness's per-case timeouts (30 s, or ten times a case's slowest plain
# TCG run) are sized for that. A case that still times out is counted
# (timeout), as FAILs and skips are, and judges nothing here; the suite
# has only to run to its end. The checks are the
# console, no line of a checker's report (BUG:, WARNING:, kernel BUG at,
# Oops, general protection fault, list corruption, lockdep's
# DEBUG_LOCKS_WARN_ON and non-static key, UBSAN:, Kernel panic) in either
# guest's console log, and stress-ng's exit status, 0 on both filesystems.
#
# Prints, per kernel, the suite's counts and stress-ng's lines, then one
# line,
#   debug kernel <release>: suite ran, stress-ng ok, console clean: pass
# or, for what failed, "suite did not run to its end (<why>)",
# "stress-ng failed (<fs> exit <n>)" or "console: <n> report lines",
# ending in ": FAIL", with the report lines below it.
#
# Exit status: 0 pass (both kernels); 1 when a check failed; 2 on usage errors; 3 when
# the kernel cannot be built or a guest cannot be started.

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(dirname "$here")
# shellcheck source=scripts/cli.sh
. "$top/scripts/cli.sh"

build=$top/build
column=v7.3+fixes
keep=
results=
arch=
mem=${RA_DEBUG_MEM:-3G}
timeout=${RA_DEBUG_TIMEOUT:-7200}
secs=${RA_STRESS_SECS:-60}
# This command line, paths relative to the top, for the stamp.
argv=validation/debug-check.sh
for a in "$@"; do argv+=" ${a#"$top"/}"; done

usage() {
	sed -n '12,13s/^# \{0,1\}//p' "$0" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--build | --column | --keep | --results | --arch) [ $# -ge 2 ] || usage ;;
	*) usage ;;
	esac
	declare "${1#--}=$2"
	shift 2
done
[ -d "$build" ] || { echo "$prog: no build directory $build (make all)" >&2; exit 2; }
[[ $timeout =~ ^[1-9][0-9]*$ && $secs =~ ^[1-9][0-9]*$ ]] || usage
case $arch in
'') arches=(x86-debug x86-kcsan) ;;
x86-debug | x86-kcsan) arches=("$arch") ;;
*) usage ;;
esac
work_dir "$keep" ra-debug-check

# A checker's report, wherever the console put it; each line once.
report_lines() {
	sed -e 's/\r$//' -e 's/^<[0-9]>//' -e 's/^\[[^]]*\] *//' "$@" 2> /dev/null |
		grep -E '^(BUG|WARNING):|kernel BUG at|Oops:|general protection fault|list_(add|del) corruption|DEBUG_LOCKS_WARN_ON|INFO: trying to register non-static key|UBSAN:|Kernel panic' |
		awk '!seen[$0]++' || true
}

# "<n> ok, <n> FAIL, <n> skip, <n> timeout" of a TAP, through the one TAP
# reader; a FAIL the harness's timeout ended (its "Test terminated by
# timeout" line, then its FAIL line) counts as timeout. Then the names of
# the FAILs, and the binaries the runner's own timeout ended.
suite_counts() {
	local tap=$1 timed binaries

	timed=$(awk '{ sub(/^(# )+/, "") }
		/: Test terminated by timeout$/ { to = 1; next }
		to && /^ *FAIL  / { print $2; to = 0 }' "$tap")
	awk -f "$top/scripts/tap-figures.awk" "$tap" | awk -F'|' -v timed="$timed" '
		BEGIN { n = split(timed, t, "\n"); for (i = 1; i <= n; i++) to[t[i]] = 1 }
		{ v = ($2 == "FAIL" && $1 in to) ? "timeout" : $2; c[v]++
		  if (v == "FAIL") fails = fails " " $1 }
		END { printf "%d ok, %d FAIL, %d skip, %d timeout", c["ok"], c["FAIL"], c["skip"], c["timeout"]
		      if (fails != "") printf "; FAIL:%s", fails }'
	binaries=$(grep -c '^not ok [0-9]* selftests: .* # TIMEOUT' "$tap" || true)
	[ "$binaries" = 0 ] || printf '; %s binaries ended by the runner timeout' "$binaries"
	echo
}

# The kernel. Its make must not inherit the suite's make's command line
# (make debug-check OUTPUT=DIR would move objtool's build there).
unset MAKEFLAGS MFLAGS MAKELEVEL

# One kernel, $1: build it, run the suite and stress-ng, print its
# outcome; sets fail when a check failed and appends its block to
# $work/results.
check_kernel() {
	local arch=$1 checker smp=1 work=$work/$1
	case $arch in
	x86-debug) checker="KASAN and lockdep" ;;
	x86-kcsan) checker="KCSAN"; smp=2 ;;
	esac
	mkdir -p "$work"
	start=$SECONDS
	rc=0
	line=$("$here/build-kernel.sh" --arch "$arch" "$column" 2> "$work/build.err") || rc=$?
	cat "$work/build.err" >&2
	[ "$rc" = 0 ] ||
		die "cannot build the debug kernel of $column (validation/build-kernel.sh --arch $arch $column)"
	image=${line#*$'\t'}
	built="kernel built in $((SECONDS - start)) s (incremental in the cache's object tree)"
	grep -q ': built in ' "$work/build.err" || built="kernel reused from the cache"
	patches=$(paste -sd ' ' "$(dirname "$image")/patches" 2> /dev/null || true)

	# (a) The suite.
	start=$SECONDS
	rc=0
	"$top/vm/run-vm.sh" --kernel "$image" --mem "$mem" --smp "$smp" --timeout "$timeout" \
		--boot-timeout 300 --build "$build" --log "$work/suite-console.log" --verbose \
		> "$work/suite.tap" 2> "$work/suite.err" || rc=$?
	suite_secs=$((SECONDS - start))
	[ "$rc" != 2 ] || die "vm/run-vm.sh: $(tail -n 1 "$work/suite.err")"
	suite_ran=1
	why=
	if [ "$rc" -gt 1 ]; then
		suite_ran=0
		why=$(grep -v 'suite exited with status' "$work/suite.err" | tail -n 1 | sed 's/^run-vm.sh: //')
	fi
	counts=$(suite_counts "$work/suite.tap")
	release=$(sed -n 's/^# guest kernel: //p' "$work/suite.tap" | head -n 1)
	accel=$(sed -n 's/.*: booting with \([a-z]*\) at .*/\1/p' "$work/suite.err" | head -n 1)

	# (b) stress-ng, on two vCPUs: the locks are taken concurrently.
	start=$SECONDS
	mkdir -p "$work/stress-build"
	src=0
	"$top/vm/run-vm.sh" --kernel "$image" --mem "$mem" --smp 2 \
		--timeout $((2 * secs + 900)) --boot-timeout 300 \
		--build "$work/stress-build" --runner "$here/debug-stress.sh" \
		--program stress-ng --env RA_STRESS_SECS="$secs" \
		--log "$work/stress-console.log" --verbose \
		> "$work/stress.out" 2> "$work/stress.err" || src=$?
	stress_secs=$((SECONDS - start))
	[ "$src" != 2 ] || die "vm/run-vm.sh: $(tail -n 1 "$work/stress.err")"
	[ -n "$release" ] || release=$(sed -n 's/^# guest kernel: //p' "$work/stress.out" | head -n 1)
	stress=$(grep '^stress-ng [a-z0-9]*: exit ' "$work/stress.out" || true)
	stress_bad=$(grep -v ': exit 0$' <<< "$stress" | sed 's/^stress-ng //; s/: exit / exit /' | paste -sd, - || true)
	[ "$(grep -c ': exit 0$' <<< "$stress")" = 2 ] || [ -n "$stress_bad" ] ||
		stress_bad="no result, run-vm.sh exit $src: $(tail -n 1 "$work/stress.err" | sed 's/^run-vm.sh: //')"

	reports=$(report_lines "$work/suite-console.log" "$work/stress-console.log")

	# The outcome.
	parts=()
	local bad=0
	if [ "$suite_ran" = 1 ]; then
		parts+=("suite ran")
	else
		parts+=("suite did not run to its end ($why)")
		bad=1
	fi
	if [ -z "$stress_bad" ]; then
		parts+=("stress-ng ok")
	else
		parts+=("stress-ng failed ($stress_bad)")
		bad=1
	fi
	if [ -z "$reports" ]; then
		parts+=("console clean")
	else
		parts+=("console: $(wc -l <<< "$reports") report lines")
		bad=1
	fi
	verdict=pass
	[ "$bad" = 0 ] || { verdict=FAIL; fail=1; }
	printf -v outcome 'debug kernel %s: %s' "${release:-unknown}" "${parts[0]}"
	for p in "${parts[@]:1}"; do outcome+=", $p"; done
	outcome+=": $verdict"

	summary() {
		echo "suite under $checker, $suite_secs s: $counts"
		[ -z "$stress" ] || echo "$stress"
		echo "$outcome"
		[ -z "$reports" ] || awk '{ print "  " $0 }' <<< "$reports"
	}
	if [ "$bad" = 1 ] && [ "$src" != 0 ] && [ -n "$stress_bad" ]; then
		tail -n 20 "$work/stress.out" >&2
	fi
	[ -z "$keep" ] || echo "$prog: TAP, stress-ng's output and console logs in $work" >&2
	summary
	{
		echo "kernel ${release:-unknown}: linux-source-7.3 $column ($patches), validation/kernel-${arch#x86-}.config; QEMU ${accel:-?}, $mem, $smp vCPU (suite), 2 (stress-ng)"
		echo "wall times: $built, suite $suite_secs s, stress-ng $stress_secs s ($secs s per filesystem)"
		summary
	} >> "${work%/*}/results"
}

fail=0
for a in "${arches[@]}"; do
	check_kernel "$a"
done

if [ -n "$results" ]; then
	commit=$(git -C "$top" rev-parse --short HEAD 2> /dev/null || echo unknown)
	git -C "$top" diff --quiet HEAD 2> /dev/null || commit=$commit-dirty
	{
		echo "Generated by \`$argv\` at commit $commit on $(date -u '+%Y-%m-%d %H:%M') UTC; do not edit by hand."
		cat "$work/results"
	} > "$results"
fi
exit "$fail"
