#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build the test programs that run in the guest (they use this machine's libibverbs,
# which the guest sees through the shared root), and the kernel's hmm-tests selftest
# from the patched source (run scripts/kernel-source.sh first).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

log=$BUILD/logs/userspace.log
mkdir -p "$BUILD/logs"
# libibodp, its tools and tests (the guest runs them from here too); the verbs tests
# link it.
make -C "$ROOT/userspace" O="$BUILD/userspace" >"$log" 2>&1 ||
	{ show_log_tail "$log"; die "building userspace/ (libibodp) failed (log: $log)"; }
make -C "$ROOT/tests/verbs" O="$BUILD/tests/verbs" IBODP_O="$BUILD/userspace" >>"$log" 2>&1 ||
	{ show_log_tail "$log"; die "building tests/verbs failed (log: $log)"; }

# hmm-tests with the series' DMA-mode cases, built as its selftest Makefile would (it
# includes lib/test_hmm_uapi.h and the kselftest harness from the kernel tree).
[ -f "$SRC/tools/testing/selftests/mm/hmm-tests.c" ] ||
	die "no kernel source in $SRC: run scripts/kernel-source.sh first"
mkdir -p "$BUILD/tests/hmm"
gcc -std=gnu11 -O2 -Wall -Werror -I"$SRC" -I"$SRC/tools/testing/selftests" \
	-I"$SRC/tools/testing/selftests/mm" -o "$BUILD/tests/hmm/hmm-tests" \
	"$SRC/tools/testing/selftests/mm/hmm-tests.c" -lpthread >>"$log" 2>&1 ||
	{ show_log_tail "$log"; die "building hmm-tests failed (log: $log)"; }
# The MPI program of the two-host suite, with Open MPI's compiler wrapper.
make -C "$ROOT/tests/mpi" O="$BUILD/tests/mpi" >>"$log" 2>&1 ||
	{ show_log_tail "$log"; die "building tests/mpi (mpicc) failed (log: $log)"; }
