#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The standard tools on ODP memory: ibv_rc_pingpong -o (with data validation) and
# perftest's ib_write_bw, ib_read_bw, ib_send_bw with --odp, each as a server and a
# client on this guest over loopback. Writes odp-tools.tap. Skipped, saying why, when
# the device does not advertise ODP.
tap=$OUT/odp-tools.tap
log=$OUT/odp-tools.log
: >"$log"

tests=(
	"ibv_rc_pingpong -o: 1000 validated round trips|ibv_rc_pingpong -d $RDMA_DEV -g 1 -o -c -n 1000"
	"ib_write_bw --odp|ib_write_bw -d $RDMA_DEV -x 1 --odp -n 200 -s 65536"
	"ib_read_bw --odp|ib_read_bw -d $RDMA_DEV -x 1 --odp -n 200 -s 65536"
	"ib_send_bw --odp|ib_send_bw -d $RDMA_DEV -x 1 --odp -n 200 -s 65536"
)

echo "1..${#tests[@]}" >"$tap"
if ! ibv_devinfo -v -d "$RDMA_DEV" 2>>"$log" | grep -q 'ODP_SUPPORT'; then
	for i in "${!tests[@]}"; do
		echo "ok $((i + 1)) - ${tests[$i]%%|*} # SKIP ODP not supported by $RDMA_DEV" >>"$tap"
	done
	exit 0
fi

n=0
for t in "${tests[@]}"; do
	n=$((n + 1))
	name=${t%%|*}
	cmd=${t#*|}
	echo "== $name: $cmd" >>"$log"
	# shellcheck disable=SC2086 # the command line is meant to split into words
	timeout 60 $cmd >>"$log" 2>&1 &
	server=$!
	sleep 1
	# shellcheck disable=SC2086
	timeout 60 $cmd 127.0.0.1 >>"$log" 2>&1
	client=$?
	wait $server
	srv=$?
	if [ $client -eq 0 ] && [ $srv -eq 0 ]; then
		echo "ok $n - $name" >>"$tap"
	else
		echo "not ok $n - $name (client exit $client, server exit $srv; log: $log)" >>"$tap"
	fi
done
exit 0
