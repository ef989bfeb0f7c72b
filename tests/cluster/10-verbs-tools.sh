#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vmtest-timeout: 600
# The standard verbs tools across two hosts, each on pinned memory and on ODP memory:
# ibv_rc_pingpong with its data check (-c), perftest's ib_write_bw, ib_read_bw and
# ib_send_bw. The server runs on node1, the client on node0. Every ODP run must move the
# ODP counters of both nodes (pages faulted, no fault errors) and every pinned run must
# leave them still: that is what says ODP did the work. Writes two-host-verbs-tools.tap,
# and the bandwidths side by side into cross-host.txt. About 100 s on iommu-strict.
. "$GUEST_ROOT/scripts/guest/cluster-lib.sh"
cluster_suite verbs-tools

# NAME|COMMAND (the same on both sides; the client adds the server's name)
tools=(
	"ibv_rc_pingpong -c: 200 validated round trips of 4 KiB|ibv_rc_pingpong -d $RDMA_DEV -g 1 -c -n 200"
	"ib_write_bw 64 KiB|ib_write_bw -d $RDMA_DEV -x 1 -n 200 -s 65536"
	"ib_read_bw 64 KiB|ib_read_bw -d $RDMA_DEV -x 1 -n 200 -s 65536"
	"ib_send_bw 64 KiB|ib_send_bw -d $RDMA_DEV -x 1 -n 200 -s 65536"
)
echo "1..$((${#tools[@]} * 4))" >"$tap"

# The average bandwidth perftest printed (MB/s), or the ping-pong's Mbit/s.
rate() {
	awk '/^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+/ { r = $4 " MB/s" } / Mbit\/sec/ { r = $(NF - 1) " Mbit/s" } END { print r }' "$1"
}

n=0
for t in "${tools[@]}"; do
	name=${t%%|*}
	cmd=${t#*|}
	for mode in pinned odp; do
		full=$cmd
		[ $mode = odp ] && { [[ $cmd == ibv_* ]] && full="$cmd -o" || full="$cmd --odp"; }
		counters_before
		echo "== $name, $mode: $full" >>"$log"
		# shellcheck disable=SC2086 # the command line is meant to split into words
		perftest_pair /tmp/two-host 120 $full
		counters_after
		n=$((n + 1))
		if [ "$pair_client" = 0 ] && [ "$pair_server" = 0 ]; then
			r=$(rate /tmp/two-host.client)
			echo "ok $n - $name, $mode memory, node0 to $PEER: $r" >>"$tap"
			echo "$name|$mode|$r" >>"$OUT/cross-host.txt"
		else
			echo "not ok $n - $name, $mode memory, node0 to $PEER ($(pair_status))" >>"$tap"
		fi
		n=$((n + 1))
		if [ $mode = odp ]; then
			odp_result $n "$name, ODP memory"
		else
			pinned_result $n "$name, pinned memory"
		fi
	done
done
rm -f /tmp/two-host.*
exit 0
