#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The suites that run on the host, not in a guest: the harness's own tests (the parsers
# that decide pass and fail, the kernel-tree guard, the mutants) and libibodp's unit
# tests, each under valgrind, with the install check. Prints one line per suite and
# `N passed, N failed, N skipped`; exit status 1 when anything failed. scripts/test.sh
# runs it first; alone, it needs the userspace build (scripts/build-userspace.sh).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

compgen -G "$BUILD/userspace/tests/unit_*" >/dev/null ||
	die "no libibodp unit tests in $BUILD/userspace/tests: run scripts/build-userspace.sh first"

host=$RESULTS/host
rm -rf "$host"
mkdir -p "$host"
info "host suites"
python3 -m unittest discover -v -s "$ROOT/tests/harness" -p 'test_*.py' >"$host/harness.log" 2>&1 || true
python3 "$ROOT/tests/rdma-core/unittest_to_tap.py" --expected /dev/null "$host/harness.log" \
	>"$host/harness.tap"
python3 "$ROOT/scripts/results.py" tap harness "$host/summary.json" "$host/harness.tap"

# A memory error or a leak under valgrind fails the unit test.
unit=$RESULTS/host-libibodp
rm -rf "$unit"
mkdir -p "$unit"
for t in "$BUILD"/userspace/tests/unit_*; do
	name=$(basename "$t")
	rc=0
	valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
		--log-file="$unit/$name.valgrind" "$t" >"$unit/$name.tap" 2>"$unit/$name.err" || rc=$?
	[ $rc = 0 ] ||
		echo "not ok - $name exited $rc under valgrind (see $unit/$name.valgrind)" >>"$unit/$name.tap"
done
bash "$ROOT/scripts/check-install.sh" >"$unit/install.tap"
python3 "$ROOT/scripts/results.py" tap libibodp "$unit/summary.json" "$unit"/unit_*.tap \
	"$unit/install.tap"

python3 "$ROOT/scripts/results.py" total "$host" "$unit"
