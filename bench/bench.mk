# SPDX-License-Identifier: GPL-2.0
#
# fio workloads and a sqlite3 client on several kernels.  Included from
# the top Makefile:
#
#   make bench [KERNELS="host 6.18 7.3 v7.3+restart_v2 ..."] [BENCH_ONLY=regex]
#
# writes bench/RESULTS.md and bench/chart.png (see bench/bench.sh for the
# kernel names).  make bench-parse checks the job files with fio
# --parse-only.

BENCH_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
KERNELS ?= host 6.18 v7.3 v7.3+restart_v2 v7.3+fixes

bench:
	$(BENCH_DIR)/bench.sh --kernels '$(KERNELS)' \
		$(if $(BENCH_ONLY),--only '$(BENCH_ONLY)')

bench-parse:
	@for f in $(BENCH_DIR)/jobs/*.fio; do \
		BENCH_MNT=/tmp fio --parse-only $$f || exit 1; done
	@echo "bench-parse: job files parse"

.PHONY: bench bench-parse
