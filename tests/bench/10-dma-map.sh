#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# DMA mapping cost per page: dma_map_page() one page at a time against the IOVA-based
# API (one transaction: allocate, link each page, one sync, one destroy; and links into
# an IOVA range allocated once). The kernel's dma_map_benchmark driver is bound to QEMU's
# edu device.
# Each batch size runs 5 repetitions, the three modes taking turns in each.
# Writes $OUT/10-dma-map.csv: pages,mode,rep,loops,map_ns_per_page,unmap_ns_per_page
set -u
tool=$BUILD/bench/bin/dma_map_benchmark
reps=5
# BENCH_SECONDS is each measurement's time, its repetitions together (whole seconds each).
seconds=$(( (${BENCH_SECONDS:-3} + reps - 1) / reps ))

. "$GUEST_ROOT/scripts/guest/lib.sh"
bind_edu dma_map_benchmark >/dev/null || exit 1
[ -e /sys/kernel/debug/dma_map_benchmark ] ||
	{ echo "dma_map_benchmark bound but made no debugfs file" >&2; exit 1; }

csv=$OUT/10-dma-map.csv
echo "pages,mode,rep,loops,map_ns_per_page,unmap_ns_per_page" >"$csv"
rc=0
for pages in 1 16 64 512; do
	for rep in $(seq 0 $((reps - 1))); do
		for mode in pages iova iova-link; do
			# FROM_DEVICE: nothing to stain between iterations, all time goes to mapping.
			if ! res=$("$tool" -m "$mode" -g "$pages" -s "$seconds" -d 2 -b 32 2>&1); then
				echo "dma_map_benchmark -m $mode -g $pages: $res" >&2
				# Without an IOMMU the IOVA modes do not exist: their cells stay empty.
				case $res in *"needs the IOVA-based DMA API"*) ;; *) rc=1 ;; esac
				continue
			fi
			echo "$res"
			echo "$res" | sed -n 's/^mode:\([a-z-]*\) loops:\([0-9]*\) average per page(ns): map:\([0-9.]*\) unmap:\([0-9.]*\)$/'"$pages"',\1,'"$rep"',\2,\3,\4/p' >>"$csv"
		done
	done
done
release_edu
exit $rc
