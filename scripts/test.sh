#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make test`: install what is missing, build the kernel(s) and the test programs, boot
# each VM profile, run the guest suites and print one line per suite and per profile,
# then `N passed, N failed, N skipped`. Exit status 1 when anything failed.
#   PROFILE=name[,name]  only these profiles (default: all)
#   KERNEL=/path/bzImage run the suites on this kernel image instead of building ours
set -euo pipefail
. "$(dirname "$0")/lib.sh"

profiles=()
if [ -n "${PROFILE:-}" ]; then
	IFS=', ' read -r -a profiles <<<"$PROFILE"
	for p in "${profiles[@]}"; do
		require_profile "$p"
	done
else
	mapfile -t profiles < <(all_profiles)
fi
if [ -n "${KERNEL:-}" ]; then
	[ -f "$KERNEL" ] || die "KERNEL=$KERNEL does not exist"
	KERNEL=$(realpath "$KERNEL")
fi

bash "$ROOT/scripts/deps.sh"
bash "$ROOT/scripts/build-userspace.sh"
bash "$ROOT/scripts/rdma-core-tests.sh"

summaries=()
host=$BUILD/results/host
rm -rf "$host"
mkdir -p "$host"
info "host suites"
python3 -m unittest discover -v -s "$ROOT/tests/harness" -p 'test_*.py' >"$host/harness.log" 2>&1 || true
python3 "$ROOT/tests/rdma-core/unittest_to_tap.py" --expected /dev/null "$host/harness.log" \
	>"$host/harness.tap"
python3 "$ROOT/scripts/results.py" tap harness "$host/summary.json" "$host/harness.tap"
summaries+=("$host")

# Which kernels the chosen profiles need.
declare -A image
for p in "${profiles[@]}"; do
	variant=$(profile_var "$p" KERNEL_VARIANT normal)
	if [ -n "${KERNEL:-}" ]; then
		image[$variant]=$KERNEL
	elif [ -z "${image[$variant]:-}" ]; then
		[ -n "${source_ready:-}" ] || bash "$ROOT/scripts/kernel-source.sh"
		source_ready=1
		bash "$ROOT/scripts/kernel-build.sh" "$variant"
		image[$variant]=$KOBJ/$variant/arch/x86/boot/bzImage
	fi
done

for p in "${profiles[@]}"; do
	info "profile $p: $(profile_var "$p" DESCRIPTION)"
	variant=$(profile_var "$p" KERNEL_VARIANT normal)
	timeout_s=$(profile_var "$p" TIMEOUT 900)
	group=$(profile_var "$p" EXPECT_IOMMU_GROUP)
	bounce=$(profile_var "$p" EXPECT_SWIOTLB)
	# Another kernel image makes no promise about IOMMU group types or debugfs.
	[ -n "${KERNEL:-}" ] && group= && bounce=
	out=$RESULTS/$p
	rm -rf "$out"
	mkdir -p "$out"
	start=$(date +%s)
	rc=0
	bash "$ROOT/scripts/vm-run.sh" "$p" "${image[$variant]}" "$out" \
		"$ROOT/scripts/guest/run-suites.sh" || rc=$?
	python3 "$ROOT/scripts/results.py" profile "$p" "$out" --expect-group "$group" \
		--expect-swiotlb "$bounce" \
		--qemu-rc "$rc" --timeout "$timeout_s" --seconds $(($(date +%s) - start))
	summaries+=("$out")
done

python3 "$ROOT/scripts/results.py" total "${summaries[@]}"
