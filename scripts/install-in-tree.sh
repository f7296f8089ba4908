#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Put the readahead selftests into tools/testing/selftests/mm of a kernel
# tree, in the layout that tree uses. Every selftests-mm/*.c is a test,
# and every selftests-mm/<test>.patch the cases of mm's own <test>.c.
#
#   install-in-tree.sh <kernel tree>
#
# RA_TESTS="name ..." installs only those tests (names of selftests-mm/*.c
# or *.patch without the suffix); RA_TESTS="" installs the helpers and
# the category alone. mm's own tests without one of ours (a posting of
# their own) get their run lines and config options, not the category.
#
# What changes in the tree's mm directory:
#   - the tests and lib/*.[ch] are copied in; a patch is applied to the
#     tree (unless it is in already), and its test run in its category
#     with its cases only (run_vmtests.sh: prctl_thp_disable in "thp",
#     in split_huge_page_test's XFS);
#   - Makefile: the lib's headers in LOCAL_HDRS; before the TEST_PROGS
#     lines, each test installed named in READAHEAD_TESTS, or in
#     READAHEAD_CGROUP_TESTS when it includes ra_cgroup.h (thrash), at its
#     sorted place; both go into TEST_GEN_FILES where ARCH can be 64-bit
#     (2 GiB loop images, mappings of GiBs; x86 and riscv included, as
#     for memfd_secret, and run_vmtests.sh runs them under VADDR64).
#     After the LDLIBS lines of the other tests, one rule
#     links every readahead test with the lib's other .c files,
#     and, once a cgroup test is installed, one more links those with
#     ra_cgroup.c and the cgroup selftests' library (cgroup_util.c, its
#     include directory in their CFLAGS only);
#   - run_vmtests.sh: a "readahead" category (help text from
#     run_vmtests-snippet.sh) and, before the summary, the run line the
#     snippet has for each test installed, at its sorted place in an
#     "if [ $VADDR64 -ne 0 ]" block;
#   - when mm's Makefile lists ksft_<category>.sh wrappers in TEST_PROGS
#     (7.x: what "make run_tests" and KernelCI run), ksft_readahead.sh is
#     created and added there at its sorted place;
#   - .gitignore, when it lists binaries one by one (6.x; 7.x ignores
#     everything but sources);
#   - config: the options the installed tests need that it lacks; in
#     our config a comment "# <glob>[, <glob>]: why" says which tests
#     (selftests-mm names) need the options below it.
# Running it again changes nothing.
# shellcheck disable=SC2016 # make's $(...) in single quotes
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -ne 1 ]; then
	echo "usage: $0 <kernel tree>" >&2
	exit 2
fi
mm=$1/tools/testing/selftests/mm
if [ ! -f "$mm/Makefile" ] || [ ! -f "$mm/run_vmtests.sh" ]; then
	echo "$0: $mm: not a kernel tree's mm selftests" >&2
	exit 2
fi

if [ -n "${RA_TESTS+set}" ]; then
	# shellcheck disable=SC2086 # a list of names
	tests=$(printf "%s\n" $RA_TESTS | LC_ALL=C sort)
else
	tests=$(cd "$top/selftests-mm" && printf '%s\n' *.c *.patch |
		sed 's/\.c$//; s/\.patch$//' | LC_ALL=C sort)
fi
patched=
ours=$([ -n "$tests" ] || echo category)
for t in $tests; do
	if [ -f "$top/selftests-mm/$t.c" ]; then
		cp "$top/selftests-mm/$t.c" "$mm/"
		ours+=" $t"
	elif [ -f "$top/selftests-mm/$t.patch" ]; then
		patch -s -R -f --dry-run -d "$1" -p1 < "$top/selftests-mm/$t.patch" \
			> /dev/null 2>&1 ||
			patch -s -f -d "$1" -p1 --no-backup-if-mismatch \
				< "$top/selftests-mm/$t.patch"
		patched+=" $t"
	else
		echo "$0: no test selftests-mm/$t.c or $t.patch" >&2
		exit 2
	fi
