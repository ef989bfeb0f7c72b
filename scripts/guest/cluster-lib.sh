# SPDX-License-Identifier: GPL-2.0
# Helpers of the two-host suites (tests/cluster/), which node0 runs: a server started on
# another node over ssh, waiting for it to listen, the ODP counters of any node and the
# TAP results they prove. A suite sources this file alone (it brings the guest's lib.sh
# and the cluster's settings) and calls cluster_suite NAME.
. "$GUEST_ROOT/scripts/guest/lib.sh"
. "$GUEST_ROOT/scripts/guest/cluster-env.sh"

# The other node every two-host test talks to.
PEER=${PEER:-node1}
COUNTER_DIR=/sys/class/infiniband/$RDMA_DEV/ports/1/hw_counters

# odp_counters NODE: "name value" per ODP counter of NODE's rxe device.
odp_counters() {
	ssh "$1" "cd $COUNTER_DIR && for c in odp_*; do echo \"\$c \$(cat \$c)\"; done"
}

# counters_delta BEFORE AFTER: "name delta" per counter (two odp_counters outputs).
# (No process substitution: the guest has no /dev/fd.)
counters_delta() {
	printf '%s\n--\n%s\n' "$1" "$2" |
		awk '$0 == "--" { after = 1; next } !after { b[$1] = $2; next } { print $1, $2 - b[$1] }'
}

# counter NAME DELTAS: the value of one counter in counters_delta's output (0 if absent).
counter() {
	awk -v n="$1" '$1 == n { v = $2 } END { print v + 0 }' <<<"$2"
}

# serve NODE LOG COMMAND...: COMMAND on NODE in the background, its output in LOG; the
# ssh client's pid in $served.
serve() {
	local node=$1 log=$2

	shift 2
	ssh "$node" "$*" >"$log" 2>&1 &
	served=$!
}

# wait_remote_tcp NODE PORT PID: until NODE listens on TCP PORT (a perftest or
# ibv_rc_pingpong server's exchange port) while the server's ssh (PID) lives; 60 s.
wait_remote_tcp() {
	local i

	for i in $(seq 120); do
		ssh "$1" "ss -Hltn 'sport = :$2'" | grep -q . && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.5
	done
	return 1
}

# wait_remote_cm NODE PID: until an rdma_cm id listens on NODE (rping, the rdma_cm
# example), while the server's ssh (PID) lives; 60 s.
wait_remote_cm() {
	local i

	for i in $(seq 120); do
		ssh "$1" "rdma resource show cm_id" | grep -q LISTEN && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.5
	done
	return 1
}

# odp_used DELTAS_NODE0 DELTAS_PEER [sender]: why ODP did not do the work on both nodes
# (no page faulted on one, or fault errors); empty when it did. With "sender", only
# node0 must have faulted pages (the peer received through buffers of its own).
odp_used() {
	local why=''

	[ "$(counter odp_pages_faulted "$1")" -gt 0 ] || why="no ODP page faulted on node0"
	[ -n "${3:-}" ] || [ "$(counter odp_pages_faulted "$2")" -gt 0 ] ||
		why="${why:+$why, }no ODP page faulted on $PEER"
	[ "$(counter odp_fault_errors "$1")" = 0 ] || why="${why:+$why, }ODP fault errors on node0"
	[ "$(counter odp_fault_errors "$2")" = 0 ] || why="${why:+$why, }ODP fault errors on $PEER"
	echo "$why"
}

# deltas_line DELTAS: the counters that moved, on one line.
deltas_line() {
	awk '$2 != 0 { printf "%s%s %s", s, substr($1, 5), $2; s = ", " } END { if (!s) printf "none moved" }' <<<"$1"
}

# ucx_odp_crash FILE: FILE shows UCX 1.13's crash at exit after implicit ODP (that fault
# and uct_ib_md_close in its backtrace; openucx/ucx#8735), not some other failure.
UCX_CRASH="UCX 1.13 crashes at exit after implicit ODP (uct_ib_md_close, openucx/ucx#8735)"
ucx_odp_crash() {
	grep -q 'Caught signal 11 (Segmentation fault: address not mapped to object at address 0x11)' "$1" &&
		grep -q 'uct_ib_md_close' "$1"
}

# cluster_suite NAME: this suite's TAP file ($tap, two-host-NAME.tap) and log ($log,
# emptied) in the results folder.
cluster_suite() {
	tap=$OUT/two-host-$1.tap
	log=$OUT/two-host-$1.log
	: >"$log"
}

