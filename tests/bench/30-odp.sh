#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# libibodp's odp-bench (userspace/tools/odp-bench.c): ODP against pinned memory on one
# device, side by side in one run: registration by MR size, first touch, steady state,
# invalidate + refault, prefetch. Writes $OUT/40-odp-lib.csv and .json.
set -u
bin=$BUILD/userspace/bin/odp-bench
[ -x "$bin" ] || { echo "odp-bench is not built ($bin)" >&2; exit 1; }
"$bin" --dev "$RDMA_DEV" --seconds "${BENCH_SECONDS:-3}" \
	--csv "$OUT/40-odp-lib.csv" --json "$OUT/40-odp-lib.json"
