#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make test`: install what is missing, build the kernel(s) and the test programs, boot
# each VM profile, run the guest suites and print one line per suite and per profile,
# then `N passed, N failed, N skipped`. Exit status 1 when anything failed.
#   PROFILE=name[,name]  only these profiles (default: all)
#   KERNEL=/path/bzImage run the suites on this kernel image instead of building ours
#   HOST_CPUS=n          guest CPUs running at once (default: the host's, nproc)
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

# Each step's time goes into the time table printed before the last line.
mkdir -p "$RESULTS"
export TIMES=$RESULTS/times.tsv
: >"$TIMES"
wall_start=$(date +%s)

timed step "dependencies (scripts/deps.sh)" bash "$ROOT/scripts/deps.sh"
# The source also gives the guest the kernel's own selftests, whichever kernel runs.
timed step "kernel source and series" bash "$ROOT/scripts/kernel-source.sh"
timed step "userspace build" bash "$ROOT/scripts/build-userspace.sh"
timed step "rdma-core's tests unpacked" bash "$ROOT/scripts/rdma-core-tests.sh"

# The host suites' lines come first; their totals join the guests' at the end (a run that
# stopped early leaves no summary, which counts as a failure, not an old one).
rm -f "$RESULTS/host/summary.json" "$RESULTS/host-libibodp/summary.json"
host_suites() {
	bash "$ROOT/scripts/test-host.sh" | grep -v '^[0-9]* passed, ' || true
}
timed step "host suites" host_suites
summaries=("$RESULTS/host" "$RESULTS/host-libibodp")

# Which kernels the chosen profiles need.
declare -A image
for p in "${profiles[@]}"; do
	variant=$(profile_var "$p" KERNEL_VARIANT normal)
	if [ -n "${KERNEL:-}" ]; then
		image[$variant]=$KERNEL
	elif [ -z "${image[$variant]:-}" ]; then
		bash "$ROOT/scripts/kernel-build.sh" "$variant"
		image[$variant]=$KOBJ/$variant/arch/x86/boot/bzImage
	fi
done

# Build each image's initramfs now, so that VMs started side by side find it ready.
initramfs_all() {
	local img
	for img in "${image[@]}"; do
		bash "$ROOT/scripts/make-initramfs.sh" "$img" >/dev/null
	done
}
timed step "initramfs" initramfs_all

# A guest may run every suite to its timeout; a profile may ask for more (debug).
vm_timeout() {
	local t f

	t=$(profile_var "$1" TIMEOUT 900)
	f=$(profile_var "$1" TIME_FACTOR 1)
	echo $((t > suites_time * f ? t : suites_time * f))
}
suites_time=$(guest_timeout)

