# SPDX-License-Identifier: GPL-2.0
#
# Standalone build of the mmap readahead selftests.
#
#   make                 build the tests into $(OUTPUT)
#   make ARCH=arm64      build them for arm64 (or ARCH=powerpc: ppc64le)
#                        with Debian's cross compiler, statically, into
#                        build-<ARCH>/, for vm/run-vm.sh
#   make run_tests       run them on the running kernel (needs root)
#   make install-in-tree KDIR=<kernel tree>
#                        copy them into tools/testing/selftests/mm of a tree
#   make checkpatch      checkpatch.pl --strict on every C file and on
#                        the patches to mm's own tests
#   make deps            install what any target here needs (apt, no
#                        recommends, nothing upgraded that need not be);
#                        with run_tests or all only, what those need
#   make check           the project's own quick tests, one to three minutes
#                        (needs root)
#   make check-full      all of them, what .ci/run runs: check, the
#                        in-tree run, the series, Debian kernels and the
#                        kill matrix in QEMU, fresh-check
#   make fresh-check     make deps, run_tests, the cross builds and the
#                        in-tree kselftest install in a minimal Debian
#                        root (mmdebstrap)
#   make vm-test KERNEL=<image> [MODULES=...] [MEM=2G] [CMDLINE=...]
#                        run them in QEMU on another kernel
#   make validate        the kill matrix: every test on every kernel and
#                        validation configuration (linux-source-7.3 with
#                        validation/patches), against verdicts/expected.tsv
#   make debug-check [DEBUG_ARGS="--keep DIR"]
#                        the fixes (v7.3+fixes) on a kernel with lockdep,
#                        DEBUG_VM and KASAN and on one with KCSAN, in
#                        QEMU: the suite, then
#                        stress-ng's mmap, readahead and madvise stressors
#                        on ext4 and XFS; passes on a clean console and
#                        stress-ng ok: validation/DEBUG-RESULTS.txt
#   make intree-test     a fresh 7.3 tree's CI run of the tests, in QEMU
#   make series          the patch series for 7.3, checked
#   make stress [STRESS_HOST=100] [STRESS_VM=20]
#                        repeated runs, under load and in QEMU: verdict
#                        changes, wall times, leftovers
#   make bench [KERNELS="host 6.18 7.3 ..."]
#                        fio workloads and a sqlite3 client per
#                        kernel: bench/RESULTS.md
#
# The kselftest headers, mm's vm_util.[ch] and the uapi headers come from,
# in order: KSFT_DIR=<tree>/tools/testing/selftests or KDIR=<tree>; the
# kernel tree this directory sits in; Debian's linux-source-7.3 package (fetched with
# vm/debian-apt.sh), of which only the needed files are extracted into
# $(CACHE), with its uapi headers installed by the tree's own
# headers_install.sh. A tree's uapi headers are used when "make headers"
# was run there.

TOP := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))

# ARCH is the kernel's name of the architecture the tests are built for
# (x86, arm64, powerpc; uname's and Debian's names are taken too).
# Another one than the machine's is cross-compiled (CROSS_COMPILE, the
# Debian triplet by default) and linked statically, so that the binaries
# run in any guest userland.
karch = $(strip $(patsubst x86_64,x86,$(patsubst amd64,x86,$(patsubst aarch64,arm64, \
	$(patsubst ppc64le,powerpc,$(patsubst ppc64el,powerpc,$(1)))))))
HOST_ARCH := $(call karch,$(shell uname -m))
ARCH ?= $(HOST_ARCH)
override ARCH := $(call karch,$(ARCH))
ifneq ($(ARCH),$(HOST_ARCH))
CROSS_TRIPLET := $(or $(if $(filter arm64,$(ARCH)),aarch64-linux-gnu), \
	$(if $(filter powerpc,$(ARCH)),powerpc64le-linux-gnu), \
	$(error ARCH=$(ARCH): cross builds are for arm64 and powerpc))
DEB_ARCH := $(if $(filter arm64,$(ARCH)),arm64,ppc64el)
CROSS_COMPILE ?= $(CROSS_TRIPLET)-
CC := $(CROSS_COMPILE)gcc
OUTPUT ?= $(TOP)/build-$(ARCH)
endif
OUTPUT ?= $(TOP)/build
CACHE ?= /var/cache/readahead-selftests
KSFT_SERIES := 7.3
# Debian's tarball; vm/debian-apt.sh fetches it when this is left empty.
LINUX_SOURCE ?=
SRC_CACHE := $(CACHE)/linux-source-$(KSFT_SERIES)
# The private apt state of vm/debian-apt.sh, for every script run from here.
export RA_APT_CACHE ?= $(CACHE)/apt

