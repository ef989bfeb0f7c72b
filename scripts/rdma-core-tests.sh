#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Unpack rdma-core's pyverbs test suite, which Debian ships gzipped as documentation, into
# $BUILD/rdma-core-tests (run_tests.py and the tests package side by side).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

from=/usr/share/doc/rdma-core/tests
to=$BUILD/rdma-core-tests
[ -f "$from/run_tests.py" ] || die "$from is missing: install python3-pyverbs and rdma-core (scripts/deps.sh)"
stamp=$(dpkg-query -W -f='${Version}' rdma-core)
[ -f "$to/.version" ] && [ "$(cat "$to/.version")" = "$stamp" ] && exit 0
rm -rf "$to"
mkdir -p "$to"
cp -r "$from"/. "$to"/
find "$to" -name '*.gz' -exec gunzip -f {} +
echo "$stamp" >"$to/.version"
