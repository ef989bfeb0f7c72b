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
counters=/sys/class/infiniband/$RDMA_DEV/ports/1/hw_counters

# The same ping-pong on On-Demand Paging memory (-o): nothing pinned, every page faulted
# in by rxe on first use and linked for the NIC's DMA; the ODP counters say how much.
odp_pingpong() {
	local c before=() after=() client_rc server_rc
	local names=(odp_page_faults odp_pages_faulted odp_pages_linked odp_pages_unlinked
		     odp_invalidations odp_prefetch_requests odp_fault_errors)

	if ! ibv_devinfo -v -d "$RDMA_DEV" | grep -q ODP_SUPPORT; then
		echo "ODP:          not supported by $RDMA_DEV on this kernel" >>"$report"
		return
	fi
	for c in "${names[@]}"; do before+=("$(cat "$counters/$c" 2>/dev/null || echo 0)"); done
	timeout 300 ibv_rc_pingpong "$@" -o >"$OUT/odp-server.txt" 2>&1 &
	server=$!
	wait_listening 18515 $server
	timeout 300 ibv_rc_pingpong "$@" -o "$addr" >"$OUT/odp-client.txt" 2>&1
	client_rc=$?
	wait $server
	server_rc=$?
	for c in "${names[@]}"; do after+=("$(cat "$counters/$c" 2>/dev/null || echo 0)"); done
	{
		echo "ODP workload: the same ping-pong on On-Demand Paging memory (-o), data checked"
		echo "ODP result:   client exit $client_rc, server exit $server_rc"
		grep -hE 'bytes in' "$OUT/odp-client.txt" | sed 's/^/              client: /'
		printf 'ODP counters: '
		for c in "${!names[@]}"; do
			printf '%s %d  ' "${names[$c]#odp_}" $((after[c] - before[c]))
		done
		echo
		echo "              (rxe faulted the buffers' pages on first touch and linked them for"
		echo "              the NIC's DMA; deregistering the MRs unlinked them)"
	} >>"$report"
	if grep -qi 'invalid data' "$OUT/odp-client.txt" "$OUT/odp-server.txt"; then
		guest_error "ibv_rc_pingpong -o received wrong data; see $OUT/odp-client.txt"
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
