#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guest side of `make bench`: run every benchmark in tests/bench/ (each writes a CSV
# file into the results folder), then mark the run done.
. "$(dirname "$0")/lib.sh"

export OUT BUILD GUEST_ROOT
export BENCH_SECONDS=${vmt_bench_seconds:-3}
echo "kernel=$(uname -r)" >"$OUT/facts"
for bench in "$GUEST_ROOT"/tests/bench/*.sh; do
	name=$(basename "$bench" .sh)
	echo "vmtest: benchmark $name" >/dev/console
	bash "$bench" >"$OUT/$name.log" 2>&1 ||
		guest_error "benchmark $name failed (log: $OUT/$name.log)"
done
echo ok >"$OUT/done"
