# SPDX-License-Identifier: GPL-2.0
# Helpers of the two-host suites (tests/cluster/), which node0 runs: a server started on
# another node over ssh, waiting for it to listen, and the ODP counters of any node.
# Sourced after scripts/guest/lib.sh and cluster-env.sh.

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