# The two-host suites first, one cluster at a time: its two guests take both cores.
run_two_host() {
	local p=$1 out=$RESULTS/two-host-$1 start rc=0

	start=$(date +%s)
	echo "    two-host suites on two guests of profile $p"
	# A profile may run only some of them (TWO_HOST_SUITES); SUITES, when given, picks instead.
	SUITES=${SUITES:-$(profile_var "$p" TWO_HOST_SUITES)} \
	CLUSTER_DIR=$out NODES=2 PROFILE=$p KERNEL=${image[$(profile_var "$p" KERNEL_VARIANT normal)]} \
		VM_TIMEOUT=$(( $(guest_timeout "$ROOT/tests/cluster") * $(profile_var "$p" TIME_FACTOR 1) )) \
		CMD="bash $ROOT/scripts/guest/cluster-suites.sh" \
		bash "$ROOT/scripts/cluster.sh" >"$out.log" 2>&1 || rc=$?
	echo "$rc" >"$out/cluster-rc"
	echo $(($(date +%s) - start)) >"$out/seconds"
	record_time two-host "$p" "$(cat "$out/seconds")"
	echo "    two-host suites on $p finished in $(cat "$out/seconds") s"
}
# Whether SUITES leaves any two-host suite to run (all when it is empty).
two_host_wanted() {
	local f want

	[ -z "${SUITES:-}" ] && return 0
	for f in "$ROOT"/tests/cluster/*.sh; do
		for want in ${SUITES//,/ }; do
			case $(basename "$f" .sh) in *"$want"*) return 0 ;; esac
		done
	done
	return 1
}
two_host=()
for p in "${profiles[@]}"; do
	[ "$(profile_var "$p" TWO_HOST)" = yes ] && two_host_wanted || continue
	two_host+=("$p")
	rm -rf "${RESULTS:?}/two-host-$p"
	mkdir -p "$RESULTS/two-host-$p"
	run_two_host "$p"
done

# Boot VMs side by side while their guest CPUs fit the host's cores (profile_cpus: four
# emulated CPUs on two cores made rxe's wakeups 3 to 5 times slower): the two-CPU
# profiles one at a time first, then the one-CPU ones in pairs (on 2 cores), each group
# longest first; results are judged and printed afterwards, in the usual profile order.
run_profile() {
	local p=$1 out=$RESULTS/$1 start rc=0

	start=$(date +%s)
	VM_TIMEOUT=$(vm_timeout "$p") bash "$ROOT/scripts/vm-run.sh" "$p" \
		"${image[$(profile_var "$p" KERNEL_VARIANT normal)]}" "$out" \
		"$ROOT/scripts/guest/run-suites.sh" || rc=$?
	echo "$rc" >"$out/qemu-rc"
	echo $(($(date +%s) - start)) >"$out/seconds"
	record_time profile "$p" "$(cat "$out/seconds")"
	echo "    profile $p finished in $(cat "$out/seconds") s"
}
host_cpus=${HOST_CPUS:-$(nproc)}
declare -A cpus=() running=()
for p in "${profiles[@]}"; do
	cpus[$p]=$(profile_cpus "$p")
done
mapfile -t order < <(for p in "${profiles[@]}"; do
	echo "${cpus[$p]} $(vm_timeout "$p") $p"
done | sort -s -k1,1nr -k2,2nr | cut -d' ' -f3)
info "booting ${#order[@]} profile(s), $host_cpus guest CPUs at a time"
profiles_start=$(date +%s)
# running: the guest CPUs of each VM still running, by PID; in_use: their sum.
in_use=0
for p in "${order[@]}"; do
	rm -rf "${RESULTS:?}/$p"
	mkdir -p "$RESULTS/$p"
	# A guest with more CPUs than the host has runs alone.
	while [ "${#running[@]}" -gt 0 ] && [ $((in_use + cpus[$p])) -gt "$host_cpus" ]; do
		ended=
		wait -n -p ended || true
		[ -n "$ended" ] || break
		in_use=$((in_use - ${running[$ended]:-0}))
		unset "running[$ended]"
	done
	echo "    profile $p, ${cpus[$p]}-CPU guest: $(profile_var "$p" DESCRIPTION)"
	run_profile "$p" &
	running[$!]=${cpus[$p]}
	in_use=$((in_use + cpus[$p]))
done
wait
record_time step "profiles, $host_cpus guest CPUs at a time" $(($(date +%s) - profiles_start))

for p in "${profiles[@]}"; do
	out=$RESULTS/$p
	group=$(profile_var "$p" EXPECT_IOMMU_GROUP)
	bounce=$(profile_var "$p" EXPECT_SWIOTLB)
	nodes=$(profile_var "$p" EXPECT_NUMA_NODES)
	# Another kernel image makes no promise about IOMMU group types, debugfs or which
	# of our features it has: its skips are reported, not judged.
	skips=$ROOT/tests/expected-skips
	[ -n "${KERNEL:-}" ] && group='' && bounce='' && nodes='' && skips=''
	info "profile $p"
	python3 "$ROOT/scripts/results.py" profile "$p" "$out" --expect-group "$group" \
		--expect-swiotlb "$bounce" --expect-numa-nodes "$nodes" --expected-skips "$skips" --qemu-rc "$(cat "$out/qemu-rc" 2>/dev/null || echo 1)" \
		--timeout "$(vm_timeout "$p")" --seconds "$(cat "$out/seconds" 2>/dev/null || echo 0)"
	summaries+=("$out")
done

for p in "${two_host[@]}"; do
	out=$RESULTS/two-host-$p
	skips=$ROOT/tests/expected-skips
	[ -n "${KERNEL:-}" ] && skips=''
	info "two-host suites on $p"
	python3 "$ROOT/scripts/results.py" cluster "two-host-$p" "$out" --nodes 2 \
		--expected-skips "$skips" --status "$(cat "$out/cluster-rc" 2>/dev/null || echo 1)" \
		--log "$out.log" --seconds "$(cat "$out/seconds" 2>/dev/null || echo 0)"
	summaries+=("$out")
done

record_time wall "make test" $(($(date +%s) - wall_start))
python3 "$ROOT/scripts/time_table.py" "$TIMES" "$RESULTS" >"$RESULTS/time-table.txt" || true
cat "$RESULTS/time-table.txt"
python3 "$ROOT/scripts/results.py" total "${summaries[@]}"
