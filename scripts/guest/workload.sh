#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guest side of `make run`: create soft-RoCE and run an RC ping-pong over it (server
# and client on the same device, so every byte crosses rxe's full send and receive paths),
# with the received data checked, on pinned memory and then on ODP memory with the ODP
# counters before and after; then libibodp's odp-workload: RDMA WRITE and READ across ODP
# MRs nothing touched before, part invalidated between rounds, every byte checked, with
# its summary. Writes a report into the results folder.
. "$(dirname "$0")/lib.sh"

ITERS=${ITERS:-500}
SIZE=${SIZE:-65536}
report=$OUT/workload.txt

# Whether the device has On-Demand Paging on this kernel (another kernel may not).
has_odp() {
	ibv_devinfo -v -d "$RDMA_DEV" | grep -q ODP_SUPPORT
}

# The port's ODP counters, "name value" a line, as libibodp reads them (no list of
# names here: the library has the one list); nothing, and its reason on stderr, when the
# device has none.
odp_counters() {
	"$BUILD/userspace/bin/odp-counters" --dev "$RDMA_DEV"
}

# Counter $1 of the "name delta" lines in $2 (0 when they have no such line).
delta_of() {
	awk -v name="$1" '$1 == name { v = $2 } END { print v + 0 }' <<<"$2"
}

# What the ODP counters' deltas ("name delta" lines in $1) say, in words.
explain_counters() {
	local faults faulted linked unlinked invalidations

	faults=$(delta_of page_faults "$1")
	faulted=$(delta_of pages_faulted "$1")
	linked=$(delta_of pages_linked "$1")
	unlinked=$(delta_of pages_unlinked "$1")
	invalidations=$(delta_of invalidations "$1")
	if [ "$faults" = 0 ]; then
		echo "              (rxe took no ODP fault: no page was reached through ODP)"
		return
	fi
	echo "              (rxe took $faults faults that brought in $faulted pages on first touch"
	echo "              and linked $linked pages for the NIC's DMA; $(
		if [ "$unlinked" -gt 0 ]; then
			echo "$invalidations invalidations unlinked $unlinked"
		else
			echo "nothing was invalidated while the MRs lived"
		fi))"
}

# The same ping-pong on On-Demand Paging memory (-o): nothing pinned, every page faulted
# in by rxe on first use and linked for the NIC's DMA; the ODP counters say how much.
odp_pingpong() {
	local before after delta client_rc server_rc

	if ! has_odp; then
		echo "ODP:          not supported by $RDMA_DEV on this kernel" >>"$report"
		return
	fi
	before=$(odp_counters 2>"$OUT/odp-counters.err")
	timeout 300 ibv_rc_pingpong "$@" -o >"$OUT/odp-server.txt" 2>&1 &
	server=$!
	wait_listening 18515 $server
	timeout 300 ibv_rc_pingpong "$@" -o "$addr" >"$OUT/odp-client.txt" 2>&1
	client_rc=$?
	wait $server
	server_rc=$?
	after=$(odp_counters 2>>"$OUT/odp-counters.err")
	{
		echo "ODP workload: the same ping-pong on On-Demand Paging memory (-o), data checked"
		echo "ODP result:   client exit $client_rc, server exit $server_rc"
		grep -hE 'bytes in' "$OUT/odp-client.txt" | sed 's/^/              client: /'
		if [ -n "$before" ] && [ -n "$after" ]; then
			# One stream, the snapshots parted by a line "--" (the guest has no
			# /dev/fd for a process substitution).
			delta=$(printf '%s\n--\n%s\n' "$before" "$after" | awk '
				$0 == "--" { after = 1; next }
				!after { b[$1] = $2; next }
				{ print $1, $2 - b[$1] }')
			echo "ODP counters: $(awk '{ printf "%s %d  ", $1, $2 }' <<<"$delta")"
			explain_counters "$delta"
		else
			echo "ODP counters: none ($(head -n 1 "$OUT/odp-counters.err"))"
		fi
	} >>"$report"
	if grep -qi 'invalid data' "$OUT/odp-client.txt" "$OUT/odp-server.txt"; then
		guest_error "ibv_rc_pingpong -o received wrong data; see $OUT/odp-client.txt"
	fi
	# Its buffers are ODP MRs nothing touched before: the device must have faulted them.
	if [ -n "$delta" ] && [ "$(delta_of page_faults "$delta")" -le 0 ]; then
		guest_error "ibv_rc_pingpong -o moved data but the ODP counters show no fault: $(tr '\n' ' ' <<<"$delta")"
	fi
	if [ $client_rc -ne 0 ] || [ $server_rc -ne 0 ]; then
		guest_error "ibv_rc_pingpong -o failed (client $client_rc, server $server_rc); see $OUT/odp-client.txt"
	fi
}

# libibodp's workload (userspace/tools/odp-workload.c) and its summary.
library_workload() {
	local rc=0

	{
		echo
		echo "== ODP workload through libibodp (odp-workload) =="
	} >>"$report"
	if ! has_odp; then
		echo "not run:      $RDMA_DEV has no ODP on this kernel" >>"$report"
		return
	fi
	timeout 300 "$BUILD/userspace/bin/odp-workload" --dev "$RDMA_DEV" >>"$report" 2>"$OUT/odp-workload.err" ||
		rc=$?
	if [ $rc -ne 0 ]; then
		cat "$OUT/odp-workload.err" >>"$report"
		guest_error "odp-workload failed (exit $rc); see $OUT/odp-workload.err"
	fi
}

{
	echo "kernel:       $(uname -r)"
	echo "IOMMU group:  $(iommu_group_type) (NIC $(basename "$(readlink -f /sys/class/net/$NETDEV/device)"))"
} >"$report"

if setup_rxe; then
	addr=${GUEST_ADDR%/*}
	echo "device:       $RDMA_DEV on $NETDEV ($addr), GID 1 $(cat /sys/class/infiniband/$RDMA_DEV/ports/1/gids/1)" >>"$report"
	echo "workload:     ibv_rc_pingpong, pinned memory, $ITERS round trips of $SIZE bytes, data checked (-c)" >>"$report"
	args=(-d "$RDMA_DEV" -g 1 -c -n "$ITERS" -s "$SIZE")
	timeout 300 ibv_rc_pingpong "${args[@]}" >"$OUT/server.txt" 2>&1 &
	server=$!
	wait_listening 18515 $server
	timeout 300 ibv_rc_pingpong "${args[@]}" "$addr" >"$OUT/client.txt" 2>&1
	client_rc=$?
	wait $server
	server_rc=$?
	echo "result:       client exit $client_rc, server exit $server_rc" >>"$report"
	grep -hE 'bytes in|iters in' "$OUT/client.txt" | sed 's/^/              client: /' >>"$report"
	grep -hE 'bytes in|iters in' "$OUT/server.txt" | sed 's/^/              server: /' >>"$report"
	# -c makes each side check what it received; it reports bad data without failing.
	if grep -qi 'invalid data' "$OUT/client.txt" "$OUT/server.txt"; then
		guest_error "ibv_rc_pingpong received data that differs from what was sent; see $OUT/client.txt"
	fi
	if [ $client_rc -ne 0 ] || [ $server_rc -ne 0 ]; then
		guest_error "ibv_rc_pingpong failed (client $client_rc, server $server_rc); see $OUT/client.txt and $OUT/server.txt"
	fi
	odp_pingpong "${args[@]}"
	library_workload
fi
teardown_rxe
echo ok >"$OUT/done"
