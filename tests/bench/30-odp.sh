#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ODP against pinned memory on rxe (tests/bench/odp_bench.c), twice in one run: with
# ODP pages linked into an IOVA on the NIC (rxe's default) and with rxe.odp_virt_dma=1
# (pages used directly, no DMA mapping). Writes $OUT/30-odp.csv:
# metric,memory,path,value,unit
set -u
param=/sys/module/rdma_rxe/parameters/odp_virt_dma
[ -w "$param" ] || { echo "rxe has no odp_virt_dma parameter (no rxe ODP in this kernel)" >&2; exit 1; }
csv=$OUT/30-odp.csv
echo "metric,memory,path,value,unit" >"$csv"
rc=0
for virt in 0 1; do
	path=$([ $virt = 1 ] && echo virtual-dma || echo linked)
	echo $virt >"$param"
	if ! out=$("$BUILD/bench/bin/odp_bench" --dev "$RDMA_DEV" 2>&1); then
		echo "odp_bench ($path): $out" >&2
		rc=1
		continue
	fi
	echo "$out"
	echo "$out" | sed -n '2,$p' | awk -F, -v p="$path" '{ print $1 "," $2 "," p "," $3 "," $4 }' >>"$csv"
done
echo 0 >"$param"
exit $rc
