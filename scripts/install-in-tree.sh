#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Put the readahead selftests into tools/testing/selftests/mm of a kernel
# tree: copy the sources, list them in mm's Makefile (libcap linked as for
# mlock-random-test), append the config fragment and the run_vmtests.sh
# category. Running it again changes nothing.
#
#   install-in-tree.sh <kernel tree>
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
mm=${1:?usage: $0 <kernel tree>}/tools/testing/selftests/mm
[ -f "$mm/Makefile" ] && [ -f "$mm/run_vmtests.sh" ] ||
	{ echo "$mm: not a kernel tree's mm selftests" >&2; exit 2; }

tests=$(cd "$top/selftests-mm" && ls ./*.c | sed 's|^\./||; s|\.c$||')
cp "$top"/selftests-mm/*.c "$top"/lib/ra_util.c "$top"/lib/ra_util.h "$mm/"

if ! grep -q readahead_sticky_miss "$mm/Makefile"; then
	tmp=$(mktemp)
	awk -v tests="$tests" '
		/^TEST_GEN_FILES \+= mlock-random-test/ && !done {
			n = split(tests, t, "\n")
			for (i = 1; i <= n; i++) print "TEST_GEN_FILES += " t[i]
			done = 1 }
		{ print }' "$mm/Makefile" > "$tmp"
	cat "$tmp" > "$mm/Makefile"
	rm -f "$tmp"
	outs=$(for t in $tests; do printf ' $(OUTPUT)/%s' "$t"; done)
	{
		echo
		echo "${outs# }: ra_util.c"
		echo "${outs# }: LDLIBS += -lcap"
	} >> "$mm/Makefile"
fi

for t in $tests; do
	grep -qx "$t" "$mm/.gitignore" 2>/dev/null || echo "$t" >> "$mm/.gitignore"
done

while read -r line; do
	grep -qx "$line" "$mm/config" || echo "$line" >> "$mm/config"
done < "$top/config"

if ! grep -q 'CATEGORY="readahead"' "$mm/run_vmtests.sh"; then
	usage=$(sed -n '/^# usage:/,/^#$/p' "$top/run_vmtests-snippet.sh" |
		sed -n 's/^#\([-	]\)/\1/p')
	tmp=$(mktemp)
	# usage(): after the last category, i.e. before the "example:" line
	awk -v usage="$usage" -v snippet="$top/run_vmtests-snippet.sh" '
		/^example: / && !u { print usage; print ""; u = 1 }
		/^echo "SUMMARY:/ && !r {
			while ((getline l < snippet) > 0)
				if (l ~ /^CATEGORY=/) print l
			print ""; r = 1 }
		{ print }' "$mm/run_vmtests.sh" > "$tmp"
	cat "$tmp" > "$mm/run_vmtests.sh"
	rm -f "$tmp"
fi
echo "installed $(echo $tests | wc -w) readahead tests into $mm"
