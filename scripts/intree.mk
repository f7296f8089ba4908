# SPDX-License-Identifier: GPL-2.0
#
# The tests in a 7.3 tree's CI, and the patch series for that tree.
# Included from the top Makefile:
#
#   make intree-test [INTREE_ARGS="--host | --keep DIR | --kernel K --modules M"]
#                  fresh linux-source-7.3 tree, install-in-tree, kselftest
#                  install of mm, run_kselftest.sh -t mm:ksft_readahead.sh
#                  in QEMU on Debian's 7.3 kernel, verdicts vs the table
#   make series [SERIES_OUT=dir] [SERIES_ARGS="--keep DIR | --no-build"]
#                  the patch series against pristine 7.3, the first
#                  with the tests that pass there, then one per fix
#                  (into build/series by default), each checked with
#                  checkpatch --strict, git am, a W=1 build and its
#                  verdicts

INTREE_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))

intree-test:
	$(INTREE_DIR)/intree-test.sh $(INTREE_ARGS)

.PHONY: intree-test

series:
	$(INTREE_DIR)/make-series.sh $(if $(SERIES_OUT),--out '$(SERIES_OUT)') $(SERIES_ARGS)

.PHONY: series
