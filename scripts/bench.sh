#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make bench`: build our kernel and the benchmark tools, boot each benchmark profile in
# turn (one VM at a time, so that runs do not share the two cores), run every guest
# benchmark in tests/bench/ and print their tables. Only ratios measured side by side in
# one run mean anything on this noisy machine; the tables print them.
#   PROFILE=a,b          profiles (default: iommu-strict, iommu-lazy, virtio-iommu)
#   KERNEL=/path/bzImage benchmark this image instead of building ours
#   BENCH_SECONDS=n      seconds per measurement (default 3)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

IFS=', ' read -r -a profiles <<<"${PROFILE:-iommu-strict,iommu-lazy,virtio-iommu}"
for p in "${profiles[@]}"; do
	require_profile "$p"
done

bash "$ROOT/scripts/deps.sh"
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

bench=$BUILD/bench
dirs=()
for p in "${profiles[@]}"; do
	out=$bench/$p
	rm -rf "$out"
	mkdir -p "$out"
	info "benchmarking on $p ($(profile_var "$p" DESCRIPTION ''))"
	start=$(date +%s)
	rc=0
	BENCH_SECONDS=${BENCH_SECONDS:-3} \
		bash "$ROOT/scripts/vm-run.sh" "$p" "$image" "$out" "$ROOT/scripts/guest/bench.sh" || rc=$?
	python3 "$ROOT/scripts/results.py" profile "$p" "$out" --qemu-rc "$rc" \
		--seconds $(($(date +%s) - start)) >"$out/judgement.txt" || true
	if ! python3 "$ROOT/scripts/results.py" total "$out" >/dev/null; then
		grep -E 'FAIL' "$out/judgement.txt" >&2 || true
		die "the benchmark run on $p did not complete cleanly (console: $out/console.log)"
	fi
	dirs+=("$out")
done
python3 "$ROOT/scripts/bench-report.py" "${dirs[@]}" | tee "$bench/report.txt"
python3 "$ROOT/scripts/bench-plots.py" "$bench/plots" "${dirs[@]}"
echo "make bench: report in $bench/report.txt, plots in $bench/plots/"
