#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build the test programs that run in the guest (they use this machine's libibverbs,
# which the guest sees through the shared root).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

log=$BUILD/logs/userspace.log
mkdir -p "$BUILD/logs"
make -C "$ROOT/tests/verbs" O="$BUILD/tests/verbs" >"$log" 2>&1 ||
	{ show_log_tail "$log"; die "building tests/verbs failed (log: $log)"; }
