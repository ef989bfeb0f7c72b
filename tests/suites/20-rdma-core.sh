#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vmtest-timeout: 600
# rdma-core's own pyverbs suite, as Debian ships it (unpacked on the host into
# $BUILD/rdma-core-tests by scripts/rdma-core-tests.sh), turned into TAP with the
# expected failures of tests/rdma-core/expected-failures applied. All of it where the
# profile runs nodma cases (scripts/guest/lib.sh program_here); elsewhere only test_odp's
# OdpTestCase, the 17 of its 273 tests whose memory reaches rxe's DMA path (the others
# register pinned memory, which rxe reads through the kernel's mapping).
dir=$BUILD/rdma-core-tests
. "$GUEST_ROOT/scripts/guest/lib.sh"
# ODP on hugetlb memory (odp_huge here, test_odp huge cases in rdma-core).
reserve_hugepages 64
trap release_hugepages EXIT
if [ ! -f "$dir/run_tests.py" ]; then
	printf '1..1\nnot ok 1 - rdma-core tests are not unpacked in %s\n' "$dir" >"$OUT/rdma-core.tap"
	exit 0
fi
cd /tmp || exit 1
only=()
program_here nodma || only=(-k OdpTestCase)
/usr/bin/python3 "$dir/run_tests.py" --dev "$RDMA_DEV" -v "${only[@]}" \
	>"$OUT/rdma-core.stdout" 2>"$OUT/rdma-core.stderr"
echo "run_tests.py exited $?"
/usr/bin/python3 "$GUEST_ROOT/tests/rdma-core/unittest_to_tap.py" \
	--expected "$GUEST_ROOT/tests/rdma-core/expected-failures" \
	"$OUT/rdma-core.stderr" >"$OUT/rdma-core.tap"
