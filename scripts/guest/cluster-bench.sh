#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The cross-host part of `make bench`, on node0 of a two-node cluster (scripts/cluster.sh):
# every benchmark in tests/bench/cluster/ (each writes a CSV file into node0's results
# folder), then the run is marked done.
. "$(dirname "$0")/lib.sh"

export RDMA_DEV OUT BUILD GUEST_ROOT BENCH_REPS
{
	echo "kernel=$(uname -r)"
	echo "iommu_group=$(iommu_group_type)"
} >"$OUT/facts"
for bench in "$GUEST_ROOT"/tests/bench/cluster/*.sh; do
	name=$(basename "$bench" .sh)
	echo "vmtest: cross-host benchmark $name" >/dev/console
	bash "$bench" >"$OUT/$name.out" 2>&1 ||
		guest_error "cross-host benchmark $name failed (log: $OUT/$name.log)"
done
echo ok >"$OUT/done"
