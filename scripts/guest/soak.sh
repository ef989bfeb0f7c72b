#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guest side of `make soak`: the seeded random verbs generator, one seed after
# another from $OUT/soak.env's SOAK_SEED until SOAK_SECONDS are up, each seed's TAP in
# the results folder; memory under pressure as in the verbs suite (zram swap, memory
# cgroups where the kernel has them), then the leak check.
. "$(dirname "$0")/lib.sh"

# shellcheck source=/dev/null # written by scripts/soak.sh
. "$OUT/soak.env"
echo "kernel=$(uname -r)" >"$OUT/facts"
setup_rxe || guest_error "no $RDMA_DEV: nothing to soak"
swap_on_zram 512M
memcg_on
# One seed runs at most this long, so that a long soak tries many seeds.
per_seed=300
seed=$SOAK_SEED
end=$(($(date +%s) + SOAK_SECONDS))
while left=$((end - $(date +%s))); [ "$left" -gt 10 ]; do
	secs=$((left < per_seed ? left : per_seed))
	echo "vmtest: soak seed $seed for up to $secs s" >/dev/console
	run_tap "soak-seed-$seed" $((secs + 120)) "$BUILD/tests/verbs/odp_random" \
		--dev "$RDMA_DEV" --seed "$seed" --ops 100000000 --seconds "$secs"
	seed=$((seed + 1))
done
swap_off
teardown_rxe
kmemleak_report
echo ok >"$OUT/done"
