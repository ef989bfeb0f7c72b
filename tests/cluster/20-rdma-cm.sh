#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vmtest-timeout: 300
# librdmacm across two hosts: Debian's rping with its data check (-V), and our rdma_cm
# example (userspace/examples/odp_rdma_cm, built against the installed libibodp by the
# host's install check) on ODP memory: 4 MiB (1 MiB on the debug kernel) written, read
# back and sent, every byte checked on both sides, the ODP counters of both nodes moved.
# The server runs on node1, the client on node0. Writes two-host-rdma-cm.tap. About 25 s
# on iommu-strict.
. "$GUEST_ROOT/scripts/guest/cluster-lib.sh"
cluster_suite rdma-cm
peer_addr=$(getent hosts "$PEER" | awk '{ print $1 }')
example=$BUILD/userspace-install/examples/odp_rdma_cm
echo "1..3" >"$tap"
# A slow kernel (the debug one, TIME_FACTOR 3) moves about 0.15 MB/s between its guests:
# 50 ping-pongs and 1 MiB there (194 s of its cluster's 602 with 200 and 4 MiB), the same
# code under KASAN and lockdep.
pings=200 size=4194304
[ "${TIME_FACTOR:-1}" -gt 1 ] && pings=50 size=1048576

name="rping -V: $pings validated RDMA ping-pongs of 32 KiB"
echo "== $name" >>"$log"
if run_pair cm /tmp/cm 120 "rping -s -a $peer_addr -V -C $pings -S 32768" \
	rping -c -a "$peer_addr" -V -C "$pings" -S 32768; then
	echo "ok 1 - $name" >>"$tap"
else
	echo "not ok 1 - $name ($(pair_status))" >>"$tap"
fi

name="odp_rdma_cm: $((size >> 20)) MiB through untouched ODP memory, checked on both sides"
echo "== $name" >>"$log"
counters_before
# Both must exit 0 and say that every byte arrived.
if run_pair cm /tmp/cm 120 "$example server -s $size $peer_addr" \
	"$example" client -s "$size" "$peer_addr" &&
	grep -q "^client: wrote $size bytes .* all as sent" /tmp/cm.client &&
	grep -q "^server: received $size bytes .* all as sent" /tmp/cm.server; then
	echo "ok 2 - $name" >>"$tap"
elif [ "$pair_client" = 0 ] && [ "$pair_server" = 0 ]; then
	echo "not ok 2 - $name (both exited 0, but not both said that all $size bytes arrived as sent; log: $log)" >>"$tap"
else
	echo "not ok 2 - $name ($(pair_status))" >>"$tap"
fi
counters_after
odp_result 3 odp_rdma_cm
rm -f /tmp/cm.*
exit 0
