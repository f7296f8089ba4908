# SPDX-License-Identifier: GPL-2.0
#
# Standalone build of the mmap readahead selftests.
#
#   make                 build the tests into $(OUTPUT)
#   make run_tests       run them on the running kernel (needs root)
#   make install-in-tree KDIR=<kernel tree>
#                        copy them into tools/testing/selftests/mm of a tree
#   make checkpatch      checkpatch.pl --strict on every C file
#   make deps            install what building and running needs (apt)
#   make check           the project's own tests (needs root)
#   make vm-test KERNEL=<image> [MODULES=...] [MEM=2G] [CMDLINE=...]
#                        run them in QEMU on another kernel
#   make validate        the kill matrix: every test on every kernel and
#                        emulated change, against verdicts/expected.tsv
#
# The kselftest headers come from, in order: KSFT_DIR=<tree>/tools/testing/
# selftests; the kernel tree this directory sits in; Debian's
# linux-source-6.12 package, of which only the needed files are extracted
# into $(CACHE).

TOP := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
OUTPUT ?= $(TOP)/build
CACHE ?= /var/cache/readahead-selftests
LINUX_SOURCE ?= /usr/src/linux-source-6.12.tar.xz
SRC_CACHE := $(CACHE)/linux-source-6.12

TESTS := readahead_sticky_miss readahead_descending readahead_vma_boundary \
	 readahead_async_marker
LIB := $(TOP)/lib/ra_util.c
HDRS := $(TOP)/lib/ra_util.h

# The tree this checkout sits in, if any.
TREE_KSFT := $(shell d=$(TOP); while [ "$$d" != / ]; do d=$$(dirname $$d); \
	[ -f $$d/tools/testing/selftests/kselftest_harness.h ] && \
	{ echo $$d/tools/testing/selftests; break; }; done)

ifeq ($(KSFT_DIR),)
ifneq ($(TREE_KSFT),)
KSFT_DIR := $(TREE_KSFT)
else
KSFT_DIR := $(SRC_CACHE)/tools/testing/selftests
KSFT_FROM_PACKAGE := 1
endif
endif

CC ?= gcc
CFLAGS ?= -O2 -g
# The harness headers are included as system headers: the 6.12 ones are
# not -Wextra clean.
CFLAGS += -Wall -Wextra -Werror -isystem $(KSFT_DIR)/mm -I $(TOP)/lib
LDLIBS += -lcap -lpthread

BINS := $(addprefix $(OUTPUT)/,$(TESTS))
RUNNER := $(OUTPUT)/run-suite.sh $(OUTPUT)/settings \
	  $(OUTPUT)/kselftest/runner.sh $(OUTPUT)/kselftest/prefix.pl

all: $(BINS) $(RUNNER)

$(OUTPUT)/%: $(TOP)/selftests-mm/%.c $(LIB) $(HDRS) $(KSFT_DIR)/kselftest_harness.h
	@mkdir -p $(OUTPUT)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

$(OUTPUT)/run-suite.sh: $(TOP)/scripts/run-suite.sh
	@mkdir -p $(OUTPUT)
	install -m 0755 $< $@

$(OUTPUT)/settings:
	@mkdir -p $(OUTPUT)
	echo timeout=600 > $@

$(OUTPUT)/kselftest/%: $(KSFT_DIR)/kselftest/%
	@mkdir -p $(OUTPUT)/kselftest
	install -m 0755 $< $@

ifeq ($(KSFT_FROM_PACKAGE),1)
# Only the kselftest headers, runner and checkpatch are extracted.
KSFT_MEMBERS := tools/testing/selftests/kselftest.h \
	tools/testing/selftests/kselftest_harness.h \
	tools/testing/selftests/kselftest/runner.sh \
	tools/testing/selftests/kselftest/prefix.pl \
	scripts/checkpatch.pl scripts/spelling.txt \
	scripts/const_structs.checkpatch
$(KSFT_DIR)/kselftest_harness.h $(KSFT_DIR)/kselftest/runner.sh \
$(KSFT_DIR)/kselftest/prefix.pl $(SRC_CACHE)/scripts/checkpatch.pl:
	@test -f $(LINUX_SOURCE) || { echo "$(LINUX_SOURCE) missing:" \
		"apt-get install linux-source-6.12, or set KSFT_DIR" >&2; exit 1; }
	mkdir -p $(CACHE)
	tar -xJf $(LINUX_SOURCE) -C $(CACHE) \
		$(addprefix linux-source-6.12/,$(KSFT_MEMBERS))
	mkdir -p $(KSFT_DIR)/mm
	touch $(KSFT_DIR)/kselftest_harness.h
endif

CHECKPATCH ?= $(firstword $(wildcard $(KSFT_DIR)/../../../scripts/checkpatch.pl) \
	      $(SRC_CACHE)/scripts/checkpatch.pl)

checkpatch: $(CHECKPATCH)
	perl $(CHECKPATCH) --no-tree --strict --terse --show-types \
		-f $(TOP)/selftests-mm/*.c $(TOP)/lib/*.[ch] $(TOP)/validation/repro/*.c
	@echo "checkpatch: clean"

run_tests: all
	$(OUTPUT)/run-suite.sh

DEBS := gcc clang make libc6-dev libcap-dev perl util-linux e2fsprogs \
	xfsprogs linux-source-6.12 xz-utils bc bison flex libelf-dev \
	libssl-dev qemu-system-x86 busybox-static cpio kmod patch procps dash

deps:
	apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-upgrade $(DEBS)

check:
	$(TOP)/scripts/check.sh

validate: all
	$(TOP)/validation/matrix.sh --results $(TOP)/validation/RESULTS.md

install-in-tree:
	@test -n "$(KDIR)" -a -d "$(KDIR)/tools/testing/selftests/mm" || \
		{ echo "usage: make install-in-tree KDIR=<kernel tree>" >&2; exit 2; }
	$(TOP)/scripts/install-in-tree.sh $(KDIR)

clean:
	rm -rf $(OUTPUT)

-include $(TOP)/vm/vm.mk

.PHONY: all run_tests checkpatch install-in-tree clean deps check validate
