#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make soak`: the seeded random verbs generator (tests/verbs/odp_random) for a long
# time on one VM profile, one seed after another; each seed's TAP goes into
# build/soak/PROFILE, a failing seed's TAP ends with the command that replays it.
#   PROFILE=name          VM profile (default distro-mm: swap, KSM, NUMA, THP, memcg)
#   KERNEL=/path/bzImage  boot this image instead of building ours
#   SOAK_SECONDS=n        how long the seeds run (default 1800, at least 60)
#   SEED=n                the first seed (default: taken from the clock, and printed)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

profile=${PROFILE:-distro-mm}
seconds=${SOAK_SECONDS:-1800}
seed=${SEED:-$(($(date +%s) % 1000000))}
[[ $seconds =~ ^[0-9]+$ ]] && [ "$seconds" -ge 60 ] ||
	die "SOAK_SECONDS=$seconds: give a number of seconds, 60 or more"
[[ $seed =~ ^[0-9]+$ ]] && [ "$seed" -le 4294967295 ] ||
	die "SEED=$seed: give a number from 0 to 4294967295"
prepare_vm "$profile"
bash "$ROOT/scripts/build-userspace.sh"

out=$BUILD/soak/$profile
rm -rf "$out"
mkdir -p "$out"
printf 'SOAK_SEED=%s\nSOAK_SECONDS=%s\n' "$seed" "$seconds" >"$out/soak.env"
info "soaking $(basename "$IMAGE") with profile $profile for $seconds s, seeds from $seed"
start=$(date +%s)
rc=0
VM_TIMEOUT=$((seconds + 900)) bash "$ROOT/scripts/vm-run.sh" "$profile" "$IMAGE" "$out" \
	"$ROOT/scripts/guest/soak.sh" || rc=$?
python3 "$ROOT/scripts/results.py" profile "$profile" "$out" --qemu-rc "$rc" \
	--timeout $((seconds + 900)) --seconds $(($(date +%s) - start)) || true
for tap in "$out"/soak-seed-*.tap; do
	[ -f "$tap" ] || continue
	grep -q '^not ok' "$tap" || continue
	echo "seed ${tap##*soak-seed-}: failed; $(grep -m1 '^# replay:' "$tap" | sed 's/^# //')" |
		sed 's/\.tap:/:/'
done
python3 "$ROOT/scripts/results.py" total "$out"
