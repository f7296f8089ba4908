#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Compare the verdicts in a suite run's TAP with one column of the
# expected-verdicts table: the project's one verdict comparison.
#
#   check-verdicts.sh [--cells] COLUMN|SERIES TAPFILE [TABLE]
#
# COLUMN is a column name of the table (6.18, debian-7.3, v7.3+fixes ...).
# A bare series such as 7.3 names Debian's kernel of that series
# (debian-7.3), but on a machine like the development host, whose memory
# controller is not in cgroup v2, the column of that exact name if the
# table has one (the host's own, 6.18).
# Prints one line per test whose verdict differs (or is missing; a FAIL
# the harness killed at its timeout says so), per test of the TAP that
# has no row, and per row whose number of fields is not the "test"
# line's, and a summary; exits 1 if any, 2 on usage errors.
#
# --cells prints instead every test, one line each, the table's rows in
# its order and then the TAP's tests without a row: test, the verdict
# expected (- where the table pins none, or has no such row or column),
# the verdict seen (missing when the test did not report), and DIFFERS
# when the two differ, tab-separated; exits 1 if any differs. The TAP is
# read by scripts/tap-figures.awk.
cells=0
if [ "${1:-}" = --cells ]; then
	cells=1
	shift
fi
col=$1
tap=$2
here=$(dirname "$0")
table=${3:-$here/../verdicts/expected.tsv}

if [ -z "$col" ] || [ ! -f "$tap" ] || [ ! -f "$table" ]; then
	echo "usage: $0 [--cells] COLUMN|SERIES TAPFILE [TABLE]" >&2
	exit 2
fi

# A bare series: the host's own column only on a machine like it.
if echo "$col" | grep -Eq '^[0-9]+\.[0-9]+$'; then
	v2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	if ! grep -v '^#' "$table" | head -n 1 | tr '\t' '\n' | grep -qxF "$col" ||
	   grep -qw memory "${v2:-/nonexistent}/cgroup.controllers" 2>/dev/null; then
		col=debian-$col
	fi
fi

awk -f "$here/tap-figures.awk" "$tap" |
awk -F '\t' -v col="$col" -v cells="$cells" '
	part == "tap" { split($0, f, "|"); if (!(f[1] in got)) seen[++ns] = f[1]
			  got[f[1]] = f[2]; why[f[1]] = f[5]; next }
	/^#/ { next }
	$1 == "test" { for (i = 2; i <= NF; i++) if ($i == col) c = i; nf = NF; next }
	!c && !cells { print "no column " col " in the table: no verdict is pinned for that kernel"
		       nocol = 1; exit }
	{ row[$1] }
	NF != nf && !cells { printf "  %-48s %d fields, the test line has %d\n", $1, NF, nf; bad++ }
	{ e = c ? $c : "-"; if (e == "") e = "-"
	  v = ($1 in got) ? got[$1] : "missing"
	  if (e != "-") n++
	  d = e != "-" && v != e
	  if (d) bad++
	  if (cells) print $1 "\t" e "\t" v "\t" (d ? "DIFFERS" : "")
	  else if (d) printf "  %-48s expected %-4s got %s%s\n", $1, e, v,
			     v == "FAIL" && why[$1] != "" ? " (" why[$1] ")" : "" }
	END { if (nocol) exit 1
	      if (c || cells) for (i = 1; i <= ns; i++) if (!(seen[i] in row)) {
		if (cells) { print seen[i] "\t-\t" got[seen[i]] "\t"; continue }
		printf "  %-48s no row in the table (docs/adding-a-test.md)\n", seen[i]; bad++ }
	      if (!cells) printf "verdicts vs %s: %d checked, %d differ\n", col, n, bad + 0
	      exit bad ? 1 : 0 }' part=tap - part=table "$table"
