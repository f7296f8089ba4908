# SPDX-License-Identifier: GPL-2.0
#
# The "readahead" category of tools/testing/selftests/mm/run_vmtests.sh.
# scripts/install-in-tree.sh adds the usage lines (without their leading
# '#') to the category list in usage(), and the run_test lines before the
# SUMMARY line.
#
# usage:
#- readahead
#	mmap readahead: major faults of patterned reads of cold files
#
# run_test:
CATEGORY="readahead" run_test ./readahead_sticky_miss
CATEGORY="readahead" run_test ./readahead_descending
CATEGORY="readahead" run_test ./readahead_vma_boundary
CATEGORY="readahead" run_test ./readahead_async_marker
CATEGORY="readahead" run_test ./readahead_read_around
