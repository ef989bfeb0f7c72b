#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vmtest-timeout: 600
# The kernel's hmm-tests selftest (built on the host from our source into
# $BUILD/tests/hmm), with the DMA-mode cases of the series: QEMU's edu device is bound
# to test_hmm's "test_hmm_dma" driver so that a real device moves the data through the
# IOMMU. Writes hmm.tap. All of it where the profile runs nodma cases (scripts/guest/lib.sh
# program_here); elsewhere only the hmm_dma fixture, the cases a device's DMA reaches:
# the others mirror pages into test_hmm's own memory by CPU copies, the same on every
# profile.
. "$GUEST_ROOT/scripts/guest/lib.sh"
tap=$OUT/hmm.tap
bin=$BUILD/tests/hmm/hmm-tests
if [ ! -x "$bin" ]; then
	printf '1..1\nnot ok 1 - hmm-tests not built in %s (scripts/build-userspace.sh)\n' "$bin" >"$tap"
	exit 0
fi
if [ ! -e /dev/hmm_dmirror0 ]; then
	printf '1..0 # SKIP this kernel has no HMM test driver (CONFIG_TEST_HMM)\n' >"$tap"
	exit 0
fi
# Our kernel has the DMA mode: not binding is an error. Another kernel has no
# test_hmm_dma driver, and the DMA-mode cases skip saying so.
if [ -d /sys/bus/pci/drivers/test_hmm_dma ]; then
	msg=$(bind_edu test_hmm_dma 2>&1 >/dev/null) ||
		guest_error "cannot give test_hmm a DMA device, its DMA-mode cases will skip: $msg"
fi

# THP "always" (our kernel's default) backs the test buffers with large folios, and
# 6.12's make_device_exclusive_range() cannot make a page of a large folio exclusive
# (the exclusive* cases get EBUSY; upstream fixed it in 6.15 by splitting the folio).
# The selftest asks for huge pages with MADV_HUGEPAGE where it wants them.
thp=/sys/kernel/mm/transparent_hugepage/enabled
thp_was=$(sed -n 's/.*\[\(.*\)\].*/\1/p' "$thp" 2>/dev/null)
[ -w "$thp" ] && echo madvise >"$thp"

# The selftest creates files in /tmp (a tmpfs in the guest).
# hmm.anon_write_hugetlbfs needs a free hugetlb page.
reserve_hugepages 16
cd /tmp || exit 1
only=()
program_here nodma || only=(-f hmm_dma)
run_tap hmm 540 "$bin" "${only[@]}"
[ -n "$thp_was" ] && echo "$thp_was" >"$thp"
release_edu
release_hugepages
exit 0
