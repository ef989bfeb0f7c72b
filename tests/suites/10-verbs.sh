#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vmtest-timeout: 900
# Our verbs tests (tests/verbs/*.c, built on the host into $BUILD/tests/verbs): one TAP
# file per program.
dir=$BUILD/tests/verbs
. "$GUEST_ROOT/scripts/guest/lib.sh"
# ODP on hugetlb memory (odp_huge here, test_odp huge cases in rdma-core).
reserve_hugepages 64
# Reclaim to swap and memory cgroups for odp_mm_pressure, where the kernel has them.
swap_on_zram 512M
memcg_on
# Persistent memory for odp_write_ops' persistent FLUSH, where the profile has NVDIMMs.
pmem_setup
trap 'release_hugepages; swap_off; pmem_teardown' EXIT
found=0
for t in "$dir"/*; do
	[ -f "$t" ] && [ -x "$t" ] || continue
	found=1
	name=$(basename "$t")
	[ "$name" = rc_hostile_peer ] && continue	# its own device, below
	program_wanted verbs "$name" || continue
	class=$(program_class "$name")
	if ! program_here "$class"; then
		echo "not running $name: class $class, which this profile leaves to others"
		continue
	fi
	echo "running $name"
	run_tap "verbs-$name" 300 "$t" --dev "$RDMA_DEV"
done
# Attacks that need no privilege are tried without it too: nobody's uid and gid, no
# capabilities, the default RLIMIT_MEMLOCK.
for name in odp_secretmem; do
	t=$dir/$name
	[ -x "$t" ] && program_wanted verbs "$name" || continue
	program_here "$(program_class "$name")" || continue
	echo "running $name as an unprivileged user"
	run_tap "verbs-$name-unprivileged" 300 setpriv --reuid=65534 --regid=65534 --clear-groups \
		--inh-caps=-all "$t" --dev "$RDMA_DEV"
done
# ODP needs no locked memory: nobody again, with RLIMIT_MEMLOCK at 64 KiB, where a
# pinned MR of the same size must fail.
for name in odp_memlock; do
	t=$dir/$name
	[ -x "$t" ] && program_wanted verbs "$name" || continue
	program_here "$(program_class "$name")" || continue
	echo "running $name as an unprivileged user with RLIMIT_MEMLOCK at 64 KiB"
	run_tap "verbs-$name-unprivileged" 300 prlimit --memlock=65536:65536 setpriv \
		--reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$t" --dev "$RDMA_DEV"
done
# Random verbs sequences with one function of the ODP fault path failing on 10% of its
# calls at each step (function error injection): class mm, whatever odp_random's own is.
# On a slower kernel (TIME_FACTOR > 1: debug) 2000 steps, the fewest with which it still
# expects every kind of step and fault to happen: KASAN and lockdep watch the same error
# paths, where 3000 steps took 256 s of the debug VM's 1513.
t=$dir/odp_random
if [ -x "$t" ] && program_wanted verbs odp_random && program_here mm; then
	echo "running odp_random with faults injected"
	run_tap verbs-odp_random-inject 300 "$t" --dev "$RDMA_DEV" --seed 2 \
		--ops $((TIME_FACTOR > 1 ? 2000 : 3000)) --inject 10
fi
# A hostile RoCE peer: soft-RoCE on a tap whose other end is the test program, which
# answers the device's requests wrongly (its addresses: rc_hostile_peer.c).
t=$dir/rc_hostile_peer
if [ -x "$t" ] && program_wanted verbs rc_hostile_peer &&
	program_here "$(program_class rc_hostile_peer)"; then
	echo "running rc_hostile_peer through a tap"
	tap=rxetap0 dev=rxehp0
	if msg=$({ ip tuntap add dev $tap mode tap &&
		echo 1 >/proc/sys/net/ipv6/conf/$tap/disable_ipv6 &&
		ip addr add 10.99.0.1/24 dev $tap && ip link set $tap up &&
		ip neigh replace 10.99.0.2 lladdr 02:00:00:00:99:02 dev $tap nud permanent &&
		rdma link add $dev type rxe netdev $tap; } 2>&1); then
		run_tap verbs-rc_hostile_peer 120 "$t" --dev $dev --tap $tap
	else
		printf '1..1\nnot ok 1 - cannot make soft-RoCE on a tap: %s\n' "${msg//$'\n'/; }" \
			>"$OUT/verbs-rc_hostile_peer.tap"
	fi
	rdma link delete $dev 2>/dev/null
	ip link delete $tap 2>/dev/null
fi
if [ $found = 0 ]; then
	printf '1..1\nnot ok 1 - no test programs in %s (the host build of tests/verbs did not run)\n' \
		"$dir" >"$OUT/verbs.tap"
fi
exit 0
