#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The kill matrix: run the suite under every configuration and compare
# each test's verdict with verdicts/expected.tsv.
#
#   validation/matrix.sh [--only COLUMN,...] [--full] [--results FILE]
#                        [--taps DIR]
#
# Columns:
#   6.18 (the running kernel's series)  the suite on this machine
#   debian-<series>                     Debian's cloud kernel in QEMU
#                                       (vm/debian-kernel.sh <series>)
#   v7.3...                             linux-source-7.3 built by
#                                       validation/build-kernel.sh, with
#                                       the patches that
#                                       validation/configurations lists
# Default: this machine, debian-6.1, debian-6.12 and every configuration.
#
# --full runs with READAHEAD_FULL_RUN=1: no walk stops at its bound, so a
# failing cell shows the whole figure (slower on broken configurations).
# Prints a table of tests x columns (expected/seen verdict, and the
# measured figure against its bound). --results FILE puts the table into
# FILE between the lines "<!-- matrix begin -->" and "<!-- matrix end -->"
# ("full" instead of "matrix" with --full), keeping the rest of FILE.
# --taps DIR keeps each column's TAP as DIR/<column>.tap, and a column
# whose TAP is already there is not run again: a matrix can be run a
# few columns at a time and tabulated whole at the end.
# RA_MATRIX_JOBS (default 2) columns run at the same time.
# Exit status: 0 when every cell is as expected, 1 otherwise, 2 on usage
# errors, 3 when a kernel cannot be built, fetched or booted.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(dirname "$here")
table=$top/verdicts/expected.tsv
results=
only=
full=()
mark=matrix
taps=
# Seconds per column: the whole suite under TCG takes 5-10 minutes when
# the machine is shared, more with --full on a broken kernel.
timeout=${RA_MATRIX_TIMEOUT:-3600}

usage() {
	echo "usage: $0 [--only COLUMN,...] [--full] [--results FILE] [--taps DIR]" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--only) [ $# -ge 2 ] || usage; only=$2; shift 2 ;;
	--results) [ $# -ge 2 ] || usage; results=$2; shift 2 ;;
	--full) full=(--env READAHEAD_FULL_RUN=1); mark=full; shift ;;
	--taps) [ $# -ge 2 ] || usage; taps=$2; shift 2 ;;
	*) usage ;;
	esac
done

mapfile -t configs < <("$here/build-kernel.sh" --list)
host=$(uname -r | sed -E 's/^([0-9]+\.[0-9]+).*/\1/')
if [ -n "$only" ]; then
	IFS=, read -r -a columns <<< "$only"
else
	columns=("$host" debian-6.1 debian-6.12 "${configs[@]}")
fi

out=$(mktemp -d /var/tmp/ra-matrix.XXXXXX)
trap 'rm -rf "$out"' EXIT
tapdir=${taps:-$out}
mkdir -p "$tapdir"
make -s -C "$top" all > /dev/null

# A TAP kept by an earlier run with --taps (kept only when the suite ran
# to its end): the column is not run again.
have_tap() {
	[ -n "$taps" ] && [ -f "$tapdir/$1.tap" ]
}

# Build (or reuse) the kernels of the configuration columns, in one go.
declare -A image=()
wanted=()
for col in "${columns[@]}"; do
	have_tap "$col" && continue
	case " ${configs[*]} " in *" $col "*) wanted+=("$col") ;; esac
