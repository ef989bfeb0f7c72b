#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vmtest-timeout: 600
# RC traffic on ODP memory survives a transmit queue that drops packets. On both nodes
# the NIC's byte queue limit is set to 0 (the driver takes one packet, then stops its
# queue until the NIC reports it sent) and the queue discipline in front of it to 2
# packets, so it drops most of every burst (NET_XMIT_DROP) however fast QEMU moves the
# link; rxe must take such a packet as lost on the wire and send it again, not fail the
# work request and the QP (which any user filling the shared queue could do to the QPs
# of all). ibv_rc_pingpong with its data check, ib_write_bw and ib_read_bw (node1 sends
# the responses) must complete, and send_err must have moved, else nothing was tested.
# (A transmit queue of 2 packets alone, without the byte limit, dropped from 0 to 271
# packets a run: QEMU usually drains the NIC's ring before it fills.) Writes
# two-host-tx-drops.tap. About 60 s on iommu-strict.
. "$GUEST_ROOT/scripts/guest/cluster-lib.sh"
cluster_suite tx-drops

# Little data: RC recovers a loss by sending the message again from the lost packet
# (go-back-N), after the retry timer, and most of each resent burst is lost again: a
# round trip of 64 KiB takes about 3 s here (100 of them took 300 s, and completed).
tools=(
	"ibv_rc_pingpong -c -o: 20 validated round trips of 16 KiB|ibv_rc_pingpong -d $RDMA_DEV -g 1 -c -o -s 16384 -n 20"
	"ib_write_bw --odp 64 KiB|ib_write_bw -d $RDMA_DEV -x 1 --odp -n 20 -s 65536"
	"ib_read_bw --odp 64 KiB|ib_read_bw -d $RDMA_DEV -x 1 --odp -n 20 -s 65536"
)
echo "1..$((${#tools[@]} + 1))" >"$tap"

send_err() {
	ssh "$1" "cat $COUNTER_DIR/send_err"
}

# squeeze NODE QUEUE BYTES: NODE's queue discipline holds QUEUE packets and its driver
# BYTES bytes (the byte queue limit's ceiling; "max" is its default).
bql=queues/tx-0/byte_queue_limits/limit_max
squeeze() {
	ssh "$1" "ip link set $NETDEV txqueuelen $2 && echo $3 >/sys/class/net/$NETDEV/$bql"
}

# Each node's queues back to what they were, whatever happens below.
declare -A queue limit
for node in node0 "$PEER"; do
	queue[$node]=$(ssh "$node" "cat /sys/class/net/$NETDEV/tx_queue_len")
	limit[$node]=$(ssh "$node" "cat /sys/class/net/$NETDEV/$bql")
done
restore() {
	for node in node0 "$PEER"; do
		squeeze "$node" "${queue[$node]}" "${limit[$node]}"
	done
}
trap restore EXIT
if ! squeeze node0 2 0 || ! squeeze "$PEER" 2 0; then
	echo "Bail out! cannot shorten the transmit queues (log: $log)" >>"$tap"
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
		echo "$node: send_err $(send_err "$node"), completer_retry_err $(ssh "$node" "cat $COUNTER_DIR/completer_retry_err"), retry_exceeded_err $(ssh "$node" "cat $COUNTER_DIR/retry_exceeded_err")" >>"$log"
	done
	if [ "$pair_client" = 0 ] && [ "$pair_server" = 0 ]; then
		echo "ok $n - $name, through transmit queues that drop" >>"$tap"
	else
		echo "not ok $n - $name, through transmit queues that drop ($(pair_status))" >>"$tap"
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
