# SPDX-License-Identifier: GPL-2.0
#
# The "readahead" category of tools/testing/selftests/mm/run_vmtests.sh.
# scripts/install-in-tree.sh adds the usage lines (without their leading
# '#') to the category list in usage(), before its "example:" line, and
# the run lines, as they are, before the SUMMARY line; on 7.x trees
# ksft_readahead.sh runs the category. The run lines take every
# readahead_* binary, so that a patch adding a test need not touch
# run_vmtests.sh and two series adding tests apply in either order.
#
# usage:
#- readahead
#	mmap readahead: major faults of patterned reads of cold files
#
# run:
# Every readahead test built (an in-tree build leaves the sources beside).
for t in ./readahead_*; do
	[ -f "$t" ] && [ -x "$t" ] || continue
	CATEGORY="readahead" run_test "$t"
done
