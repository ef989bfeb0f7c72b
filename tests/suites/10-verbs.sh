#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vmtest-timeout: 600
# Our verbs tests (tests/verbs/*.c, built on the host into $BUILD/tests/verbs): one TAP
# file per program.
dir=$BUILD/tests/verbs
. "$GUEST_ROOT/scripts/guest/lib.sh"
# ODP on hugetlb memory (odp_huge here, test_odp huge cases in rdma-core).
reserve_hugepages 64
# Reclaim to swap and memory cgroups for odp_mm_pressure, where the kernel has them.
swap_on_zram 512M
memcg_on
trap 'release_hugepages; swap_off' EXIT
found=0
for t in "$dir"/*; do
	[ -f "$t" ] && [ -x "$t" ] || continue
	found=1
	name=$(basename "$t")
	echo "running $name"
	run_tap "verbs-$name" 300 "$t" --dev "$RDMA_DEV"
done
# Attacks that need no privilege are tried without it too: nobody's uid and gid, no
# capabilities, the default RLIMIT_MEMLOCK.
for name in odp_secretmem; do
	t=$dir/$name
	[ -x "$t" ] || continue
	echo "running $name as an unprivileged user"
	run_tap "verbs-$name-unprivileged" 300 setpriv --reuid=65534 --regid=65534 --clear-groups \
		--inh-caps=-all "$t" --dev "$RDMA_DEV"
done
# ODP needs no locked memory: nobody again, with RLIMIT_MEMLOCK at 64 KiB, where a
# pinned MR of the same size must fail.
for name in odp_memlock; do
	t=$dir/$name
	[ -x "$t" ] || continue
	echo "running $name as an unprivileged user with RLIMIT_MEMLOCK at 64 KiB"
	run_tap "verbs-$name-unprivileged" 300 prlimit --memlock=65536:65536 setpriv \
		--reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$t" --dev "$RDMA_DEV"
done
if [ $found = 0 ]; then
	printf '1..1\nnot ok 1 - no test programs in %s (the host build of tests/verbs did not run)\n' \
		"$dir" >"$OUT/verbs.tap"
fi
exit 0
