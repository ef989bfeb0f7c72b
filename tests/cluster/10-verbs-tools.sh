#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vmtest-timeout: 600
# The standard verbs tools across two hosts, each on pinned memory and on ODP memory:
# ibv_rc_pingpong with its data check (-c), perftest's ib_write_bw, ib_read_bw and
# ib_send_bw. The server runs on node1, the client on node0. Every ODP run must move the
# ODP counters of both nodes (pages faulted, no fault errors) and every pinned run must
# leave them still: that is what says ODP did the work. Writes two-host-verbs-tools.tap, and
# the bandwidths side by side into cross-host.txt.
. "$GUEST_ROOT/scripts/guest/lib.sh"
. "$GUEST_ROOT/scripts/guest/cluster-env.sh"
. "$GUEST_ROOT/scripts/guest/cluster-lib.sh"
tap=$OUT/two-host-verbs-tools.tap
log=$OUT/two-host-verbs-tools.log
: >"$log"

# NAME|COMMAND (the same on both sides; the client adds the server's name)|PORT
tools=(
	"ibv_rc_pingpong -c: 200 validated round trips of 4 KiB|ibv_rc_pingpong -d $RDMA_DEV -g 1 -c -n 200"
	"ib_write_bw 64 KiB|ib_write_bw -d $RDMA_DEV -x 1 -n 200 -s 65536"
	"ib_read_bw 64 KiB|ib_read_bw -d $RDMA_DEV -x 1 -n 200 -s 65536"
	"ib_send_bw 64 KiB|ib_send_bw -d $RDMA_DEV -x 1 -n 200 -s 65536"
)
echo "1..$((${#tools[@]} * 3))" >"$tap"

# run_pair COMMAND OUT: server on $PEER, client here; 0 when both exit 0.
run_pair() {
	local cmd=$1 out=$2 client server

	serve "$PEER" "$out.server" "timeout 120 $cmd"
	server=$served
	if ! wait_remote_tcp "$PEER" 18515 "$server"; then
		wait "$server"
		echo "the server on $PEER never listened (exit $?)" >"$out.status"
		cat "$out.server" >>"$log"
		return 1
	fi
	# shellcheck disable=SC2086 # the command line is meant to split into words
	timeout 120 $cmd "$PEER" >"$out.client" 2>&1
	client=$?
	wait "$server"
	echo "client exit $client, server exit $?" >"$out.status"
	cat "$out.server" "$out.client" >>"$log"
	grep -q "client exit 0, server exit 0" "$out.status"
}

# The average bandwidth perftest printed (MB/s), or the ping-pong's Mbit/s.
rate() {
	awk '/^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+/ { r = $4 " MB/s" } / Mbit\/sec/ { r = $(NF - 1) " Mbit/s" } END { print r }' "$1"
}

n=0
for t in "${tools[@]}"; do
	name=${t%%|*}
	cmd=${t#*|}
	for mode in pinned odp; do
		n=$((n + 1))
		full=$cmd
		[ $mode = odp ] && { [[ $cmd == ibv_* ]] && full="$cmd -o" || full="$cmd --odp"; }
		tmp=/tmp/two-host-$n
		before0=$(odp_counters node0)
		before1=$(odp_counters "$PEER")
		# perftest gives up on its report when it cannot time the CPU clock under
		# emulation ("Can't produce a report"), the transfer done: run it again.
		for attempt in 1 2 3; do
			echo "== $name, $mode (attempt $attempt): $full" >>"$log"
			run_pair "$full" "$tmp" && break
			grep -q "Can't produce a report" "$tmp.server" "$tmp.client" 2>/dev/null || break
		done
		d0=$(counters_delta "$before0" "$(odp_counters node0)")
		d1=$(counters_delta "$before1" "$(odp_counters "$PEER")")
		if grep -q "client exit 0, server exit 0" "$tmp.status"; then
			r=$(rate "$tmp.client")
			echo "# $mode: $r; ODP counters node0: $(deltas_line "$d0"); $PEER: $(deltas_line "$d1")" >>"$tap"
			echo "ok $n - $name, $mode memory, node0 to $PEER" >>"$tap"
			echo "$name|$mode|$r" >>"$OUT/cross-host.txt"
		else
			echo "not ok $n - $name, $mode memory, node0 to $PEER ($(cat "$tmp.status"); log: $log)" >>"$tap"
		fi
		if [ $mode = odp ]; then
			n=$((n + 1))
			why=$(odp_used "$d0" "$d1")
			if [ -z "$why" ]; then
				echo "ok $n - $name: ODP faulted pages on both nodes, no fault errors" >>"$tap"
			else
				echo "not ok $n - $name: $why (node0: $(deltas_line "$d0"); $PEER: $(deltas_line "$d1"))" >>"$tap"
			fi
		elif [ "$(counter odp_pages_faulted "$d0")" != 0 ] || [ "$(counter odp_pages_faulted "$d1")" != 0 ]; then
			# Pinned memory takes no ODP fault: a pinned run that moved them is not one.
			echo "# pinned run moved ODP counters: node0 $(deltas_line "$d0"); $PEER $(deltas_line "$d1")" >>"$tap"
			sed -i "\$s/^ok $n - /not ok $n - /" "$tap"
		fi
		rm -f "$tmp".*
	done
done
exit 0