TESTS := $(sort $(basename $(notdir $(wildcard $(TOP)/selftests-mm/*.c))))
# mm's own tests that get cases of this project: selftests-mm/<test>.patch
# applies to mm/<test>.c of the kselftest sources.
PATCHED_TESTS := $(sort $(basename $(notdir $(wildcard $(TOP)/selftests-mm/*.patch))))
# What every test links, and what only the tests in a cgroup of their own
# link (those that include ra_cgroup.h), with the cgroup selftests'
# library.
LIB := $(addprefix $(TOP)/lib/,ra_fs.c ra_cache.c)
HDRS := $(addprefix $(TOP)/lib/,ra_fs.h ra_cache.h)
CG_LIB := $(TOP)/lib/ra_cgroup.c
CG_HDRS := $(TOP)/lib/ra_cgroup.h
CG_TESTS := $(sort $(basename $(notdir $(shell grep -l '^\#include "ra_cgroup.h"' \
	$(TOP)/selftests-mm/*.c))))

# The tree this checkout sits in, if any.
TREE_KSFT := $(shell d=$(TOP); while [ "$$d" != / ]; do d=$$(dirname $$d); \
	[ -f $$d/tools/testing/selftests/kselftest_harness.h ] && \
	{ echo $$d/tools/testing/selftests; break; }; done)

ifeq ($(KSFT_DIR),)
# KDIR on the command line only: an exported one is often a module build's.
ifeq ($(origin KDIR),command line)
KSFT_DIR := $(abspath $(KDIR))/tools/testing/selftests
else ifneq ($(TREE_KSFT),)
KSFT_DIR := $(TREE_KSFT)
else
KSFT_DIR := $(SRC_CACHE)/tools/testing/selftests
KSFT_FROM_PACKAGE := 1
endif
endif
KHDR := $(or $(wildcard $(abspath $(KSFT_DIR)/../../../usr/include)), \
	$(SRC_CACHE)/usr/include)
# The package's asm/ headers are installed per architecture, beside the
# others. A tree has its own, for the ARCH of its "make headers": x86's
# (asm/ldt.h) cannot serve another one.
ifeq ($(KHDR),$(SRC_CACHE)/usr/include)
KHDR_ARCH := $(SRC_CACHE)/usr/arch-$(ARCH)/include
else ifneq ($(ARCH),$(HOST_ARCH))
ifneq ($(wildcard $(KHDR)/asm/ldt.h),)
$(error $(KHDR) holds x86 headers: run "make ARCH=$(ARCH) headers" in the tree)
endif
endif
VM_UTIL := $(KSFT_DIR)/mm/vm_util.c
# The cgroup selftests' library, as other selftests link it (libcgroup.mk).
CG_UTIL := $(KSFT_DIR)/cgroup/lib/cgroup_util.c
CG_INC := $(KSFT_DIR)/cgroup/lib/include

CC ?= gcc
# For the tools run at build time (unifdef).
HOSTCC ?= cc
CFLAGS ?= -O2 -g
# As in tools/testing/selftests/lib.mk and mm/Makefile: _GNU_SOURCE, the
# harness as "kselftest_harness.h", installed uapi headers.
KSFT_CFLAGS := -D_GNU_SOURCE= -I $(KSFT_DIR) -I $(KSFT_DIR)/mm \
	$(if $(KHDR_ARCH),-isystem $(KHDR_ARCH)) -isystem $(KHDR)
# The checkout's path mapped away (__FILE__, debug info): the same
# sources build the same binaries wherever they are checked out, which
# lets the kill matrix know a run's inputs (vm/run-kernels.sh --reuse).
PATH_MAP := -ffile-prefix-map=$(TOP)=.
CFLAGS += -Wall -Wextra -Werror $(KSFT_CFLAGS) -I $(TOP)/lib $(PATH_MAP)
LDLIBS += -lpthread
ifneq ($(ARCH),$(HOST_ARCH))
LDFLAGS += -static
endif
# vm_util.c and cgroup_util.c are the tree's, built with mm's own
# warnings (-Wall).
VM_UTIL_CFLAGS := -O2 -g -Wall -Werror $(KSFT_CFLAGS) $(PATH_MAP)

BINS := $(addprefix $(OUTPUT)/,$(TESTS))
PATCHED_BINS := $(addprefix $(OUTPUT)/,$(PATCHED_TESTS))
CG_BINS := $(addprefix $(OUTPUT)/,$(CG_TESTS))
RUNNER := $(OUTPUT)/run-suite.sh $(OUTPUT)/settings \
	  $(addprefix $(OUTPUT)/kselftest/,runner.sh prefix.pl ktap_helpers.sh)

all: $(BINS) $(PATCHED_BINS) $(RUNNER)

$(OUTPUT)/vm_util.o: $(VM_UTIL) $(KSFT_DIR)/mm/vm_util.h $(KHDR)/linux/fs.h
	@mkdir -p $(OUTPUT)
	$(CC) $(VM_UTIL_CFLAGS) -c -o $@ $<

$(OUTPUT)/cgroup_util.o: $(CG_UTIL) $(CG_INC)/cgroup_util.h
	@mkdir -p $(OUTPUT)
	$(CC) $(VM_UTIL_CFLAGS) -I $(CG_INC) -c -o $@ $<

# One rule for every test: its source, the lib and vm_util.o; the tests of
# CG_TESTS add ra_cgroup.c and cgroup_util.o (and the cgroup headers).
$(OUTPUT)/%: $(TOP)/selftests-mm/%.c $(LIB) $(HDRS) $(OUTPUT)/vm_util.o \
	     $(KSFT_DIR)/kselftest_harness.h
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(filter %.c %.o,$^) $(LDLIBS)

$(CG_BINS): $(CG_LIB) $(CG_HDRS) $(OUTPUT)/cgroup_util.o
$(CG_BINS): CFLAGS += -I $(CG_INC)

# An mm test with this project's cases: its file with the patch applied
# (as is where the patch is in already: a tree it was installed in),
# built with mm's warnings and hugepage_settings.c, without the lib.
$(OUTPUT)/%.c: $(KSFT_DIR)/mm/%.c $(TOP)/selftests-mm/%.patch
	@mkdir -p $(OUTPUT)
	if patch -s -R -f --dry-run -o /dev/null $< $(word 2,$^) > /dev/null 2>&1; \
	then cp $< $@; else patch -s -o $@ $< $(word 2,$^); fi

$(OUTPUT)/hugepage_settings.o: $(KSFT_DIR)/mm/hugepage_settings.c \
			       $(KSFT_DIR)/mm/hugepage_settings.h
	@mkdir -p $(OUTPUT)
	$(CC) $(VM_UTIL_CFLAGS) -c -o $@ $<

$(PATCHED_BINS): $(OUTPUT)/%: $(OUTPUT)/%.c $(OUTPUT)/vm_util.o \
		 $(OUTPUT)/hugepage_settings.o $(KSFT_DIR)/kselftest_harness.h
	$(CC) $(VM_UTIL_CFLAGS) -I $(KSFT_DIR)/mm $(LDFLAGS) \
		-o $@ $(filter %.c %.o,$^) $(LDLIBS)

$(OUTPUT)/run-suite.sh: $(TOP)/scripts/run-suite.sh
	@mkdir -p $(OUTPUT)
	install -m 0755 $< $@

$(OUTPUT)/settings:
	@mkdir -p $(OUTPUT)
	echo timeout=600 > $@

$(OUTPUT)/kselftest/%: $(KSFT_DIR)/kselftest/%
	@mkdir -p $(OUTPUT)/kselftest
	install -m 0755 $< $@

# Only the kselftest headers and runner, mm's vm_util.[ch], the cgroup
# library, checkpatch and the uapi headers are extracted; the uapi headers
# are installed as "make headers" would, with the tree's
# headers_install.sh and unifdef.
KSFT_MEMBERS := tools/testing/selftests/kselftest.h \
	tools/testing/selftests/kselftest_harness.h \
	tools/testing/selftests/kselftest/runner.sh \
	tools/testing/selftests/kselftest/prefix.pl \
	tools/testing/selftests/kselftest/ktap_helpers.sh \
	tools/testing/selftests/mm/vm_util.c tools/testing/selftests/mm/vm_util.h \
	tools/testing/selftests/mm/hugepage_settings.c \
	tools/testing/selftests/mm/hugepage_settings.h \
	$(addprefix tools/testing/selftests/mm/,$(addsuffix .c,$(PATCHED_TESTS))) \
	tools/testing/selftests/cgroup/lib/cgroup_util.c \
	tools/testing/selftests/cgroup/lib/include/cgroup_util.h \
	tools/testing/selftests/clone3/clone3_selftests.h \
	scripts/checkpatch.pl scripts/spelling.txt \
	scripts/const_structs.checkpatch scripts/headers_install.sh \
	scripts/unifdef.c include/uapi arch/x86/include/uapi \
	arch/arm64/include/uapi arch/powerpc/include/uapi \
	scripts/syscallhdr.sh scripts/syscall.tbl arch/arm64/tools/syscall_64.tbl \
	arch/powerpc/kernel/syscalls/syscall.tbl \
	arch/x86/entry/syscalls/syscall_64.tbl
# What Kbuild generates in an architecture's uapi asm/: a wrapper
# for each asm-generic header the architecture does not provide, and
# unistd_<abi>.h from its syscall table (the ABIs of its Makefile.syscalls
# or syscalls/Makefile). $(1): arch, $(2): table, $(3): <abi>:<abis>...
comma := ,
define asm_generated
	d=usr/arch-$(1)/include/asm; mkdir -p $$d; \
	for h in $$(sed -n 's/^mandatory-y += //p' include/uapi/asm-generic/Kbuild) \
		 $$(sed -n 's/^generic-y += //p' arch/$(1)/include/uapi/asm/Kbuild); do \
		[ -e $$d/$$h ] || echo "#include <asm-generic/$$h>" > $$d/$$h; \
	done; \
	for a in $(3); do \
		sh scripts/syscallhdr.sh --emit-nr --abis $${a#*:} $(2) \
			$$d/unistd_$${a%%:*}.h; \
	done
endef

# The stamp names the member list and the header layout: a cache extracted
# for another is extracted anew.
SRC_STAMP := $(SRC_CACHE)/.extracted-$(firstword $(shell echo \
	'$(KSFT_MEMBERS) usr/arch-*/include' | cksum))

# Extracted into a directory of its own and renamed into place, so that
# concurrent builds never see a half-extracted cache; one extraction at a
# time.
$(SRC_STAMP):
	set -e; mkdir -p $(CACHE); exec 9> $(CACHE)/.linux-source.lock; flock 9; \
	[ ! -f $@ ] || exit 0; src='$(LINUX_SOURCE)'; [ -n "$$src" ] || \
		src=$$($(TOP)/vm/debian-apt.sh source $(KSFT_SERIES)) || { echo \
		"make: or take the headers from a $(KSFT_SERIES) tree where \"make headers\" ran: make KDIR=<tree>" >&2; \
		exit 3; }; \
	tmp=$$(mktemp -d $(SRC_CACHE).XXXXXX); \
	trap 'rm -rf "$$tmp"' EXIT; \
	tar -I 'xz -T0' -xf "$$src" -C "$$tmp" --strip-components=1 \
		$(addprefix linux-source-$(KSFT_SERIES)/,$(KSFT_MEMBERS)); \
	cd "$$tmp"; $(HOSTCC) -O2 -o scripts/unifdef scripts/unifdef.c; \
	find include/uapi arch/*/include/uapi -name '*.h' | while read -r f; do \
		case $$f in \
		include/*) o=usr/include/$${f#*/uapi/} ;; \
		*) a=$${f#arch/}; o=usr/arch-$${a%%/*}/include/$${f#*/uapi/} ;; \
		esac; \
		mkdir -p $${o%/*}; echo "$$f $$o"; \
	done | xargs -n 2 -P $$(nproc) sh scripts/headers_install.sh; \
	$(call asm_generated,x86,arch/x86/entry/syscalls/syscall_64.tbl, \
		64:common$(comma)64); \
	$(call asm_generated,arm64,arch/arm64/tools/syscall_64.tbl, \
		64:common$(comma)64$(comma)renameat$(comma)rlimit$(comma)memfd_secret); \
	$(call asm_generated,powerpc,arch/powerpc/kernel/syscalls/syscall.tbl, \
		64:common$(comma)nospu$(comma)64 32:common$(comma)nospu$(comma)32); \
	touch $(notdir $(SRC_STAMP)); chmod 0755 "$$tmp"; \
	rm -rf $(SRC_CACHE); mv -T "$$tmp" $(SRC_CACHE)

$(SRC_CACHE)/usr/include/linux/fs.h $(SRC_CACHE)/scripts/checkpatch.pl: $(SRC_STAMP)
ifneq ($(ARCH),$(HOST_ARCH))
$(OUTPUT)/vm_util.o $(OUTPUT)/cgroup_util.o $(OUTPUT)/hugepage_settings.o: $(SRC_STAMP)
endif
ifeq ($(KSFT_FROM_PACKAGE),1)
$(addprefix $(KSFT_DIR)/,kselftest_harness.h mm/vm_util.c mm/vm_util.h \
	mm/hugepage_settings.c mm/hugepage_settings.h \
	$(addprefix mm/,$(addsuffix .c,$(PATCHED_TESTS))) \
	cgroup/lib/cgroup_util.c cgroup/lib/include/cgroup_util.h \
	kselftest/runner.sh kselftest/prefix.pl kselftest/ktap_helpers.sh): $(SRC_STAMP)
endif

CHECKPATCH ?= $(firstword $(wildcard $(KSFT_DIR)/../../../scripts/checkpatch.pl) \
	      $(SRC_CACHE)/scripts/checkpatch.pl)

checkpatch: $(CHECKPATCH)
	perl $(CHECKPATCH) --no-tree --strict --terse --show-types \
		-f $(TOP)/selftests-mm/*.c $(TOP)/lib/*.[ch]
	$(if $(PATCHED_TESTS),perl $(CHECKPATCH) --no-tree --strict --terse \
		--show-types --no-signoff $(TOP)/selftests-mm/*.patch)
	@echo "checkpatch: clean"

run_tests: all
	@test "$(ARCH)" = "$(HOST_ARCH)" || { echo "run_tests: ARCH=$(ARCH) tests" \
		"do not run on this $(HOST_ARCH) machine (make vm-test)" >&2; exit 2; }
	$(OUTPUT)/run-suite.sh

# What the build and run_tests need: "make deps run_tests" (or "make
# deps all", for this machine's ARCH) installs only these; "make deps"
# with any other goal, or alone, installs DEBS, what any target needs
# (libcap-dev, libnuma-dev: mm's own tests, for the in-tree install).
RUN_DEBS := gcc make libc6-dev patch perl util-linux mount procps xz-utils \
	e2fsprogs xfsprogs btrfs-progs f2fs-tools
DEBS := $(RUN_DEBS) clang bc bison flex libelf-dev libnuma-dev libcap-dev python3 \
	libssl-dev qemu-system-x86 busybox-static cpio kmod dash \
	qemu-system-arm qemu-system-ppc gcc-aarch64-linux-gnu \
	gcc-powerpc64le-linux-gnu libc6-dev-arm64-cross libc6-dev-ppc64el-cross \
	fio gnuplot-nox rsync git curl ca-certificates mmdebstrap \
	zstd stress-ng sqlite3
DEPS_GOALS := $(filter-out deps,$(MAKECMDGOALS))

deps:
	@$(TOP)/scripts/deps.sh $(if $(and $(DEPS_GOALS),$(filter $(ARCH),$(HOST_ARCH)), \
		$(if $(filter-out run_tests all,$(DEPS_GOALS)),,1)),$(RUN_DEBS),$(DEBS))

check:
	$(TOP)/scripts/check.sh

check-full:
	$(TOP)/scripts/check.sh --full

fresh-check:
	$(TOP)/scripts/fresh-check.sh

validate: all
	$(TOP)/validation/matrix.sh --results $(TOP)/validation/RESULTS.md

debug-check: all
	$(TOP)/validation/debug-check.sh --build $(OUTPUT) \
		--results $(TOP)/validation/DEBUG-RESULTS.txt $(DEBUG_ARGS)

install-in-tree:
	@test -n "$(KDIR)" -a -d "$(KDIR)/tools/testing/selftests/mm" || \
		{ echo "usage: make install-in-tree KDIR=<kernel tree>" >&2; exit 2; }
	$(TOP)/scripts/install-in-tree.sh $(KDIR)

clean:
	rm -rf $(OUTPUT)

-include $(TOP)/vm/vm.mk
-include $(TOP)/vm/history.mk
-include $(TOP)/bench/bench.mk
-include $(TOP)/scripts/intree.mk
-include $(TOP)/scripts/stress.mk

.PHONY: all run_tests checkpatch install-in-tree clean deps check \
	check-full fresh-check validate debug-check