done
[ -z "$ours" ] || cp "$top"/lib/*.[ch] "$mm/"
# What every test links: the lib's .c files but the cgroup part, which
# only a test in a cgroup of its own links.
lib_c=$(cd "$top/lib" && printf '%s\n' *.c | grep -vx ra_cgroup.c | LC_ALL=C sort | paste -sd ' ')

# Replace a file's content with stdin, keeping its mode.
update() {
	local tmp

	tmp=$(mktemp)
	cat > "$tmp"
	cat "$tmp" > "$1"
	rm -f "$tmp"
}

# Add "VAR += NAME" to the first block of "VAR =" / "VAR +=" lines, before
# the first unconditional entry that sorts after NAME (after the block's
# last entry when none does). Conditional entries (ifeq ... endif) are
# left where they are.
add_sorted() {
	local var=$1 name=$2 file=$3

	grep -qx "$var += $name" "$file" && return 0
	LC_ALL=C awk -v var="$var" -v name="$name" '
		function put() { print var " += " name; done = 1 }
		!done && $0 ~ "^" var " \\+?= " { inblock = 1 }
		!done && inblock && /^if/ { depth++ }
		!done && inblock && /^endif/ { depth--; print; last = NR; next }
		!done && inblock && !depth && $0 ~ "^" var " \\+?= " {
			if ($3 > name) put(); else { print; last = NR; next } }
		!done && inblock && !depth && $0 !~ "^" var " " && !/^(if|else|endif)/ {
			put() }
		{ print }
		END { if (!done) exit 1 }' "$file" | update "$file"
}

# After the last line of the first run of lines matching RE, add LINE.
add_after_last() {
	local line=$2 file=$3

	grep -qxF "$line" "$file" && return 0
	RE=$1 LINE=$line awk '
		!done && $0 ~ ENVIRON["RE"] { inrun = 1; print; next }
		!done && inrun { print ENVIRON["LINE"]; done = 1 }
		{ print }
		END { if (!done) exit 1 }' "$file" | update "$file"
}

# Replace the line matching RE with LINE, or add LINE after the last of
# the first run of lines matching AFTER.
set_line() {
	local re=$1 line=$2 after=$3 file=$4

	if grep -qE "$re" "$file"; then
		RE=$re LINE=$line awk '$0 ~ ENVIRON["RE"] { print ENVIRON["LINE"]; next }
			{ print }' "$file" | update "$file"
	else
		add_after_last "$after" "$line" "$file"
	fi
}

mk=$mm/Makefile
# Before the first line matching RE, add LINE, one line or more (and a
# blank line with a fourth argument), unless its first line is there.
add_before() {
	grep -qxF "${2%%$'\n'*}" "$3" && return 0
	RE=$1 LINE=$2${4:+$'\n'} awk '$0 ~ ENVIRON["RE"] && !d { print ENVIRON["LINE"]; d = 1 }
		{ print }
		END { if (!d) exit 1 }' "$3" | update "$3"
}

# After the last line matching RE, a blank line and LINE.
add_block_after() {
	grep -qxF "$2" "$3" && return 0
	RE=$1 LINE=$2 awk '{ l[NR] = $0; if ($0 ~ ENVIRON["RE"]) last = NR }
		END { if (!last) exit 1
		      for (i = 1; i <= NR; i++) { print l[i]
			if (i == last) { print ""; print ENVIRON["LINE"] } } }' \
		"$3" | update "$3"
}

# What the readahead tests need, and the ARCH names of 64-bit machines
# (the kernel's top Makefile exports x86 and riscv for both widths;
# run_vmtests.sh runs them where uname says 64-bit, VADDR64).
only64='The readahead tests make 2 GiB loop images and map GiBs: 64-bit only.'
arch64='arm64 mips64 parisc64 powerpc riscv riscv64 s390x sparc64 x86 x86_64 s390'
if [ -n "$ours" ]; then
	cg_bins='READAHEAD_CGROUP_BINS := $(patsubst %,$(OUTPUT)/%,$(READAHEAD_CGROUP_TESTS))'
	# The lists, before the TEST_PROGS block; the cgroup list once a test
	# of it is in.
	grep -q '^TEST_GEN_FILES += \$(READAHEAD_TESTS)' "$mk" ||
		add_before '^TEST_PROGS \+= ' "$(printf '%s\n' \
			"# $only64" \
			"ifneq (,\$(filter \$(ARCH),$arch64))" \
			'TEST_GEN_FILES += $(READAHEAD_TESTS)' endif)" "$mk" blank
	for t in $tests; do
		[ -f "$top/selftests-mm/$t.c" ] || continue
		var=READAHEAD_TESTS
		! grep -q '^#include "ra_cgroup.h"$' "$top/selftests-mm/$t.c" ||
			var=READAHEAD_CGROUP_TESTS
		if grep -q "^$var += " "$mk"; then
			add_sorted "$var" "$t" "$mk"
		else
			add_before "^# $only64\$" "$var += $t" "$mk"
		fi
	done
	# The lib's headers, so that editing one rebuilds the tests (lib.mk).
	add_after_last '^LOCAL_HDRS \+= ' \
		'LOCAL_HDRS += $(selfdir)/mm/ra_cache.h $(selfdir)/mm/ra_fs.h' "$mk"
	lists='$(READAHEAD_TESTS)'
	! grep -q '^READAHEAD_CGROUP_TESTS += ' "$mk" || lists+=' $(READAHEAD_CGROUP_TESTS)'
	set_line '^TEST_GEN_FILES \+= \$\(READAHEAD_TESTS\)' "TEST_GEN_FILES += $lists" x "$mk"
	bins="READAHEAD_BINS := \$(patsubst %,\$(OUTPUT)/%,$lists)"
	if grep -q '^READAHEAD_BINS := ' "$mk"; then
		set_line '^READAHEAD_BINS := ' "$bins" x "$mk"
	else
		add_block_after '^\$\(OUTPUT\)/.*: LDLIBS \+= ' "$bins" "$mk"
	fi
	set_line '^\$\(READAHEAD_BINS\): ra_' "\$(READAHEAD_BINS): $lib_c" \
		'^READAHEAD_BINS := ' "$mk"
	if grep -q '^READAHEAD_CGROUP_TESTS += ' "$mk"; then
		add_after_last '^\$\(READAHEAD_BINS\): ' "$cg_bins" "$mk"
		add_after_last '^READAHEAD_CGROUP_BINS := ' \
			'$(READAHEAD_CGROUP_BINS): CFLAGS += -I$(selfdir)/cgroup/lib/include' "$mk"
		add_after_last '^\$\(READAHEAD_CGROUP_BINS\): CFLAGS' \
			'$(READAHEAD_CGROUP_BINS): ra_cgroup.c $(selfdir)/cgroup/lib/cgroup_util.c' "$mk"
		add_after_last '^LOCAL_HDRS \+= ' \
			'LOCAL_HDRS += $(selfdir)/mm/ra_cgroup.h $(selfdir)/cgroup/lib/include/cgroup_util.h' "$mk"
	fi
fi

# mm's tests with this project's cases: run with those cases only.
# prctl_thp_disable's make their file in the current directory: they run
# in the XFS that run_vmtests.sh mounts for split_huge_page_test, before
# it is unmounted.
for t in $patched; do
	case $t in
	prctl_thp_disable)
		after='^CATEGORY="thp" run_test \./split_huge_page_test '
		block=$(printf '%s\n' \
			'# prctl_thp_disable_file makes its file in the current directory.' \
			'if [ -n "${SPLIT_HUGE_PAGE_TEST_XFS_PATH}" ]; then' \
			'	pushd "${SPLIT_HUGE_PAGE_TEST_XFS_PATH}" > /dev/null' \
			'	CATEGORY="thp" run_test "${OLDPWD}/prctl_thp_disable" -f prctl_thp_disable_file' \
			'	popd > /dev/null' \
			'fi') ;;
	esac
	grep -qF "${block%%$'\n'*}" "$mm/run_vmtests.sh" ||
		BLOCK=$block RE=$after awk '{ print }
			$0 ~ ENVIRON["RE"] && !done { print ""; print ENVIRON["BLOCK"]; done = 1 }
			END { if (!done) exit 1 }' "$mm/run_vmtests.sh" | update "$mm/run_vmtests.sh"
done

# 7.x: one ksft_<category>.sh wrapper per category in TEST_PROGS.
if [ -n "$ours" ] && grep -q '^TEST_PROGS += ksft_' "$mm/Makefile"; then
	if [ ! -f "$mm/ksft_readahead.sh" ]; then
		printf '%s\n' '#!/bin/sh -e' '# SPDX-License-Identifier: GPL-2.0' '' \
			'./run_vmtests.sh -t readahead' > "$mm/ksft_readahead.sh"
	fi
	chmod 0755 "$mm/ksft_readahead.sh"
	add_sorted TEST_PROGS ksft_readahead.sh "$mm/Makefile"
fi

# 6.x: binaries listed one by one; 7.x ignores all but sources ("*").
if [ -f "$mm/.gitignore" ] && ! grep -qx '\*' "$mm/.gitignore"; then
	for t in $tests; do
		grep -qx "$t" "$mm/.gitignore" || echo "$t" >> "$mm/.gitignore"
	done
fi

# config: an option is for the tests its comment's globs name.
globs=
while read -r line; do
	case $line in
	'#'*:*) globs=$(echo "${line#\#}" | sed 's/:.*//; s/,/ /g'); continue ;;
	CONFIG_*) ;;
	*) continue ;;
	esac
	need=0
	for t in $tests; do
		for g in ${globs:-*}; do
			# shellcheck disable=SC2254 # a glob
			case $t in $g) need=1 ;; esac
		done
	done
	[ "$need" = 1 ] || continue
	grep -qx "$line" "$mm/config" || echo "$line" >> "$mm/config"
