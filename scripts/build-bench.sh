#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build the benchmark programs the guest runs: the kernel's DMA map benchmark tool
# (tools/testing/selftests/dma, with our series' modes) from the patched source, and
# tests/bench/hmm_dma_bench.c on test_hmm's uapi header. ODP against pinned memory is
# libibodp's odp-bench (scripts/build-userspace.sh).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bin=$BUILD/bench/bin
inc=$BUILD/bench/include
mkdir -p "$bin" "$inc/linux"
[ -f "$SRC/include/linux/map_benchmark.h" ] ||
	die "no kernel source in $SRC: run scripts/kernel-source.sh first"
# The tool includes <linux/map_benchmark.h>, a kernel header that is not part of the
# exported uapi: give it that one header, not the whole kernel include tree.
cp "$SRC/include/linux/map_benchmark.h" "$inc/linux/"
gcc -std=gnu11 -O2 -Wall -Wextra -Werror -I"$inc" \
	-o "$bin/dma_map_benchmark" "$SRC/tools/testing/selftests/dma/dma_map_benchmark.c" ||
	die "building dma_map_benchmark failed"
gcc -std=c11 -O2 -Wall -Wextra -Werror -I"$SRC" -o "$bin/hmm_dma_bench" \
	"$ROOT/tests/bench/hmm_dma_bench.c" || die "building hmm_dma_bench failed"
