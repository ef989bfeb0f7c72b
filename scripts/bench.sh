#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make bench`: build our kernel and the benchmark tools, boot each benchmark profile in
# turn (one VM at a time, so that runs do not share the two cores), run every guest
# benchmark in tests/bench/ and print their tables. Only ratios measured side by side in
# one run mean anything on this noisy machine; the tables print them.
#   PROFILE=a,b          profiles (default: iommu-strict, iommu-lazy, virtio-iommu)
#   KERNEL=/path/bzImage benchmark this image instead of building ours
#   BENCH_SECONDS=n      seconds per measurement (default 3)
#   COMPARE=/path/bzImage  also boot that image, in turn with ours (BOOTS=n pairs, default
#                        2), and print ours against it on the odp-bench rows both can run
#   BENCH_REPS=n         repetitions of each cross-host row (default 5)
# Profiles with TWO_HOST=yes also get cross-host rows: two guests, perftest and
# ucx_perftest between them (tests/bench/cluster/).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

IFS=', ' read -r -a profiles <<<"${PROFILE:-iommu-strict,iommu-lazy,virtio-iommu}"
for p in "${profiles[@]}"; do
	require_profile "$p"
done

bash "$ROOT/scripts/deps.sh"
# Every guest of a benchmark, clusters included, has its memory backed before it boots
# (scripts/vm-run.sh says why).
export VM_PREALLOC=1
# The guest's benchmark programs come from our source, whichever kernel runs.
bash "$ROOT/scripts/kernel-source.sh"
if [ -n "${KERNEL:-}" ]; then
	[ -f "$KERNEL" ] || die "KERNEL=$KERNEL does not exist"
	image=$(realpath "$KERNEL")
else
	bash "$ROOT/scripts/kernel-build.sh" normal
	image=$KOBJ/normal/arch/x86/boot/bzImage
fi
bash "$ROOT/scripts/build-bench.sh"
bash "$ROOT/scripts/build-userspace.sh"

other=
if [ -n "${COMPARE:-}" ]; then
	[ -f "$COMPARE" ] || die "COMPARE=$COMPARE does not exist"
	other=$(realpath "$COMPARE")
	boots=${BOOTS:-2}
	[[ $boots =~ ^[1-9][0-9]?$ ]] || die "BOOTS=$boots: give a number of boots from 1 to 99"
fi

# One boot of @image on profile @1 into @3, running the guest benchmarks named like @4
# (all when empty); @5: whether a failed run stops make bench (else it is reported).
boot() {
	local p=$1 img=$2 out=$3 only=$4 strict=$5 rc=0 start
	rm -rf "$out"
	mkdir -p "$out"
	start=$(date +%s)
	SUITES=$only BENCH_SECONDS=${BENCH_SECONDS:-3} \
		bash "$ROOT/scripts/vm-run.sh" "$p" "$img" "$out" "$ROOT/scripts/guest/bench.sh" || rc=$?
	python3 "$ROOT/scripts/results.py" profile "$p" "$out" --qemu-rc "$rc" \
		--seconds $(($(date +%s) - start)) >"$out/judgement.txt" || true
	python3 "$ROOT/scripts/results.py" total "$out" >/dev/null && return 0
	grep -E 'FAIL' "$out/judgement.txt" >&2 || true
	[ "$strict" = 1 ] &&
		die "the benchmark run on $p did not complete cleanly (console: $out/console.log)"
	warn "the benchmark run of $img on $p did not complete cleanly: its missing rows say so (console: $out/console.log)"
}

bench=$BUILD/bench
dirs=()
pairs=()
for p in "${profiles[@]}"; do
	info "benchmarking on $p ($(profile_var "$p" DESCRIPTION ''))"
	boot "$p" "$image" "$bench/$p" "" 1
	dirs+=("$bench/$p")
	[ -n "$other" ] || continue
	# Ours and the other image in turn, odp-bench only (the other benchmarks need our
	# kernel's interfaces); ours' first boot is the full run above.
	for i in $(seq 1 "$boots"); do
		ours=$bench/$p
		if [ "$i" -gt 1 ]; then
			ours=$bench/compare/$p-ours-$i
			info "benchmarking ours on $p again (boot $i of $boots)"
			boot "$p" "$image" "$ours" 30-odp 1
		fi
		info "benchmarking $other on $p (boot $i of $boots)"
		boot "$p" "$other" "$bench/compare/$p-theirs-$i" 30-odp 0
		pairs+=(--pair "$p" "$ours" "$bench/compare/$p-theirs-$i")
	done
done
# The cross-host rows (tests/bench/cluster/): two guests of each profile with TWO_HOST=yes,
# one cluster at a time, as its two guests take both cores.
cross=()
for p in "${profiles[@]}"; do
	[ "$(profile_var "$p" TWO_HOST)" = yes ] || continue
	out=$bench/two-host-$p
	rm -rf "$out"
	mkdir -p "$out"
	info "cross-host rows on two guests of $p (${BENCH_REPS:-5} repetitions)"
	rc=0
	start=$(date +%s)
	CLUSTER_DIR=$out NODES=2 PROFILE=$p KERNEL=$image \
		CMD="BENCH_REPS=${BENCH_REPS:-5} bash $ROOT/scripts/guest/cluster-bench.sh" \
		bash "$ROOT/scripts/cluster.sh" >"$out.log" 2>&1 || rc=$?
	python3 "$ROOT/scripts/results.py" cluster "two-host-$p" "$out" --nodes 2 --status "$rc" \
		--log "$out.log" --seconds $(($(date +%s) - start)) >"$out/judgement.txt" ||
		{ grep -E 'FAIL' "$out/judgement.txt" >&2 || true
		  warn "the cross-host run on $p did not complete cleanly: its missing rows say so (log: $out/node0/50-cross-host.log)"; }
	cross+=(--cross-host "two-host-$p" "$out/node0")
done
python3 "$ROOT/scripts/bench-report.py" "${dirs[@]}" ${other:+--other "$other"} "${pairs[@]}" \
	"${cross[@]}" |
	tee "$bench/report.txt"
python3 "$ROOT/scripts/bench-plots.py" "$bench/plots" "${dirs[@]}" ${other:+--other "$other"} \
	"${pairs[@]}"
echo "make bench: report in $bench/report.txt, plots in $bench/plots/"