done < "$top/config"

# run_vmtests.sh: the category in usage() (after the last one, before the
# "example:" line) and its run lines (before the summary), both taken
# from run_vmtests-snippet.sh.
snippet=$top/run_vmtests-snippet.sh
if [ -n "$ours" ] && ! grep -q '^- readahead$' "$mm/run_vmtests.sh"; then
	USAGE=$(sed -n '/^# usage:$/,/^#$/{ /^#- /s/^#//p; /^#\t/s/^#//p; }' "$snippet") \
	awk '/^$/ && !u { held++; next }
		/^example: / && !u { print ENVIRON["USAGE"]; u = 1 }
		{ for (; held; held--) print ""; print }' \
		"$mm/run_vmtests.sh" | update "$mm/run_vmtests.sh"
fi
for t in $tests; do
	[ -f "$top/selftests-mm/$t.c" ] || continue
	line="CATEGORY=\"readahead\" run_test ./$t"
	if ! grep -qxF "$line" "$snippet"; then
		echo "$0: run_vmtests-snippet.sh has no run line for $t" >&2
		exit 2
	fi
	grep -qxF "	$line" "$mm/run_vmtests.sh" && continue
	# Before the first readahead line that sorts after it, else after
	# the last one, else (the first) in a block of its own before the
	# summary: the tests are built where the address space is 64-bit.
	LINE="	$line" LC_ALL=C awk '
		function put() { print ENVIRON["LINE"]; done = 1 }
		!done && index($0, "\tCATEGORY=\"readahead\" run_test") == 1 {
			seen = 1; if ($0 > ENVIRON["LINE"]) put() }
		!done && seen && index($0, "\tCATEGORY=\"readahead\" run_test") != 1 { put() }
		!done && !seen && /^echo "SUMMARY:/ {
			print "if [ $VADDR64 -ne 0 ]; then	# readahead tests: 64-bit only"
			put(); print "fi"; print "" }
		{ print }
		END { if (!done) exit 1 }' "$mm/run_vmtests.sh" | update "$mm/run_vmtests.sh"
done
echo "installed $(echo "$tests" | wc -w) readahead tests into $mm"
