#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Kernel history: run the suite in QEMU on the newest Debian kernel of
# each series (cloud-amd64; arm64 with 4 and 16 KiB pages, ppc64el with
# 64 KiB pages) and write a table of tests x kernels.
#
#   vm/history.sh [--build DIR] [--out FILE] [--logs DIR] [--full]
#                 [--reuse] [--series "6.1 6.12 ..."]
#
#   --build DIR   the built suite (default: build/); a kernel of another
#                 architecture runs DIR-<arch> (build-arm64/, as make
#                 ARCH=arm64 builds it)
#   --out FILE    the table (default: verdicts/HISTORY.md)
#   --logs DIR    keep each kernel's TAP there as <release>.tap, and its
#                 fetch and suite seconds as <release>.secs (default:
#                 /var/cache/readahead-selftests/history)
#   --full        whole figures (READAHEAD_FULL_RUN=1) instead of the
#                 early-stop ones
#   --reuse       take a kernel's TAP and times kept in --logs by an
#                 earlier run instead of running it again (to redo only
#                 the table; the TAP must come from the same suite)
#   --series LIST the series, oldest first (default: all below); a
#                 series of another architecture or page size is named
#                 as vm/debian-kernel.sh takes it (7.2-arm64-16k)
#
# Each kernel is fetched with vm/debian-kernel.sh and booted with
# vm/run-vm.sh under TCG, one after the other. Each cell of the table has
# the verdict and the figure the test printed (major faults); each column
# is also compared with its debian-<series> column of
# verdicts/expected.tsv. A series that cannot be fetched, or a kernel that
# does not boot, gets an empty column and the one-line reason.
#
# Exit status: 0 when every series ran (whatever the verdicts); 2 on usage
# errors; 3 when a series could not be fetched or run (the table is
# written all the same).

set -euo pipefail

prog=${0##*/}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(dirname "$here")
# This command line, paths relative to the top, for the table's stamp.
argv=vm/history.sh
for a in "$@"; do argv+=" ${a#"$top"/}"; done
build=$top/build
out=$top/verdicts/HISTORY.md
logs=/var/cache/readahead-selftests/history
full=0
reuse=0
all_series="6.1 6.12 6.16 6.17 6.18 6.19 7.0 7.1 7.2 7.3 7.2-arm64
	6.12-arm64-16k 7.2-arm64-16k 7.3-arm64-16k
	6.12-ppc64el-64k 7.2-ppc64el-64k 7.3-ppc64el-64k"
series=$all_series

usage() {
	sed -n '4,/^# Each kernel/{/^# Each kernel/d; s/^# \{0,1\}//p; }' "$0" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--build | --out | --logs | --series)
		[ $# -ge 2 ] || usage
		case $1 in
		--build) build=$2 ;;
		--out) out=$2 ;;
		--logs) logs=$2 ;;
		--series) series=$2 ;;
		esac
		shift 2
		;;
	--full)
		full=1
		shift
		;;
	--reuse)
		reuse=1
		shift
		;;
	*)
		usage
		;;
	esac
done
[ -d "$build" ] || { echo "$prog: no build directory $build (make all first)" >&2; exit 2; }
for s in $series; do
	case $s in
	*-arm64*) [ -d "$build-arm64" ] || { echo "$prog: no build directory $build-arm64 (make ARCH=arm64 first)" >&2; exit 2; } ;;
	*-ppc64el*) [ -d "$build-powerpc" ] || { echo "$prog: no build directory $build-powerpc (make ARCH=powerpc first)" >&2; exit 2; } ;;
	esac
done
for s in $series; do
	[[ $s =~ ^[0-9]+\.[0-9]+(-[a-z0-9]+(-[0-9]+k)?)?$ ]] ||
		{ echo "$prog: bad series '$s'" >&2; exit 2; }
done
mkdir -p "$logs" "$(dirname "$out")" || { echo "$prog: cannot create $logs" >&2; exit 3; }

work=$(mktemp -d "${TMPDIR:-/tmp}/history.XXXXXX")
trap 'rm -rf "$work"' EXIT

# A failing walk stops just past its bound unless --full.
vm_env=()
at_least='>='
if [ "$full" = 1 ]; then
	vm_env=(--env READAHEAD_FULL_RUN=1)
	at_least=
fi

