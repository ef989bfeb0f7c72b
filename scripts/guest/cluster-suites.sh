#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The two-host suites of `make test`, run on node0 of a two-node cluster
# (scripts/cluster.sh): each suite in tests/cluster/ talks to node1 and writes TAP files
# into node0's results folder. The same facts and limits as run-suites.sh.
. "$(dirname "$0")/lib.sh"

export RDMA_DEV OUT BUILD GUEST_ROOT TIME_FACTOR
{
	echo "kernel=$(uname -r)"
	[ -n "${vmt_suites:-}" ] && echo "suites=$vmt_suites"
	echo "iommu_group=$(iommu_group_type)"
} >"$OUT/facts"

for suite in "$GUEST_ROOT"/tests/cluster/*.sh; do
	suite_wanted "$(basename "$suite" .sh)" || continue
	run_suite "$suite" "two-host suite"
done
echo ok >"$OUT/done"
