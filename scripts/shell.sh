#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make shell`: the test guest with an interactive shell (profile iommu-strict unless
# PROFILE says otherwise; KERNEL=/path/bzImage boots another image).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

profile=${PROFILE:-iommu-strict}
require_profile "$profile"
variant=$(profile_var "$profile" KERNEL_VARIANT normal)
bash "$ROOT/scripts/deps.sh"
if [ -n "${KERNEL:-}" ]; then
	image=$(realpath "$KERNEL")
else
	bash "$ROOT/scripts/kernel-source.sh"
	bash "$ROOT/scripts/kernel-build.sh" "$variant"
	image=$KOBJ/$variant/arch/x86/boot/bzImage
fi
bash "$ROOT/scripts/build-userspace.sh"
out=$BUILD/shell
mkdir -p "$out"
info "booting with profile $profile; leave the shell (exit) to power off; Ctrl-A X quits QEMU"
exec bash "$ROOT/scripts/vm-run.sh" "$profile" "$image" "$out" "$ROOT/scripts/guest/shell.sh"
