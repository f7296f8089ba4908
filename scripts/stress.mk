# SPDX-License-Identifier: GPL-2.0
#
# Repeated runs, under load and in QEMU: verdict changes per test, wall
# times, leftovers. Not part of "make check". Included from the top
# Makefile:
#
#   make stress [STRESS_HOST=100] [STRESS_VM=20] [STRESS_KERNELS="6.18 7.3"]
#               [STRESS_MEM=512M] [STRESS_ARGS="--no-hog --report FILE"]

STRESS_HOST ?= 100
STRESS_VM ?= 20
STRESS_KERNELS ?= 6.18 7.3
STRESS_MEM ?= 512M

stress:
	$(TOP)/scripts/stress.sh --host '$(STRESS_HOST)' --vm '$(STRESS_VM)' \
		--kernels '$(STRESS_KERNELS)' --mem '$(STRESS_MEM)' $(STRESS_ARGS)

.PHONY: stress
