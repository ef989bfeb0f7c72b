#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make run`: build our kernel, boot it (profile iommu-strict unless PROFILE says
# otherwise), create soft-RoCE and run the RDMA workload; print what happened. Then a
# short act on two guests: an MPI job over UCX on ODP memory between them
# (scripts/guest/cluster-act.sh).
#   PROFILE=name          VM profile (default iommu-strict)
#   KERNEL=/path/bzImage  boot this image instead of building ours
set -euo pipefail
. "$(dirname "$0")/lib.sh"

profile=${PROFILE:-iommu-strict}
prepare_vm "$profile"
bash "$ROOT/scripts/build-userspace.sh"

out=$BUILD/run
rm -rf "$out"
mkdir -p "$out"
info "booting $(basename "$IMAGE") with profile $profile and running the workload"
start=$(date +%s)
rc=0
bash "$ROOT/scripts/vm-run.sh" "$profile" "$IMAGE" "$out" "$ROOT/scripts/guest/workload.sh" || rc=$?
echo
[ -f "$out/workload.txt" ] && cat "$out/workload.txt"
echo
if ! python3 "$ROOT/scripts/results.py" profile "$profile" "$out" --qemu-rc "$rc" \
	--seconds $(($(date +%s) - start)) >"$out/judgement.txt" ||
	! python3 "$ROOT/scripts/results.py" total "$out" >/dev/null; then
	grep -E 'FAIL' "$out/judgement.txt" >&2 || true
	die "the workload did not complete cleanly (console: $out/console.log)"
fi
echo "make run: workload completed, data verified, kernel log clean (console: $out/console.log)"

echo
info "two guests of profile $profile: an MPI job over UCX on ODP memory between them"
CLUSTER_DIR=$out/cluster NODES=2 PROFILE=$profile KERNEL=$IMAGE \
	CMD="bash $ROOT/scripts/guest/cluster-act.sh" bash "$ROOT/scripts/cluster.sh" || true
status=$(cat "$out/cluster/node0/status" 2>/dev/null || echo 1)
python3 "$ROOT/scripts/results.py" cluster two-node "$out/cluster" --nodes 2 \
	--status "$status" >"$out/cluster/judgement.txt" || true
if [ "$status" != 0 ] || ! python3 "$ROOT/scripts/results.py" total "$out/cluster" >/dev/null; then
	grep -E 'FAIL' "$out/cluster/judgement.txt" >&2 || true
	die "the two-node act did not complete cleanly (consoles: $out/cluster/node0, node1)"
fi
echo "make run: two-node MPI job completed, data verified, both kernel logs clean"
