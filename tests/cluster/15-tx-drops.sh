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
# two-host-tx-drops.tap.
. "$GUEST_ROOT/scripts/guest/lib.sh"
. "$GUEST_ROOT/scripts/guest/cluster-env.sh"
. "$GUEST_ROOT/scripts/guest/cluster-lib.sh"
tap=$OUT/two-host-tx-drops.tap
log=$OUT/two-host-tx-drops.log
: >"$log"

tools=(
	"ibv_rc_pingpong -c -o: 100 validated round trips of 64 KiB|ibv_rc_pingpong -d $RDMA_DEV -g 1 -c -o -s 65536 -n 100"
	"ib_write_bw --odp 64 KiB|ib_write_bw -d $RDMA_DEV -x 1 --odp -n 200 -s 65536"
	"ib_read_bw --odp 64 KiB|ib_read_bw -d $RDMA_DEV -x 1 --odp -n 200 -s 65536"
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
ip link set "$NETDEV" txqueuelen 2 && ssh "$PEER" "ip link set $NETDEV txqueuelen 2" ||
	{ echo "Bail out! cannot shorten the transmit queues" >>"$tap"; exit 0; }

err0=$(send_err node0)
err1=$(send_err "$PEER")
n=0
for t in "${tools[@]}"; do
	n=$((n + 1))
	name=${t%%|*}
	cmd=${t#*|}
	echo "== $name: $cmd" >>"$log"
	serve "$PEER" /tmp/drops.server "timeout 300 $cmd"
	server=$served
	crc=1
	if wait_remote_tcp "$PEER" 18515 "$server"; then
		# shellcheck disable=SC2086 # the command line is meant to split into words
		timeout 300 $cmd "$PEER" >/tmp/drops.client 2>&1
		crc=$?
	else
		echo "the server on $PEER never listened" >/tmp/drops.client
	fi
	wait "$server"
	src=$?
	cat /tmp/drops.server /tmp/drops.client >>"$log"
	if [ $crc = 0 ] && [ $src = 0 ]; then
		echo "ok $n - $name, through transmit queues of 2 packets" >>"$tap"
	else
		echo "not ok $n - $name, through transmit queues of 2 packets (client exit $crc, server exit $src; log: $log)" >>"$tap"
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
exit 0
