#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guest side of `make bench`: run every benchmark in tests/bench/ (each writes a CSV
# file into the results folder), or those named like SUITES, then mark the run done.
. "$(dirname "$0")/lib.sh"

export OUT BUILD GUEST_ROOT RDMA_DEV
export BENCH_SECONDS=${vmt_bench_seconds:-3}
echo "kernel=$(uname -r)" >"$OUT/facts"
# The RDMA benchmarks run on soft-RoCE.
setup_rxe || guest_error "no $RDMA_DEV: the RDMA benchmarks will fail"
for bench in "$GUEST_ROOT"/tests/bench/*.sh; do
	name=$(basename "$bench" .sh)
	suite_wanted "$name" || continue
	echo "vmtest: benchmark $name" >/dev/console
	bash "$bench" >"$OUT/$name.log" 2>&1 ||
		guest_error "benchmark $name failed (log: $OUT/$name.log)"
done
teardown_rxe
echo ok >"$OUT/done"
