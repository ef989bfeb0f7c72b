#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vmtest-timeout: 1200
# Open MPI over UCX (pml ucx, osc ucx) across two hosts with our MPI program, which
# checks every byte (tests/mpi/mpi_check.c: point-to-point at odd offsets, allreduce,
# alltoall, bcast, one-sided put, get and accumulate; buffers unmapped and mapped again
# between rounds, so registrations are invalidated under UCX's registration cache).
# Ranks placed by node (node0, node1, node0, ...): every point-to-point transfer crosses
# the link. Once on pinned memory (UCX's registration cache): 2 ranks, two rounds to
# 16 MiB, the second round's buffers where the first's were; once on implicit ODP
# (UCX_IB_REG_METHODS=odp), where both nodes' ODP counters must move: 4 ranks (two of
# them on each node talk over rxe's loopback too), one round to 16 MiB. (Its 64 MiB
# point-to-point took 126 of the suite's 255 s alone and crossed no boundary 16 MiB does
# not: rxe's implicit children are 256 MiB, UCX's rendezvous starts far below.)
# mpi_check's own results go to two-host-mpi-pinned.tap and two-host-mpi-odp.tap; the
# exits and the counters to two-host-mpi.tap. MPI_PINNED_ARGS and MPI_ODP_ARGS replace the
# options. About 2 minutes on iommu-strict.
#
# UCX 1.13 crashes in every process that used implicit ODP when it closes the device
# (openucx/ucx#8735): mpirun then reports a signal 11. That exit is a TODO naming the
# crash, only when every result before it was printed and passed.
. "$GUEST_ROOT/scripts/guest/cluster-lib.sh"
cluster_suite mpi
pinned_args=${MPI_PINNED_ARGS:--np 2 $BUILD/tests/mpi/mpi_check --max-size 16777221 --rounds 2}
odp_args=${MPI_ODP_ARGS:--np 4 -x UCX_IB_REG_METHODS=odp $BUILD/tests/mpi/mpi_check --max-size 16777221 --rounds 1}

# Every result of a TAP file passed and its plan was met.
all_passed() {
	local plan got

	plan=$(sed -n 's/^1\.\.\([0-9]*\).*/\1/p' "$1" | head -1)
	got=$(grep -c '^ok ' "$1")
	[ -n "$plan" ] && [ "$plan" -gt 0 ] && [ "$got" = "$plan" ] && ! grep -q '^not ok' "$1"
}

# mpi_case N MEMORY NAME ARGS: mpirun ARGS, mpi_check's TAP into NAME.tap and the rest of
# the output into NAME.err; TAP results N (its exit) and N + 1 (the ODP counters: moved
# on both nodes for ODP memory, still for pinned memory).
mpi_case() {
	local n=$1 memory=$2 name=$3 args=$4 rc

	echo "# $memory: mpirun --map-by node --hostfile $CLUSTER_HOSTFILE $args" >>"$tap"
	counters_before
	# shellcheck disable=SC2086 # the arguments are meant to split into words
	timeout -k 10 $((540 * TIME_FACTOR)) mpirun --map-by node --hostfile "$CLUSTER_HOSTFILE" \
		$args >"$OUT/$name.tap" 2>"$OUT/$name.err"
	rc=$?
	counters_after
	if [ $rc = 0 ]; then
		echo "ok $n - mpi_check on $memory exited 0" >>"$tap"
	elif [ "$memory" != "pinned memory" ] && all_passed "$OUT/$name.tap" &&
		ucx_odp_crash "$OUT/$name.err"; then
		echo "not ok $n - mpi_check on $memory: every result passed, then signal 11 at exit # TODO $UCX_CRASH" >>"$tap"
	else
		echo "not ok $n - mpi_check on $memory exited $rc (see $OUT/$name.err)" >>"$tap"
	fi
	if [ "$memory" = "pinned memory" ]; then
		pinned_result $((n + 1)) "mpi_check on $memory"
	else
		odp_result $((n + 1)) "mpi_check on $memory"
	fi
}

echo "1..4" >"$tap"
mpi_case 1 "pinned memory" two-host-mpi-pinned "$pinned_args"
mpi_case 3 "implicit ODP" two-host-mpi-odp "$odp_args"
exit 0
