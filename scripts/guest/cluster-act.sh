#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The two-node act of `make run`, on node0 of a two-node cluster: an MPI job over UCX on
# ODP memory across the two guests (tests/mpi/mpi_check, every byte checked), then each
# node's ODP counters and the settings it used. Exit status 0 when every check passed.
GUEST_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$GUEST_ROOT/scripts/guest/cluster-lib.sh"
prog=$BUILD/tests/mpi/mpi_check
args="--max-size 4194307 --rounds 1"
odp=(-x UCX_IB_REG_METHODS=odp)
memory="implicit ODP (UCX_IB_REG_METHODS=odp: one ODP MR per process)"
if ! ibv_devinfo -v -d "$RDMA_DEV" | grep -q ODP_SUPPORT; then
	odp=()
	memory="pinned memory: $RDMA_DEV has no On-Demand Paging on this kernel"
fi

echo "MPI job:      mpi_check, 2 ranks (node0, $PEER), $args, on $memory"
counters_before
# shellcheck disable=SC2086 # the options are meant to split into words
mpirun -np 2 --map-by node --hostfile "$CLUSTER_HOSTFILE" "${odp[@]}" "$prog" $args \
	>/tmp/act.tap 2>/tmp/act.err
rc=$?
counters_after
passed=$(grep -c '^ok ' /tmp/act.tap)
failed=$(grep -c '^not ok ' /tmp/act.tap)
plan=$(sed -n 's/^1\.\.//p' /tmp/act.tap)
echo "Data:         $passed of ${plan:-?} checks passed, $failed failed (every byte of every transfer compared)"
grep '^not ok ' /tmp/act.tap | sed 's/^/              /'
if [ $rc = 0 ]; then
	echo "Exit:         0"
elif [ ${#odp[@]} -gt 0 ] && [ "$passed" = "$plan" ] && ucx_odp_crash /tmp/act.err; then
	echo "Exit:         $rc: every process crashed at exit, after its results: UCX 1.13's bug"
	echo "              with implicit ODP (uct_ib_md_close, openucx/ucx#8735), not the kernel's"
	rc=0
else
	echo "Exit:         $rc (mpirun's messages: $OUT/act.err)"
	cp /tmp/act.err "$OUT/act.err"
fi
echo "ODP counters: node0: $(deltas_line "$d0")"
echo "              $PEER: $(deltas_line "$d1")"
echo "Settings:     UCX_NET_DEVICES=$UCX_NET_DEVICES UCX_TLS=$UCX_TLS UCX_UD_ETH_DGID_CHECK=$UCX_UD_ETH_DGID_CHECK"
echo "              ${odp[*]:-(no ODP)}; Open MPI: $(tr '\n' ' ' <<<"$CLUSTER_MCA_PARAMS" | sed 's/ = /=/g; s/ $//')"
[ "$passed" = "$plan" ] && [ "$failed" = 0 ] && [ $rc = 0 ] || exit 1
echo ok >"$OUT/done"
