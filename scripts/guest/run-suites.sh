#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guest side of `make test`: record what this VM is, create soft-RoCE, run every suite
# in tests/suites/ (each writes TAP files into the results folder), then check for leaks.
. "$(dirname "$0")/lib.sh"

export RDMA_DEV OUT BUILD GUEST_ROOT

{
	echo "kernel=$(uname -r)"
	[ -n "${vmt_suites:-}" ] && echo "suites=$vmt_suites"
	echo "cmdline=$(cat /proc/cmdline)"
} >"$OUT/facts"

# Boot-time KUnit suites bounce on purpose: measure swiotlb use from here on.
echo 0 >/sys/kernel/debug/swiotlb/io_tlb_used_hiwater 2>/dev/null

# A command a suite calls that does not exist (a typo, a helper it did not source) fails
# the run by name, even when the suite goes on and writes its other TAP files.
command_not_found_handle() {
	echo "vmtest: error: suite $VMT_SUITE: $1: command not found" >/dev/console
	echo "bash: $1: command not found" >&2
	return 127
}
export -f command_not_found_handle

setup_rxe
rxe_ready=$?
# After setup_rxe: with a modular kernel the NIC exists only once its driver is loaded.
echo "iommu_group=$(iommu_group_type)" >>"$OUT/facts"
# The NUMA nodes the kernel sees (none listed without CONFIG_NUMA).
echo "numa_nodes=$(find /sys/devices/system/node -maxdepth 1 -name 'node[0-9]*' 2>/dev/null | wc -l)" \
	>>"$OUT/facts"
if [ $rxe_ready = 0 ]; then
	for suite in "$GUEST_ROOT"/tests/suites/*.sh; do
		name=$(basename "$suite" .sh)
		suite_wanted "$name" || continue
		if ! suite_class_here "$suite"; then
			echo "vmtest: suite $name not run: class $(declared_class "$suite"), which this profile leaves to others" \
				>/dev/console
			continue
		fi
		run_suite "$suite" suite
		armed=$(fault_injection_off)
		[ -z "$armed" ] || guest_error "suite $name left fault injection armed: $armed (disarmed)"
	done
fi
# How many swiotlb slots were ever in use: proves whether DMA bounced during the run.
echo "swiotlb_hiwater=$(cat /sys/kernel/debug/swiotlb/io_tlb_used_hiwater 2>/dev/null || echo unknown)" \
	>>"$OUT/facts"
teardown_rxe

kmemleak_report
echo ok >"$OUT/done"
