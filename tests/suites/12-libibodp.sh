#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vmtest-timeout: 300
# libibodp on the guest's device: its device test (userspace/tests/device_lib.c), then
# each tool for a short run whose output must say what it promises, and the quick-start
# and rdma_cm examples as installed by `make install` (the host test makes them). Writes
# libibodp-device.tap and libibodp-tools.tap. What it proves is the library's and the
# tools' own behaviour: the ODP traffic under them takes the verbs path that the dma
# programs of 10-verbs.sh drive on every profile (about 70 s a profile).
# vmtest-class: nodma
. "$GUEST_ROOT/scripts/guest/lib.sh"
bin=$BUILD/userspace
tap=$OUT/libibodp-tools.tap
log=$OUT/libibodp-tools.log
: >"$log"

if [ ! -x "$bin/tests/device_lib" ]; then
	printf '1..1\nnot ok 1 - libibodp is not built in %s\n' "$bin" >"$tap"
	exit 0
fi
run_tap libibodp-device 120 "$bin/tests/device_lib" --dev "$RDMA_DEV"

# name | command | its exit status | a line the output must have
tools=(
	"odp-workload: WRITE and READ across untouched ODP MRs, invalidations between rounds|odp-workload --dev $RDMA_DEV --size 16M|0|data verified: .* all as sent"
	"odp-stress: 4 s of verified traffic against munmap/mmap, madvise, mprotect, fork|odp-stress --dev $RDMA_DEV --seconds 4|0|result: *0 transfers with differing bytes, 0 failed transfers, 0 failed memory changes"
	"odp-bench: a short run writes its table and CSV|odp-bench --dev $RDMA_DEV --max-size 1M --touch-size 1M --seconds 0.2 --csv /tmp/odp-bench.csv|0|invalidate \\+ refault of 1 MiB costs"
	"odp-bench --help|odp-bench --help|0|^usage: odp-bench"
	"odp-bench --only memory: 8 bytes of kernel memory per page of a 16 GiB ODP MR (Linux 6.12 keeps 16: a PFN and a DMA address)|odp-bench --dev $RDMA_DEV --only memory|0|^memory +kernel_per_page +16G +bytes +[78](\\.[0-9]+)? \\("
	"odp-bench --only rejects a section it does not have|odp-bench --only steady,nosuch|2|--only: no section 'nosuch'"
	"odp-counters lists the port's ODP counters by name|odp-counters --dev $RDMA_DEV|0|^pages_linked [0-9]+\$"
	"odp-stress rejects a bad option value|odp-stress --seconds -1|2|--seconds wants seconds"
	"the quick-start example, built against the installed libibodp (scripts/check-install.sh), registers 1 MiB as ODP and prefetches all of it|$BUILD/userspace-install/examples/odp_quickstart $RDMA_DEV|0|during the prefetch: page_faults [0-9]+ +pages_faulted 256 "
	"the quick-start example reads its MR's own counters: 256 pages prefetched, none faulted or invalidated|$BUILD/userspace-install/examples/odp_quickstart $RDMA_DEV|0|^this MR's counters: page_faults 0 page_invalidations 0 page_prefetch 256\$"
)

# The rdma_cm example (built by the host test of make install): a server and a client on
# this guest's address, libibodp on librdmacm's context, every byte checked on both sides.
# The client starts once the server says it listens (at most 60 s).
rdma_cm_example() {
	local ex=$BUILD/userspace-install/examples/odp_rdma_cm addr=${GUEST_ADDR%/*} pid i rc
	local out=/tmp/odp_rdma_cm

	[ -x "$ex" ] || { echo "no $ex: the host test of make install builds it"; return 1; }
	"$ex" server -s 4194304 "$addr" >$out.server 2>&1 &
	pid=$!
	for i in $(seq $((600 * TIME_FACTOR))); do
		grep -q '^server: listening' $out.server && break
		kill -0 $pid 2>/dev/null || break
		sleep 0.1
	done
	timeout -k 5 $((60 * TIME_FACTOR)) "$ex" client -s 4194304 "$addr"
	rc=$?
	wait $pid || rc=1
	cat $out.server
	return $rc
}

echo "1..$((${#tools[@]} + 1))" >"$tap"
n=0
for t in "${tools[@]}"; do
	n=$((n + 1))
	IFS='|' read -r name cmd want_rc want <<<"$t"
	echo "== $name: $cmd" >>"$log"
	# A tool of the build folder, or a program named by its full path.
	[ "${cmd#/}" = "$cmd" ] && cmd=$bin/bin/$cmd
	# shellcheck disable=SC2086 # the command line is meant to split into words
	timeout -k 5 $((120 * TIME_FACTOR)) $cmd >/tmp/libibodp-tool.out 2>&1
	rc=$?
	cat /tmp/libibodp-tool.out >>"$log"
	echo "exit $rc" >>"$log"
	if [ "$rc" != "$want_rc" ]; then
		echo "not ok $n - $name: exit status $rc, want $want_rc (see $log)" >>"$tap"
	elif grep -Eq -- "$want" /tmp/libibodp-tool.out; then
		echo "ok $n - $name" >>"$tap"
	else
		echo "not ok $n - $name: no line matching '$want' (see $log)" >>"$tap"
	fi
done
n=$((n + 1))
echo "== odp_rdma_cm server and client on ${GUEST_ADDR%/*}" >>"$log"
rdma_cm_example >/tmp/libibodp-tool.out 2>&1
rc=$?
cat /tmp/libibodp-tool.out >>"$log"
if [ $rc = 0 ] && grep -q '^client: wrote 4194304 bytes .* all as sent' /tmp/libibodp-tool.out &&
	grep -q '^server: received 4194304 bytes .* all as sent' /tmp/libibodp-tool.out &&
	grep -Eq '^server: ODP counters .*pages_faulted [1-9]' /tmp/libibodp-tool.out; then
	echo "ok $n - the rdma_cm example: 4 MiB written into and read from untouched ODP memory over rdma_cm, checked on both sides, the server's ODP faults counted" >>"$tap"
else
	echo "not ok $n - the rdma_cm example: exit $rc (see $log)" >>"$tap"
fi
exit 0
