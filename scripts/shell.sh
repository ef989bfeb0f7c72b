#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make shell`: the test guest with an interactive shell (profile iommu-strict unless
# PROFILE says otherwise; KERNEL=/path/bzImage boots another image).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

profile=${PROFILE:-iommu-strict}
prepare_vm "$profile"
bash "$ROOT/scripts/build-userspace.sh"
out=$BUILD/shell
mkdir -p "$out"
info "booting with profile $profile; leave the shell (exit) to power off; Ctrl-A X quits QEMU"
exec bash "$ROOT/scripts/vm-run.sh" "$profile" "$IMAGE" "$out" "$ROOT/scripts/guest/shell.sh"
