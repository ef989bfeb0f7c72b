#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vmtest-timeout: 600
# rdma-core's own pyverbs suite, as Debian ships it (unpacked on the host into
# $BUILD/rdma-core-tests by scripts/rdma-core-tests.sh), turned into TAP with the
# expected failures of tests/rdma-core/expected-failures applied.
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
/usr/bin/python3 "$dir/run_tests.py" --dev "$RDMA_DEV" -v \
	>"$OUT/rdma-core.stdout" 2>"$OUT/rdma-core.stderr"
echo "run_tests.py exited $?"
/usr/bin/python3 "$GUEST_ROOT/tests/rdma-core/unittest_to_tap.py" \
	--expected "$GUEST_ROOT/tests/rdma-core/expected-failures" \
	"$OUT/rdma-core.stderr" >"$OUT/rdma-core.tap"
