#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# libibodp's odp-bench (userspace/tools/odp-bench.c): ODP against pinned memory on one
# device, side by side in one run: registration by MR size, first touch, steady state,
# invalidate + refault, prefetch, kernel memory per page. Twice when the kernel has our
# rxe: with ODP pages linked into an IOVA on the NIC (rxe's default; every section, into
# $OUT/30-odp.csv and .json) and with rxe.odp_virt_dma=1, pages used directly with no DMA
# mapping (the sections that differ, into $OUT/30-odp-virtual-dma.csv).
set -u
bin=$BUILD/userspace/bin/odp-bench
[ -x "$bin" ] || { echo "odp-bench is not built ($bin)" >&2; exit 1; }
param=/sys/module/rdma_rxe/parameters/odp_virt_dma
# First touch over 16 MiB (16 messages a repetition), not odp-bench's 4 MiB: on this
# machine the medians of 4 MiB moved by up to 0.15 between two runs of one kernel.
touch=16M
rc=0
[ ! -w "$param" ] || echo 0 >"$param"
echo "== pages linked into an IOVA (rxe's default)"
"$bin" --dev "$RDMA_DEV" --seconds "${BENCH_SECONDS:-3}" --touch-size "$touch" \
	--csv "$OUT/30-odp.csv" --json "$OUT/30-odp.json" || rc=1
if [ -w "$param" ]; then
	echo "== rxe.odp_virt_dma=1: pages used directly"
	echo 1 >"$param"
	"$bin" --dev "$RDMA_DEV" --seconds "${BENCH_SECONDS:-3}" --touch-size "$touch" \
		--only first_touch,steady,memory --csv "$OUT/30-odp-virtual-dma.csv" || rc=1
	echo 0 >"$param"
else
	# Another kernel (make bench COMPARE=) has no such path: nothing to measure.
	echo "== no rxe.odp_virt_dma in this kernel: the pages-used-directly path is not measured"
fi
exit $rc
