#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Boot one kernel image under QEMU/TCG with one VM profile and run a job in the guest.
#   vm-run.sh PROFILE BZIMAGE OUTDIR JOB    run JOB (a script path) in the guest; the
#                                           console goes to OUTDIR/console.log
# A JOB named */shell.sh is interactive: the serial console is this terminal.
# A node of a cluster (scripts/cluster.sh) sets VM_NETDEV (the -netdev of its NIC instead
# of QEMU's user network), VM_MAC, VM_CMDLINE (more kernel parameters) and
# VM_INTERACTIVE=1 (the console is this terminal, whatever the job).
# VM_PREALLOC=1 (make bench): QEMU backs all of the guest's memory before it boots.
# Without it the guest's first use of each of its pages costs the host a page fault
# and a zeroing, which real memory does not: a first-touch benchmark then times the
# emulator (an ODP fault of a fresh MiB took 2.4 to 3.5 ms without, 2.37 ms with it).
# The host root is the guest's root (read-only); OUTDIR is shared read-write at the same
# path. Exit status: QEMU's, or 124 when the guest ran past the profile's TIMEOUT (or
# VM_TIMEOUT seconds when set).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

profile=${1:?usage: vm-run.sh PROFILE BZIMAGE OUTDIR JOB}
image=${2:?missing kernel image}
out=${3:?missing output folder}
job=${4:?missing job}

require_profile "$profile"
QEMU_DEVICES=$(profile_var "$profile" QEMU_DEVICES)
KERNEL_CMDLINE=$(profile_var "$profile" KERNEL_CMDLINE)
TIMEOUT=${VM_TIMEOUT:-$(profile_var "$profile" TIMEOUT 900)}
ODP_DMA=$(profile_var "$profile" EXPECT_ODP_DMA '')
IOMMU_GROUP=$(profile_var "$profile" EXPECT_IOMMU_GROUP '')
TIME_FACTOR=$(profile_var "$profile" TIME_FACTOR 1)
CLASSES=$(profile_var "$profile" PROGRAM_CLASSES "dma mm nodma")
CPUS=$(profile_cpus "$profile")
[ -f "$image" ] || die "kernel image $image does not exist"
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 is missing: run scripts/deps.sh"

mkdir -p "$out"
initrd=$(bash "$ROOT/scripts/make-initramfs.sh" "$image")

interactive=${VM_INTERACTIVE:-}
[ "$(basename "$job")" = shell.sh ] && interactive=1

# panic=-1 with -no-reboot: a panicking guest ends QEMU at once instead of hanging.
cmdline="console=ttyS0 panic=-1 vmt_root=$ROOT vmt_build=$BUILD vmt_out=$out vmt_job=$job"
cmdline="$cmdline $KERNEL_CMDLINE ${VM_CMDLINE:-}"
# The DMA path the ODP tests must see (VT_ODP_DMA in tests/verbs/lib/odp.h) and the
# IOMMU group type of the NIC (libibodp's device test).
[ -n "$ODP_DMA" ] && cmdline="$cmdline vmt_odp_dma=$ODP_DMA"
[ -n "$IOMMU_GROUP" ] && cmdline="$cmdline vmt_iommu_group=$IOMMU_GROUP"
# The profile's kernel is that much slower: the guest stretches its time limits.
[ "$TIME_FACTOR" != 1 ] && cmdline="$cmdline vmt_time_factor=$TIME_FACTOR"
# The classes of test programs the profile runs (scripts/guest/lib.sh program_here).
cmdline="$cmdline vmt_classes=${CLASSES// /,}"
# SUITES=a,b (a developer's shortcut): only the guest suites whose names contain a or b;
# else, for the guest suites of make test, the profile's own GUEST_SUITES when it runs only
# some (debug-mm).
suites=${SUITES:-}
[ -z "$suites" ] && [ "$(basename "$job")" = run-suites.sh ] &&
	suites=$(profile_var "$profile" GUEST_SUITES)
[ -n "$suites" ] && cmdline="$cmdline vmt_suites=$suites"
[ -n "${BENCH_SECONDS:-}" ] && cmdline="$cmdline vmt_bench_seconds=$BENCH_SECONDS"
# The serial line cannot tell the guest this terminal's size.
if [ -n "$interactive" ] && size=$(stty size 2>/dev/null); then
	cmdline="$cmdline vmt_rows=${size% *} vmt_cols=${size#* }"
fi

prealloc=()
[ "${VM_PREALLOC:-0}" = 1 ] && prealloc=(-mem-prealloc)

# -cpu max without ERMS: TCG runs "rep stosb" a byte at a time, and the kernel clears
# every page it hands out with it when the CPU has ERMS. A 4 KiB page then costs
# 5.1 us against 0.76 with "rep stosq" (clear_page_rep, what the kernel picks
# without ERMS), where the host's CPU does either in 0.2 us: an emulated page
# allocation would cost 7 times what the rest of the emulated machine makes it worth.

# shellcheck disable=SC2206 # profile device lists are meant to split into words
qemu=(
	qemu-system-x86_64
	-machine q35,accel=tcg,kernel-irqchip=split -cpu max,erms=off -m 4G -smp "$CPUS"
	"${prealloc[@]}" -no-reboot -display none -nodefaults
	$QEMU_DEVICES
	-netdev "${VM_NETDEV:-user,id=n0,restrict=on}" -device "e1000e,netdev=n0${VM_MAC:+,mac=$VM_MAC}"
	# A PCIe switch with two devices under it, for P2P DMA: an NVMe controller whose
	# memory buffer the kernel publishes as P2P memory (no namespace, no disk), and
	# edu, a device with a DMA engine. The dma_iova and hmm_dma KUnit suites, the DMA
	# map benchmark and the test_hmm DMA mode bind drivers to edu in turn. edu gets
	# 64-bit DMA addresses: QEMU clamps them to this mask (default 28 bits).
	-device pcie-root-port,id=rp1,bus=pcie.0,chassis=1
	-device x3130-upstream,id=sw0,bus=rp1
	-device xio3130-downstream,id=dp1,bus=sw0,chassis=2,slot=1
	-device xio3130-downstream,id=dp2,bus=sw0,chassis=3,slot=2
	-device nvme,serial=p2pmem0,cmb_size_mb=16,bus=dp1
	-device edu,dma_mask=0xffffffffffffffff,bus=dp2
	-virtfs local,path=/,mount_tag=host,security_model=none,readonly=on,multidevs=remap
	-virtfs "local,path=$out,mount_tag=out,security_model=none"
	-kernel "$image" -initrd "$initrd" -append "$cmdline"
)

if [ -n "$interactive" ]; then
	exec "${qemu[@]}" -chardev stdio,id=con,mux=on,signal=off,logfile="$out/console.log" \
		-serial chardev:con -mon chardev=con,mode=readline
fi

rc=0
timeout -k 10 "$TIMEOUT" "${qemu[@]}" -serial "file:$out/console.log" -monitor none \
	</dev/null >"$out/qemu.log" 2>&1 || rc=$?
exit "$rc"
