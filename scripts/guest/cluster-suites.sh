#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The two-host suites of `make test`, run on node0 of a two-node cluster
# (scripts/cluster.sh): each suite in tests/cluster/ talks to node1 and writes TAP files
# into node0's results folder. The same facts and limits as run-suites.sh.
. "$(dirname "$0")/lib.sh"

export RDMA_DEV OUT BUILD GUEST_ROOT TIME_FACTOR
{
	echo "kernel=$(uname -r)"
	[ -n "${vmt_suites:-}" ] && echo "suites=$vmt_suites"
	echo "iommu_group=$(iommu_group_type)"
} >"$OUT/facts"

for suite in "$GUEST_ROOT"/tests/cluster/*.sh; do
	name=$(basename "$suite" .sh)
	suite_wanted "$name" || continue
	echo "vmtest: two-host suite $name" >/dev/console
	limit=$(sed -n 's/^# vmtest-timeout: *\([0-9]\+\)$/\1/p' "$suite" | head -1)
	limit=$(( ${limit:-900} * TIME_FACTOR ))
	start=$(date +%s)
	timeout -k 10 "$limit" bash "$suite" >"$OUT/$name.out" 2>&1
	rc=$?
	[ $rc -eq 124 ] && guest_error "two-host suite $name ran past its ${limit} s and was killed (log: $OUT/$name.out)"
	echo "vmtest: two-host suite $name exited $rc after $(($(date +%s) - start))s" >/dev/console
done
echo ok >"$OUT/done"