# run_pair LISTEN PREFIX SECONDS SERVER CLIENT...: the command line SERVER on $PEER, then
# CLIENT here once the server listens (LISTEN: its TCP port, or cm for an rdma_cm id),
# each for SECONDS at most; their output in PREFIX.server and PREFIX.client, both
# appended to $log. Sets pair_client and pair_server to their exit statuses (the
# client's is 1 when the server never listened), for pair_status; 0 when both are 0.
run_pair() {
	local listen=$1 prefix=$2 secs=$3 cmd=$4 server ready

	shift 4
	pair_prefix=$prefix
	serve "$PEER" "$prefix.server" "timeout $secs $cmd"
	server=$served
	if [ "$listen" = cm ]; then
		wait_remote_cm "$PEER" "$server"
	else
		wait_remote_tcp "$PEER" "$listen" "$server"
	fi
	ready=$?
	pair_client=1
	if [ $ready = 0 ]; then
		timeout "$secs" "$@" >"$prefix.client" 2>&1
		pair_client=$?
	else
		echo "the server on $PEER never listened" >"$prefix.client"
	fi
	wait "$server"
	pair_server=$?
	cat "$prefix.server" "$prefix.client" >>"$log"
	[ $pair_client = 0 ] && [ $pair_server = 0 ]
}

# pair_status: how the last run_pair ended, for a TAP line: each side's exit status and,
# when it is not 0, the last line that side printed (where perftest, ibv_rc_pingpong or
# rping say why they gave up, or how far a side got that timed out), then the log. A CI
# run keeps only what it prints, not the guests' files.
pair_status() {
	local side status last out=''

	for side in client server; do
		status=$pair_client
		[ $side = server ] && status=$pair_server
		last=''
		[ "$status" = 0 ] ||
			last=$(grep -v '^[[:space:]]*$' "$pair_prefix.$side" 2>/dev/null | tail -n 1 |
				tr -d '\r#' | sed 's/^[[:space:]]*//' | cut -c 1-160)
		out="${out:+$out, }$side exit $status${last:+: \"$last\"}"
	done
	echo "$out; log: $log"
}

# counters_before, then counters_after: the ODP counters' deltas on node0 ($d0) and on
# $PEER ($d1) between the two calls.
counters_before() {
	before0=$(odp_counters node0)
	before1=$(odp_counters "$PEER")
}

counters_after() {
	d0=$(counters_delta "$before0" "$(odp_counters node0)")
	d1=$(counters_delta "$before1" "$(odp_counters "$PEER")")
}

# odp_result N NAME [sender]: TAP result N, that ODP did the work of NAME on both nodes
# (with "sender": on node0) by $d0 and $d1.
odp_result() {
	local why where="both nodes"

	[ -n "${3:-}" ] && where="node0, the sender"
	why=$(odp_used "$d0" "$d1" "${3:-}")
	if [ -z "$why" ]; then
		echo "ok $1 - $2: ODP faulted pages on $where (node0: $(deltas_line "$d0"); $PEER: $(deltas_line "$d1"))"
	else
		echo "not ok $1 - $2: $why (node0: $(deltas_line "$d0"); $PEER: $(deltas_line "$d1"))"
	fi >>"$tap"
}

# pinned_result N NAME: TAP result N, that NAME on pinned memory took no ODP fault on
# either node (by $d0 and $d1): a pinned run that moved the counters was not one.
pinned_result() {
	if [ "$(counter odp_pages_faulted "$d0")" = 0 ] && [ "$(counter odp_pages_faulted "$d1")" = 0 ]; then
		echo "ok $1 - $2: no ODP fault on either node"
	else
		echo "not ok $1 - $2: ODP counters moved (node0: $(deltas_line "$d0"); $PEER: $(deltas_line "$d1"))"
	fi >>"$tap"
}

# perftest_pair PREFIX SECONDS COMMAND...: run_pair of a perftest command line, the same
# on both sides (the client adds $PEER), on its default port; run again, up to three
# times, when perftest gave up on its report because it could not time the CPU clock
# under emulation ("Can't produce a report"), the transfer done.
perftest_pair() {
	local prefix=$1 secs=$2 attempt

	shift 2
	for attempt in 1 2 3; do
		run_pair 18515 "$prefix" "$secs" "$*" "$@" "$PEER" && return 0
		grep -q "Can't produce a report" "$prefix.server" "$prefix.client" || return 1
		echo "(attempt $attempt gave no report)" >>"$log"
	done
	return 1
}
