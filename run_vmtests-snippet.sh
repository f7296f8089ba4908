# SPDX-License-Identifier: GPL-2.0
#
# The "readahead" category of tools/testing/selftests/mm/run_vmtests.sh.
# scripts/install-in-tree.sh adds the usage lines (without their leading
# '#') to the category list in usage(), before its "example:" line, and
# the run line of each test it installs, at its sorted place, in an
# "if [ $VADDR64 -ne 0 ]" block before the SUMMARY line (the Makefile
# builds the tests on 64-bit only); on 7.x trees ksft_readahead.sh runs
# the category.
#
# usage:
#- readahead
#	mmap readahead: major faults and pages read by patterned faults on cold files
#
# run:
CATEGORY="readahead" run_test ./readahead_advice
CATEGORY="readahead" run_test ./readahead_async_marker
CATEGORY="readahead" run_test ./readahead_descending
CATEGORY="readahead" run_test ./readahead_eof
CATEGORY="readahead" run_test ./readahead_exec_mapping
CATEGORY="readahead" run_test ./readahead_exec_random
CATEGORY="readahead" run_test ./readahead_fadv_random
CATEGORY="readahead" run_test ./readahead_memory_limit
CATEGORY="readahead" run_test ./readahead_random_reader
CATEGORY="readahead" run_test ./readahead_read_around
CATEGORY="readahead" run_test ./readahead_seq_midfile
CATEGORY="readahead" run_test ./readahead_sticky_miss
CATEGORY="readahead" run_test ./readahead_thp_refault
CATEGORY="readahead" run_test ./readahead_thrash_locked
CATEGORY="readahead" run_test ./readahead_thrash_workingset
CATEGORY="readahead" run_test ./readahead_vma_boundary
CATEGORY="readahead" run_test ./readahead_window
