#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guest side of `make shell`: create soft-RoCE, then an interactive login shell on the
# serial console. Leaving the shell powers the VM off.
. "$(dirname "$0")/lib.sh"

setup_rxe && echo "vmtest: $RDMA_DEV is ready on $NETDEV (${GUEST_ADDR%/*}); try: ibv_devinfo, rdma link"
cd "$GUEST_ROOT" || true
[ -n "${vmt_rows:-}" ] && stty rows "$vmt_rows" cols "$vmt_cols" </dev/ttyS0
exec setsid -c bash -l </dev/ttyS0 >/dev/ttyS0 2>&1
