#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vmtest-timeout: 600
# RC traffic on ODP memory survives a transmit queue that drops packets. Both nodes'
# NIC queue is cut to 2 packets, so their queue discipline drops most of each burst
# (NET_XMIT_DROP); rxe must take such a packet as lost on the wire and send it again,
# not fail the work request and the QP (which any user filling the shared queue could
# do to the QPs of all). ibv_rc_pingpong with its data check, ib_write_bw and
# ib_read_bw (node1 sends the responses) must complete, and send_err must have moved
# (on either node: which queue overflows depends on which QEMU reads the link more
# slowly), else no packet was dropped and nothing was tested. Writes
# two-host-tx-drops.tap. About 30 s on iommu-strict.
. "$GUEST_ROOT/scripts/guest/cluster-lib.sh"
cluster_suite tx-drops

# Little data: RC recovers a loss by sending the message again from the lost packet
# (go-back-N), after the retry timer (67 ms here), and through a queue of 2 packets most
# of each burst is lost again, so a megabyte can take minutes.
tools=(
	"ibv_rc_pingpong -c -o: 50 validated round trips of 16 KiB|ibv_rc_pingpong -d $RDMA_DEV -g 1 -c -o -s 16384 -n 50"
	"ib_write_bw --odp 64 KiB|ib_write_bw -d $RDMA_DEV -x 1 --odp -n 50 -s 65536"
	"ib_read_bw --odp 64 KiB|ib_read_bw -d $RDMA_DEV -x 1 --odp -n 50 -s 65536"
)
echo "1..$((${#tools[@]} + 1))" >"$tap"

send_err() {
	ssh "$1" "cat $COUNTER_DIR/send_err"
}

# Each node's queue back to what it was, whatever happens below.
queue0=$(cat /sys/class/net/"$NETDEV"/tx_queue_len)
queue1=$(ssh "$PEER" "cat /sys/class/net/$NETDEV/tx_queue_len")
restore() {
	ip link set "$NETDEV" txqueuelen "$queue0"
	ssh "$PEER" "ip link set $NETDEV txqueuelen $queue1"
}
trap restore EXIT
if ! ip link set "$NETDEV" txqueuelen 2 || ! ssh "$PEER" "ip link set $NETDEV txqueuelen 2"; then
	echo "Bail out! cannot shorten the transmit queues" >>"$tap"
	exit 0
fi

err0=$(send_err node0)
err1=$(send_err "$PEER")
n=0
for t in "${tools[@]}"; do
	n=$((n + 1))
	name=${t%%|*}
	cmd=${t#*|}
	echo "== $name: $cmd" >>"$log"
	# shellcheck disable=SC2086 # the command line is meant to split into words
	run_pair 18515 /tmp/drops 300 "$cmd" $cmd "$PEER"
	# How often each requester went back to a lost packet, and gave up, so far.
	for node in node0 "$PEER"; do
		echo "$node: send_err $(send_err $node), completer_retry_err $(ssh $node "cat $COUNTER_DIR/completer_retry_err"), retry_exceeded_err $(ssh $node "cat $COUNTER_DIR/retry_exceeded_err")" >>"$log"
	done
	if [ "$pair_client" = 0 ] && [ "$pair_server" = 0 ]; then
		echo "ok $n - $name, through transmit queues of 2 packets" >>"$tap"
	else
		echo "not ok $n - $name, through transmit queues of 2 packets (client exit $pair_client, server exit $pair_server; log: $log)" >>"$tap"
	fi
done
n=$((n + 1))
drops0=$(($(send_err node0) - err0))
drops1=$(($(send_err "$PEER") - err1))
if [ $((drops0 + drops1)) -gt 0 ]; then
	echo "ok $n - the queues dropped packets: send_err +$drops0 on node0, +$drops1 on $PEER" >>"$tap"
else
	echo "not ok $n - the queues dropped too little to test anything: send_err +$drops0 on node0, +$drops1 on $PEER" >>"$tap"
fi
rm -f /tmp/drops.*
exit 0
