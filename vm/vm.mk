# SPDX-License-Identifier: GPL-2.0
#
# Run the suite in QEMU on a given kernel.  Included from the top Makefile:
#
#   make vm-test KERNEL=<bzImage|vmlinuz> [MODULES=<dir|.deb>] [MEM=2G]
#                [CMDLINE="kernel args"] [VM_TIMEOUT=3600] [VM_ARGS=...]
#
# MODULES is needed when loop, ext4 or xfs are modules.  VM_ARGS passes
# further options to vm/run-vm.sh (e.g. "--env NAME=VALUE --log FILE").
# A Debian kernel can be fetched with vm/debian-kernel.sh:
#
#   make vm-test $(vm/debian-kernel.sh 6.12)

VM_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
MEM ?= 2G
# An emulated arm64 guest takes up to 12 minutes on a loaded machine.
VM_TIMEOUT ?= 3600

vm-test: all
	@test -n "$(KERNEL)" || { echo "usage: make vm-test KERNEL=<image>" \
		"[MODULES=<dir|.deb>] [MEM=2G] [CMDLINE=...]" >&2; exit 2; }
	$(VM_DIR)/run-vm.sh --kernel '$(KERNEL)' \
		$(if $(MODULES),--modules '$(MODULES)') \
		--mem '$(MEM)' --timeout '$(VM_TIMEOUT)' \
		$(if $(CMDLINE),--cmdline '$(CMDLINE)') \
		$(if $(OUTPUT),--build '$(OUTPUT)') $(VM_ARGS)

.PHONY: vm-test
