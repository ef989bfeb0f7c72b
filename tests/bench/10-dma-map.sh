#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# DMA mapping cost per page: dma_map_page() one page at a time against the IOVA-based
# API (one transaction: allocate, link each page, one sync, one destroy; and links into
# an IOVA range allocated once). The kernel's dma_map_benchmark driver is bound to QEMU's
# edu device; the three modes run back to back for each batch size.
# Writes $OUT/10-dma-map.csv: pages,mode,loops,map_ns_per_page,unmap_ns_per_page
set -u
tool=$BUILD/bench/bin/dma_map_benchmark
seconds=${BENCH_SECONDS:-3}

edu=
for d in /sys/bus/pci/devices/*; do
	if [ "$(cat "$d/vendor")" = 0x1234 ] && [ "$(cat "$d/device")" = 0x11e8 ]; then
		edu=$(basename "$d")
	fi
done
[ -n "$edu" ] || { echo "no QEMU edu device (1234:11e8) in this VM" >&2; exit 1; }
[ -e "/sys/bus/pci/devices/$edu/driver" ] &&
	echo "$edu" >"/sys/bus/pci/devices/$edu/driver/unbind"
echo dma_map_benchmark >"/sys/bus/pci/devices/$edu/driver_override"
echo "$edu" >/sys/bus/pci/drivers_probe
[ -e /sys/kernel/debug/dma_map_benchmark ] ||
	{ echo "dma_map_benchmark did not bind to $edu (CONFIG_DMA_MAP_BENCHMARK?)" >&2; exit 1; }

csv=$OUT/10-dma-map.csv
echo "pages,mode,loops,map_ns_per_page,unmap_ns_per_page" >"$csv"
rc=0
for pages in 1 16 64 512; do
	for mode in pages iova iova-link; do
		# FROM_DEVICE: nothing to stain between iterations, all time goes to mapping.
		if ! res=$("$tool" -m "$mode" -g "$pages" -s "$seconds" -d 2 -b 32 2>&1); then
			echo "dma_map_benchmark -m $mode -g $pages: $res" >&2
			rc=1
			continue
		fi
		echo "$res"
		echo "$res" | sed -n 's/^mode:\([a-z-]*\) loops:\([0-9]*\) average per page(ns): map:\([0-9.]*\) unmap:\([0-9.]*\)$/'"$pages"',\1,\2,\3,\4/p' >>"$csv"
	done
done
echo "$edu" >/sys/bus/pci/drivers/dma_map_benchmark/unbind
exit $rc