done
if [ ${#wanted[@]} -gt 0 ]; then
	rc=0
	"$here/build-kernel.sh" "${wanted[@]}" > "$out/images" || rc=$?
	[ "$rc" = 0 ] || exit "$rc"
	while IFS=$'\t' read -r col path; do
		image[$col]=$path
	done < "$out/images"
fi

# Every column must be known before anything runs.
for col in "${columns[@]}"; do
	have_tap "$col" || [ -n "${image[$col]+x}" ] || [[ $col == debian-* ]] ||
		[ "$col" = "$host" ] || {
		echo "unknown column $col (not this machine's $host, debian-*, or in validation/configurations)" >&2
		exit 2
	}
done

# One column's suite run, into $tapdir/<col>.tap.part; its exit status
# into $out/<col>.rc.
run_column() {
	local col=$1 rc=0 patches kargs

	if [ -n "${image[$col]+x}" ]; then
		patches=$(paste -sd ' ' "$(dirname "${image[$col]}")/patches")
		echo "== $col: linux-source-7.3 ${patches:-(pristine)}" >&2
		"$top/vm/run-vm.sh" --kernel "${image[$col]}" --timeout "$timeout" \
			${full[@]+"${full[@]}"} \
			> "$tapdir/$col.tap.part" 2> "$out/$col.err" || rc=$?
	elif [[ $col == debian-* ]]; then
		echo "== $col" >&2
		if kargs=$("$top/vm/debian-kernel.sh" "${col#debian-}" 2> "$out/$col.err" |
			   sed 's/^KERNEL=/--kernel /; s/^MODULES=/--modules /') &&
		   [ -n "$kargs" ]; then
			# shellcheck disable=SC2086 # two options and their paths
			"$top/vm/run-vm.sh" --timeout "$timeout" ${full[@]+"${full[@]}"} $kargs \
				> "$tapdir/$col.tap.part" 2>> "$out/$col.err" || rc=$?
		else
			: > "$tapdir/$col.tap.part"
			rc=3
		fi
	else
		echo "== $col: this machine" >&2
		# make exits 2 when a test fails: the TAP tells.
		READAHEAD_FULL_RUN=${full:+1} make -s -C "$top" run_tests \
			> "$tapdir/$col.tap.part" 2> "$out/$col.err" || true
	fi
	echo "$rc" > "$out/$col.rc"
}

# Columns run RA_MATRIX_JOBS at a time (default 2: each guest has one
# vCPU, and a run's verdicts do not depend on its speed).
jobs_max=${RA_MATRIX_JOBS:-2}
for col in "${columns[@]}"; do
	if have_tap "$col"; then
		echo "== $col: kept in $tapdir" >&2
		continue
	fi
	while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do
		wait -n || true
	done
	run_column "$col" &
done
wait

infra=0
for col in "${columns[@]}"; do
	[ -f "$out/$col.rc" ] || continue
	rc=$(cat "$out/$col.rc")
	if [ "$rc" -le 1 ]; then
		mv "$tapdir/$col.tap.part" "$tapdir/$col.tap"
	else
		echo "$col: $(tail -n 1 "$out/$col.err")" >&2
		mv "$tapdir/$col.tap.part" "$out/$col.tap"
		[ -z "$taps" ] || cp "$out/$col.tap" "$tapdir/$col.tap.failed"
		[ "$rc" != 3 ] || infra=1
	fi
done

# The TAP of a column: kept, or what a failed run printed.
tap_of() {
	if [ -f "$tapdir/$1.tap" ]; then echo "$tapdir/$1.tap"; else echo "$out/$1.tap"; fi
}

# One row per test: for each column "expected/seen figure/bound", the
# figure as scripts/tap-figures.awk picks it.
bad=0
{
	printf '| test |'
	for col in "${columns[@]}"; do printf ' %s |' "$col"; done
	printf '\n|---|'
	for col in "${columns[@]}"; do printf -- '---|'; done
	printf '\n'
	for col in "${columns[@]}"; do
		awk -f "$top/scripts/tap-figures.awk" "$(tap_of "$col")" |
			awk -F '|' -v col="$col" '{
				print $1 "\t" col "\t" $2 "\t" ($2 == "skip" || $3 == "" ? "" : $3 "/" $4) }'
	done > "$out/seen.tsv"
	awk -F '\t' -v cols="${columns[*]}" -v seenf="$out/seen.tsv" '
		function row(t, known,    i, e, g, mark) {
			printf "| %s |", t
			for (i = 1; i <= nc; i++) {
				e = (known && (c[i] in idx)) ? $(idx[c[i]]) : "-"
				g = (((t, c[i]) in v)) ? v[t, c[i]] : "missing"
				mark = (e == "-" || e == g) ? "" : " **DIFFERS**"
				if (mark != "") bad++
				printf " %s/%s %s%s |", e, g, fg[t, c[i]], mark }
			printf "\n"; done[t] = 1 }
		BEGIN { nc = split(cols, c, " ")
			while ((getline l < seenf) > 0) {
				split(l, s, "\t"); v[s[1], s[2]] = s[3]; fg[s[1], s[2]] = s[4]
				if (!(s[1] in seen)) { seen[s[1]] = 1; order[++ns] = s[1] } } }
		/^#/ { next }
		$1 == "test" { for (i = 2; i <= NF; i++) idx[$i] = i; next }
		{ row($1, 1) }
		# Tests the table does not list yet: shown, not judged.
		END { for (i = 1; i <= ns; i++) if (!(order[i] in done)) row(order[i], 0)
		      exit bad ? 1 : 0 }' "$table" || bad=1
} > "$out/table.md"

cat "$out/table.md"
if [ -n "$results" ]; then
	{
		echo "<!-- $mark begin -->"
		echo "Generated by \`validation/matrix.sh${full:+ --full}\` on $(date -u +%Y-%m-%d)" \
			"from $(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)."
		echo
		cat "$out/table.md"
		echo "<!-- $mark end -->"
	} > "$out/block"
	touch "$results"
	if grep -q "^<!-- $mark begin -->" "$results"; then
		awk -v m="$mark" -v blockf="$out/block" '
			$0 == "<!-- " m " begin -->" {
				while ((getline l < blockf) > 0) print l; skip = 1; next }
			$0 == "<!-- " m " end -->" { skip = 0; next }
			!skip' "$results" > "$out/results.new"
	else
		{ cat "$results"; echo; cat "$out/block"; } > "$out/results.new"
	fi
	cp "$out/results.new" "$results"
fi
for col in "${columns[@]}"; do
	# 7.3's kselftest runner nests the harness's TAP header: "# TAP version".
	grep -Eq '^# guest kernel|^(# )*TAP version' "$(tap_of "$col")" ||
		{ echo "$col: no TAP"; tail -n 3 "$out/$col.err"; bad=1; }
done
[ "$infra" = 0 ] || { echo "matrix: a kernel did not boot or could not be fetched"; exit 3; }
[ "$bad" -eq 0 ] && echo "matrix: every cell as expected" || echo "matrix: cells differ"
exit "$bad"
