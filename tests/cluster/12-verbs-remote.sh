#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vmtest-timeout: 600
# Our verbs checks across two hosts (tests/verbs/remote/odp_remote): node0 moves data
# with RC WRITE, READ, SEND, FETCH_ADD and CMP_SWP and UD SEND between its ODP MRs and
# node1's untouched ones, on explicit and on implicit (whole address space) MRs, then
# keeps writing (or reading) while node1 invalidates its memory with madvise, a new
# mapping over the old, mprotect and fork. Every byte is checked; node1's counters
# must show exactly the pages a transfer spans faulted, and its invalidations. Writes
# two-host-verbs-remote.tap: the initiator's checks and one that both sides exited 0.
# About 20 s on iommu-strict, 2 min on the debug kernel.
. "$GUEST_ROOT/scripts/guest/cluster-lib.sh"
cluster_suite verbs-remote
prog=$BUILD/tests/verbs/remote/odp_remote
checks=24	# the initiator's plan
# A slow kernel (the debug one, TIME_FACTOR 3: about 0.15 MB/s between its guests) moves
# 8 chunks during each invalidation check, not 64.
stream=64
[ "${TIME_FACTOR:-1}" -gt 1 ] && stream=8

echo "== $prog --peer $PEER, against $prog on $PEER" >>"$log"
# Less than the suite's time, so that a run that hangs still leaves its TAP file.
run_pair 18600 /tmp/remote 400 "$prog --dev $RDMA_DEV --tcp 18600" \
	"$prog" --dev "$RDMA_DEV" --tcp 18600 --stream "$stream" --peer "$PEER"
{
	echo "1..$((checks + 1))"
	grep -E '^(ok |not ok |# |Bail out!)' /tmp/remote.client
	if [ "$pair_client" = 0 ] && [ "$pair_server" = 0 ]; then
		echo "ok $((checks + 1)) - the initiator (node0) and the target ($PEER) exited 0"
	else
		echo "not ok $((checks + 1)) - the initiator (node0) exited $pair_client, the target ($PEER) $pair_server (log: $log)"
	fi
} >"$tap"
rm -f /tmp/remote.*
exit 0
