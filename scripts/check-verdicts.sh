#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Compare the verdicts in a suite run's TAP with one column of the
# expected-verdicts table.
#
#   check-verdicts.sh COLUMN|SERIES TAPFILE [TABLE]
#
# COLUMN is a column name of the table (6.18, debian-7.3, emu-plain ...).
# A bare series such as 7.3 names the column of that series: the column
# of that exact name if the table has one (the host's), else debian-7.3.
# Prints one line per test whose verdict differs (or is missing), per
# test of the TAP that has no row, and per row whose number of fields
# is not the "test" line's, and a summary; exits 1 if any, 2 on usage
# errors.
col=$1
tap=$2
table=${3:-$(dirname "$0")/../verdicts/expected.tsv}

if [ -z "$col" ] || [ ! -f "$tap" ] || [ ! -f "$table" ]; then
	echo "usage: $0 COLUMN|SERIES TAPFILE [TABLE]" >&2
	exit 2
fi

# A series without a column of its own: Debian's kernel of that series.
if echo "$col" | grep -Eq '^[0-9]+\.[0-9]+$' &&
   ! grep -v '^#' "$table" | head -n 1 | tr '\t' '\n' | grep -qxF "$col"; then
	col=debian-$col
fi

# Inner TAP lines of the harness, as printed through the kselftest runner
# ("# ok 3 fixture.variant.test") or directly ("ok 3 ...").
sed -n -E 's/^(# )*(not ok|ok) [0-9]+ ([a-z_0-9]+\.[a-z_0-9]+\.[a-z_0-9]+)(.*)$/\3 \2\4/p' "$tap" |
	awk '{ v = ($2 == "not") ? "FAIL" : ($0 ~ /# SKIP/ ? "skip" : "ok");
	       print $1 "\t" v }' > "$tap.verdicts"

awk -F '\t' -v col="$col" -v seen="$tap.verdicts" '
	BEGIN { while ((getline line < seen) > 0) {
			split(line, f, "\t"); got[f[1]] = f[2] } }
	/^#/ { next }
	$1 == "test" { for (i = 2; i <= NF; i++) if ($i == col) c = i; nf = NF; next }
	!c { print "no column " col " in the table"; bad = 1; exit }
	{ row[$1] }
	NF != nf { printf "  %-48s %d fields, the test line has %d\n", $1, NF, nf; bad++ }
	$c == "-" || $c == "" { next }
	{ n++; v = ($1 in got) ? got[$1] : "missing"
	  if (v != $c) { printf "  %-48s expected %-4s got %s\n", $1, $c, v; bad++ } }
	END { if (c) for (t in got) if (!(t in row)) {
			printf "  %-48s no row in the table (docs/adding-a-test.md)\n", t; bad++ }
	      printf "verdicts vs %s: %d checked, %d differ\n", col, n, bad + 0
	      exit bad ? 1 : 0 }' "$table"
rc=$?
rm -f "$tap.verdicts"
exit $rc
