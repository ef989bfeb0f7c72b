#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# HMM DMA helpers: mapping a faulted run of pages one hmm_dma_map_pfn() at a time
# against one hmm_dma_map_pfns() (a single IOTLB sync), through test_hmm's DMA mode on
# QEMU's edu device. Writes $OUT/20-hmm-dma.csv.
set -u
. "$GUEST_ROOT/scripts/guest/lib.sh"
bind_edu test_hmm_dma >/dev/null || exit 1
"$BUILD/bench/bin/hmm_dma_bench" >"$OUT/20-hmm-dma.csv"
rc=$?
cat "$OUT/20-hmm-dma.csv"
release_edu
exit $rc
