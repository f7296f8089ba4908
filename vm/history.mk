# SPDX-License-Identifier: GPL-2.0
#
# Kernel history.  Included from the top Makefile:
#
#   make history [HISTORY_ARGS="--full --series '6.12 7.3'"]
#
# runs the suite in QEMU on the newest Debian cloud kernel of each series
# from 6.1 to 7.3, and on arm64 (4 and 16 KiB pages) and ppc64el (64 KiB)
# kernels (fetched with vm/debian-kernel.sh; the tests cross-built) and writes
# verdicts/HISTORY.md: every test on every kernel, verdict and figure.
# HISTORY_ARGS passes options to vm/history.sh (see its usage).

HISTORY_SH := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))/history.sh

history: all
	$(MAKE) ARCH=arm64 OUTPUT='$(OUTPUT)-arm64' all
	$(MAKE) ARCH=powerpc OUTPUT='$(OUTPUT)-powerpc' all
	$(HISTORY_SH) --build '$(OUTPUT)' $(HISTORY_ARGS)

.PHONY: history