# One kernel: fetch, run, keep the TAP. Writes $work/<series>.info:
# release, fetch seconds, suite seconds, error, separated by "|".
run_series() {
	local s=$1 t0 t1 release='' fetch='' suite='' err='' kernel modules rc
	local arch dir=$build

	t0=$EPOCHSECONDS
	if ! "$here/debian-kernel.sh" "$s" > "$work/$s.kernel" 2> "$work/$s.fetch"; then
		err=$(tail -n 1 "$work/$s.fetch")
	else
		fetch=$((EPOCHSECONDS - t0))
		kernel=$(sed -n 's/^KERNEL=//p' "$work/$s.kernel")
		modules=$(sed -n 's/^MODULES=//p' "$work/$s.kernel")
		release=${modules##*/}
		arch=$(sed -n 's/^ARCH=//p' "$work/$s.kernel")
		[ -z "$arch" ] || dir=$build-$arch
		rc=0
		if [ "$reuse" = 1 ] && [ -s "$logs/$release.tap" ] && [ -s "$logs/$release.secs" ]; then
			echo "$prog: $s: $release, kept TAP" >&2
			read -r fetch suite < "$logs/$release.secs"
		else
			echo "$prog: $s: $release fetched in $fetch s, running the suite" >&2
			t1=$EPOCHSECONDS
			"$here/run-vm.sh" --kernel "$kernel" --modules "$modules" \
				--build "$dir" --timeout 3600 ${vm_env[@]+"${vm_env[@]}"} \
				> "$logs/$release.tap" 2> "$work/$s.vm" || rc=$?
			suite=$((EPOCHSECONDS - t1))
			echo "$fetch $suite" > "$logs/$release.secs"
		fi
		if [ "$rc" -ge 2 ]; then
			err=$(grep -v 'suite exited with status' "$work/$s.vm" | tail -n 1)
			[ -n "$err" ] || err="run-vm.sh exited with status $rc"
		else
			cp "$logs/$release.tap" "$work/$s.tap"
		fi
	fi
	[ -z "$err" ] || echo "$prog: $s: $err" >&2
	printf '%s|%s|%s|%s\n' "$release" "$fetch" "$suite" "$err" > "$work/$s.info"
}

# Verdict, figure and bound of each test in a TAP file (see
# scripts/tap-figures.awk).
parse_tap() {
	awk -f "$top/scripts/tap-figures.awk" "$1"
}

failed_series=0
for s in $series; do
	run_series "$s"
	if [ -f "$work/$s.tap" ]; then
		parse_tap "$work/$s.tap" > "$work/$s.cells"
		"$top/scripts/check-verdicts.sh" "debian-$s" "$work/$s.tap" > "$work/$s.check" 2>&1 || true
	else
		failed_series=$((failed_series + 1))
	fi
done

# ---------------------------------------------------------------------------
# The table

commit=$(git -C "$top" rev-parse --short HEAD 2> /dev/null || echo unknown)
git -C "$top" diff --quiet HEAD 2> /dev/null || commit=$commit-dirty
{
	echo "Generated by \`$argv\` at commit $commit on $(date -u +%Y-%m-%d); do not edit by hand."
	echo
	echo "# Kernel history"
	echo
	echo "The suite in QEMU (TCG, $(nproc) host CPUs, 2 GiB guest) on the newest"
	echo "Debian kernel of each series that can be fetched (\`make history\`):"
	echo "cloud-amd64, and arm64 (4 KiB pages; -16k: 16 KiB) and ppc64el"
	echo "(-64k: 64 KiB pages) emulated."
	echo
	if [ "$full" = 1 ]; then
		echo "Figures are whole (READAHEAD_FULL_RUN=1): major faults over the"
		echo "whole walk."
	else
		echo "Figures are early-stop figures, the default: a walk stops as soon"
		echo "as its bound is exceeded, so a failing cell shows the count where"
		echo "it stopped (written >=N: the whole figure is at least that). A"
		echo "passing cell is the whole figure. \`vm/history.sh --full\` gives"
		echo "whole figures."
	fi
	echo
	echo "Cells: verdict and the figure the test prints (major faults; pages"
	echo "per run for random_reader); a test that prints several figures is"
	echo "shown by the one nearest to or furthest past its bound, and a cell"
	echo "whose bound differs from the row's names it. \`-\`: not run."
	echo

	# Header: one column per series.
	printf '| test | bound |'
	for s in $series; do printf ' %s |' "$s"; done
	echo
	printf '|---|---|'
	for s in $series; do printf -- '---|'; done
	echo

	# Every test seen in any column, in the order of the first TAP.
	for s in $series; do
		[ ! -f "$work/$s.cells" ] || cut -d '|' -f1 "$work/$s.cells"
	done | awk '!seen[$0]++' > "$work/tests"
	while read -r t; do
		bound=
		row=
		for s in $series; do
			cell=-
			if [ -f "$work/$s.cells" ]; then
				line=$(awk -F '|' -v t="$t" '$1 == t' "$work/$s.cells")
				if [ -n "$line" ]; then
					IFS='|' read -r _ v fig b <<< "$line"
					[ -n "$bound" ] || bound=$b
					case $v in
					skip) cell=skip ;;
					FAIL) cell="**FAIL** $at_least$fig" ;;
					*) cell="ok $fig" ;;
					esac
					# A bound other than the row's is shown in the cell.
					if [ -n "$b" ] && [ "$b" != "$bound" ]; then
						cell="$cell (bound $b)"
					fi
				else
					cell=missing
				fi
			fi
			row="$row $cell |"
		done
		echo "| $t | ${bound:--} |$row"
	done < "$work/tests"

	# Passed / failed / skipped per column.
	printf '| **passed / failed / skipped** | |'
	for s in $series; do
		if [ -f "$work/$s.cells" ]; then
			awk -F '|' '{ n[$2]++ } END { printf " %d / %d / %d |", n["ok"], n["FAIL"], n["skip"] }' "$work/$s.cells"
		else
			printf ' - |'
		fi
	done
	echo
	echo
	echo "## Kernels"
	echo
	echo "| series | kernel release | fetch (s) | suite under TCG (s) | vs verdicts/expected.tsv |"
	echo "|---|---|---|---|---|"
	for s in $series; do
		IFS='|' read -r release fetch suite err < "$work/$s.info"
		if [ -n "$err" ]; then
			echo "| $s | - | ${fetch:--} | ${suite:--} | not run: $err |"
		else
			check=$(tail -n 1 "$work/$s.check" 2> /dev/null | sed 's/^verdicts vs //')
			echo "| $s | $release | $fetch | $suite | $check |"
		fi
	done
	echo
	echo "Fetch: vm/debian-kernel.sh, package search, download and extraction"
	echo "(only the search when the kernel is cached). Suite: vm/run-vm.sh from"
	echo "start to power-off, initramfs and boot included, on a host shared"
	echo "with other work."
} > "$out.new"
mv "$out.new" "$out"
echo "$prog: wrote $out" >&2

if [ "$failed_series" -gt 0 ]; then
	echo "$prog: $failed_series series not run (see $out)" >&2
	exit 3
fi
