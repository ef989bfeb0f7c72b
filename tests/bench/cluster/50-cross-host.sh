#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The cross-host rows of `make bench`, run on node0 of a two-node cluster against node1:
# ODP against pinned memory with perftest (ib_write_bw and ib_read_bw at 64 KiB and 1 MiB
# in steady state, the first five 1 MiB messages of a new ib_write_bw with its buffers
# untouched (perftest runs no fewer), ib_write_lat at 8 bytes) and ucx_perftest (put
# bandwidth at 64 KiB and 1 MiB, the first five 1 MiB puts of a new ucx_perftest with no
# warm-up, put latency at 8 bytes; explicit ODP against pinned). BENCH_REPS repetitions
# (5), ODP and pinned taking turns, which one first alternating. Writes
# $OUT/50-cross-host.csv in the format of 30-odp.csv
# (section,metric,memory,size_bytes,rep,value,unit); a run that gives no figure is said in
# the log and makes the exit status 1.
. "$GUEST_ROOT/scripts/guest/cluster-lib.sh"
log=$OUT/50-cross-host.log
csv=$OUT/50-cross-host.csv
reps=${BENCH_REPS:-5}
: >"$log"
echo "section,metric,memory,size_bytes,rep,value,unit" >"$csv"

# SECTION|METRIC|SIZE|UNIT|ARGUMENTS: the same arguments on both sides (perftest) or the
# client's test and its arguments (ucx_perftest).
rows=(
	"ib_write_bw|steady|65536|MB/s|ib_write_bw -d $RDMA_DEV -x 1 -s 65536 -n 200"
	"ib_write_bw|steady|1048576|MB/s|ib_write_bw -d $RDMA_DEV -x 1 -s 1048576 -n 20"
	"ib_write_bw|first_touch|1048576|MB/s|ib_write_bw -d $RDMA_DEV -x 1 -s 1048576 -n 5"
	"ib_read_bw|steady|65536|MB/s|ib_read_bw -d $RDMA_DEV -x 1 -s 65536 -n 200"
	"ib_read_bw|steady|1048576|MB/s|ib_read_bw -d $RDMA_DEV -x 1 -s 1048576 -n 20"
	"ib_write_lat|steady|8|us|ib_write_lat -d $RDMA_DEV -x 1 -s 8 -n 500"
	"ucx_perftest|ucp_put_bw|65536|MB/s|-t ucp_put_bw -s 65536 -n 200 -w 10"
	"ucx_perftest|ucp_put_bw|1048576|MB/s|-t ucp_put_bw -s 1048576 -n 20 -w 2"
	"ucx_perftest|first_touch|1048576|MB/s|-t ucp_put_bw -s 1048576 -n 5 -w 0"
	"ucx_perftest|ucp_put_lat|8|us|-t ucp_put_lat -s 8 -n 500 -w 10"
)

# The figure a run printed: perftest's average bandwidth or typical latency, or
# ucx_perftest's final bandwidth or latency; nothing when there is none.
figure() {
	local file=$1 unit=$2 ucx=$3

	if [ "$ucx" = 1 ]; then
		awk -v lat=$([ "$unit" = us ] && echo 1 || echo 0) \
			'/^Final: +[0-9]/ { v = lat ? $3 : $7 } END { if (v != "") print v }' "$file"
	else
		awk -v lat=$([ "$unit" = us ] && echo 1 || echo 0) \
			'/^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+/ { v = lat ? $5 : $4 } END { if (v != "") print v }' "$file"
	fi
}

# measure ROW MEMORY REP: one run, its figure appended to the CSV; 1 when it gave none.
measure() {
	local section metric size unit args mode=$2 rep=$3 value

	IFS='|' read -r section metric size unit args <<<"$1"
	echo "== $section $metric $size, $mode, repetition $rep" >>"$log"
	if [ "$section" = ucx_perftest ]; then
		local env='' extra=''
		[ "$mode" = odp ] && { env=UCX_IB_ODP_MAX_SIZE=inf; extra=-B; }
		# shellcheck disable=SC2086 # the arguments are meant to split into words
		run_pair 13337 /tmp/bench 120 "env $env ucx_perftest $extra" \
			env $env ucx_perftest "$PEER" $args $extra
	else
		[ "$mode" = odp ] && args="$args --odp"
		# shellcheck disable=SC2086 # the arguments are meant to split into words
		perftest_pair /tmp/bench 120 $args
	fi
	value=$(figure /tmp/bench.client "$unit" $([ "$section" = ucx_perftest ] && echo 1 || echo 0))
	if [ "$pair_client" != 0 ] || [ "$pair_server" != 0 ] || [ -z "$value" ]; then
		echo "cross-host: $section $metric $size $mode repetition $rep: no figure (client exit $pair_client, server exit $pair_server)" >>"$log"
		return 1
	fi
	echo "$section,$metric,$mode,$size,$rep,$value,$unit" >>"$csv"
}

failed=0
for rep in $(seq "$reps"); do
	order="pinned odp"
	[ $((rep % 2)) = 0 ] && order="odp pinned"
	for row in "${rows[@]}"; do
		for mode in $order; do
			measure "$row" "$mode" "$rep" || failed=1
		done
	done
done
rm -f /tmp/bench.*
exit $failed
