#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make run`: build our kernel, boot it (profile iommu-strict unless PROFILE says
# otherwise), create soft-RoCE and run the RDMA workload; print what happened.
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
