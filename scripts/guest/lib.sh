# SPDX-License-Identifier: GPL-2.0
# Helpers for scripts that run inside the guest (chrooted in the host's root, see init).
# Source it. Expects vmt_out (the results folder) and vmt_build (the build folder) from
# the kernel command line.

GUEST_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${vmt_out:?vmt_out is not set: run this inside the VM (scripts/vm-run.sh)}
BUILD=${vmt_build:-$GUEST_ROOT/build}
RDMA_DEV=${RDMA_DEV:-rxe0}
# The profile's promises, for the tests: how rxe reaches ODP pages (the counter checks)
# and the NIC's IOMMU group type (none, DMA, DMA-FQ).
[ -n "${vmt_odp_dma:-}" ] && export VT_ODP_DMA=$vmt_odp_dma
[ -n "${vmt_iommu_group:-}" ] && export VT_IOMMU_GROUP=$vmt_iommu_group
# How much slower this profile's kernel runs than the normal one (TIME_FACTOR of the
# profile: the debug kernel's KASAN and lockdep): every time limit is multiplied by it.
TIME_FACTOR=${vmt_time_factor:-1}
export VT_TIME_FACTOR=$TIME_FACTOR
# The classes of test programs this profile runs (its PROGRAM_CLASSES): program_here.
PROGRAM_CLASSES=${vmt_classes:-dma,mm,nodma}
NETDEV=${NETDEV:-eth0}
# Link-local only: nothing in the guest can route anywhere past the VM. A cluster node's
# own address comes from the kernel command line (vmt_addr, scripts/cluster.sh).
GUEST_ADDR=${GUEST_ADDR:-${vmt_addr:-169.254.10.1/16}}

# One line per problem that is not a single test's failure; the host reads these from
# the console and counts each as a failed check of the profile.
guest_error() {
	echo "vmtest: error: $*" >/dev/console
}

# run_tap NAME SECONDS COMMAND...: run a program that prints TAP, into $OUT/NAME.tap
# (SECONDS times the profile's TIME_FACTOR at most)
# (stderr: $OUT/NAME.err), and record "EXIT-STATUS SECONDS TOOK" in $OUT/NAME.exit: the
# host's judge fails a program that crashed after its last result, exited non-zero
# with every result passed, or ran out of time (124).
run_tap() {
	local name=$1 secs=$(($2 * TIME_FACTOR)) rc start=$SECONDS

	shift 2
	timeout -k 5 "$secs" "$@" >"$OUT/$name.tap" 2>"$OUT/$name.err"
	rc=$?
	# Its status, its time limit and the seconds it took.
	echo "$rc $secs $((SECONDS - start))" >"$OUT/$name.exit"
	return $rc
}

# Wait until TCP port $1 is listening (a server's out-of-band exchange: ibv_rc_pingpong
# and perftest use 18515), while server process $2 lives; at most $3 seconds (60).
# Returns 1 when the server exited or never listened.
wait_listening() {
	local port=$1 pid=$2 i

	for i in $(seq $((${3:-60} * 10))); do
		ss -Hltn "sport = :$port" | grep -q . && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# Bring up the NIC and create the soft-RoCE device on it; wait until its port is ACTIVE
# and RoCEv2 GID index 1 (the IPv4-mapped address) exists.
setup_rxe() {
	local i msg state gid

	# A kernel with modular drivers (a distribution kernel) has no udev here to load them.
	if [ -d "/lib/modules/$(uname -r)" ]; then
		for m in e1000e rdma_rxe ib_uverbs rdma_ucm; do
			modprobe -q "$m" || guest_error "cannot load module $m"
		done
	fi
	ip link set lo up
	ip link set "$NETDEV" up || { guest_error "cannot bring up $NETDEV (is the NIC driver there?)"; return 1; }
	ip addr add "$GUEST_ADDR" dev "$NETDEV" 2>/dev/null
	if [ ! -e "/sys/class/infiniband/$RDMA_DEV" ]; then
		msg=$(rdma link add "$RDMA_DEV" type rxe netdev "$NETDEV" 2>&1) || {
			guest_error "cannot create $RDMA_DEV on $NETDEV: ${msg:-rdma link add failed}"
			return 1
		}
	fi
	for i in $(seq 100); do
		state=$(cat "/sys/class/infiniband/$RDMA_DEV/ports/1/state" 2>/dev/null)
		gid=$(cat "/sys/class/infiniband/$RDMA_DEV/ports/1/gids/1" 2>/dev/null)
		case "$state:$gid" in
		*ACTIVE:0000:0000:0000:0000:0000:ffff:*) return 0 ;;
		esac
		sleep 0.1
	done
	guest_error "$RDMA_DEV did not become usable in 10 s (port state '${state:-none}', GID 1 '${gid:-none}')"
	return 1
}

# The IOMMU group type of the NIC: DMA, DMA-FQ, identity, or none.
iommu_group_type() {
	cat "/sys/class/net/$NETDEV/device/iommu_group/type" 2>/dev/null || echo none
}

# Remove the soft-RoCE device and take the NIC down before power-off. Part of the test
# (rxe must go away cleanly), and it keeps the NIC's DMA mappings from outliving the
# IOMMU at shutdown: device_shutdown() stops virtio-iommu before e1000e, whose shutdown
# would otherwise unmap its receive ring through a dead domain and WARN.
teardown_rxe() {
	local pid timer ended rc err=/tmp/rdma-link-delete.err limit=$((60 * TIME_FACTOR))

	if [ -e "/sys/class/infiniband/$RDMA_DEV" ]; then
		# Deleting waits for every object of the device to go. After a kernel oops one
		# may never go (its worker died holding it): whichever ends first, the delete
		# or a deadline, so that the VM still powers off and reports.
		rdma link delete "$RDMA_DEV" >"$err" 2>&1 &
		pid=$!
		sleep "$limit" &
		timer=$!
		wait -n -p ended "$pid" "$timer"
		rc=$?
		if [ "$ended" = "$timer" ]; then
			guest_error "deleting $RDMA_DEV did not finish within $limit s: an object of it is still held (see the kernel log)"
		else
			kill "$timer" 2>/dev/null
			[ "$rc" = 0 ] ||
				guest_error "cannot delete $RDMA_DEV: $(cat "$err" 2>/dev/null || echo rdma link delete failed)"
		fi
	fi
	ip link set "$NETDEV" down 2>/dev/null
}

# QEMU's edu device (1234:11e8): its PCI address, empty when the VM has none.
edu_address() {
	local d
	for d in /sys/bus/pci/devices/*; do
		if [ "$(cat "$d/vendor")" = 0x1234 ] && [ "$(cat "$d/device")" = 0x11e8 ]; then
			basename "$d"
			return
		fi
	done
}

# Bind edu to driver $1 (through driver_override: the test drivers have no ID table).
# Prints the device's address; fails with a message when it cannot.
bind_edu() {
	local drv=$1 edu
	edu=$(edu_address)
	[ -n "$edu" ] || { echo "no QEMU edu device (1234:11e8) in this VM" >&2; return 1; }
	[ -d "/sys/bus/pci/drivers/$drv" ] ||
		{ echo "no PCI driver $drv in this kernel" >&2; return 1; }
	[ -e "/sys/bus/pci/devices/$edu/driver" ] &&
		echo "$edu" >"/sys/bus/pci/devices/$edu/driver/unbind"
	echo "$drv" >"/sys/bus/pci/devices/$edu/driver_override"
	echo "$edu" >/sys/bus/pci/drivers_probe
	[ -e "/sys/bus/pci/drivers/$drv/$edu" ] ||
		{ echo "$drv did not bind to $edu (see the kernel log)" >&2; return 1; }
	echo "$edu"
}

# Undo bind_edu.
release_edu() {
	local edu
	edu=$(edu_address)
	[ -n "$edu" ] || return 0
	[ -e "/sys/bus/pci/devices/$edu/driver" ] &&
		echo "$edu" >"/sys/bus/pci/devices/$edu/driver/unbind"
	echo >"/sys/bus/pci/devices/$edu/driver_override"
}

# Reserve $1 2 MiB huge pages for a suite's hugetlb tests (ODP MRs with
# IBV_ACCESS_HUGETLB); release_hugepages gives them back. Prints how many it got.
reserve_hugepages() {
	local f=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
	[ -w $f ] || { echo "no 2 MiB hugetlb pages in this kernel"; return 1; }
	echo "$1" >$f
	echo "reserved $(cat $f) of $1 huge pages of 2 MiB"
}

release_hugepages() {
	local f=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
	[ -w $f ] && echo 0 >$f
	return 0
}

# A swap device on compressed RAM, where the kernel has zram (the distro-mm and debug profiles), so
# that reclaim can take anonymous pages away from ODP MRs; swap_off undoes it. Prints
# what it did.
swap_on_zram() {
	local dev=/dev/zram0 size=${1:-512M}
	[ -w /sys/block/zram0/disksize ] || { echo "no zram in this kernel: no swap"; return 1; }
	echo "$size" >/sys/block/zram0/disksize &&
		mkswap "$dev" >/dev/null && swapon "$dev" ||
		{ echo "cannot make $dev a swap device"; return 1; }
	echo "swap on $dev ($size of compressed RAM)"
}

swap_off() {
	[ -e /sys/block/zram0/reset ] || return 0
	swapoff /dev/zram0 2>/dev/null
	echo 1 >/sys/block/zram0/reset
	return 0
}

# One NVDIMM namespace of the profile reconfigured by ndctl (QEMU's NVDIMMs have no
# labels: ndctl writes the namespace's info block), with 4 KiB pages whose struct pages
# are in RAM. Prints ndctl's JSON, or why it failed.
pmem_namespace() {
	local ns=$1 mode=$2 out
	[ -e /sys/bus/nd/devices/$ns ] || { echo "no NVDIMM namespace $ns"; return 1; }
	command -v ndctl >/dev/null || { echo "ndctl is missing: run scripts/deps.sh on the host"; return 1; }
	out=$(ndctl create-namespace --force --reconfig=$ns --mode=$mode --map=mem --align=4K 2>&1) ||
		{ echo "ndctl could not make $ns $mode: ${out//$'\n'/; }"; return 1; }
	echo "$out"
}

# Persistent memory where the profile has NVDIMMs (distro-mm, debug): the first as device
# DAX (/dev/dax0.0), the second as an ext2 file system mounted with -o dax at $PMEM_FS.
# verbs/odp_write_ops FLUSHes both. Prints what it did.
PMEM_FS=/run/pmem-fs
pmem_setup() {
	local json dev
	[ -e /sys/bus/nd/devices/namespace0.0 ] || { echo "no NVDIMM: no persistent memory"; return 1; }
	json=$(pmem_namespace namespace0.0 devdax) || { echo "$json"; return 1; }
	[ -c /dev/dax0.0 ] || { echo "namespace0.0 is device DAX, but there is no /dev/dax0.0"; return 1; }
	echo "persistent memory: /dev/dax0.0 ($(cat /sys/bus/dax/devices/dax0.0/size) bytes)"
	json=$(pmem_namespace namespace1.0 fsdax) || { echo "$json"; return 1; }
	dev=$(echo "$json" | sed -n 's/.*"blockdev":"\([^"]*\)".*/\1/p')
	[ -b "/dev/$dev" ] || { echo "namespace1.0 is fsdax, but it names no block device: $json"; return 1; }
	mkdir -p $PMEM_FS && mkfs.ext2 -q -F -b 4096 "/dev/$dev" && mount -o dax "/dev/$dev" $PMEM_FS ||
		{ echo "cannot mount an ext2 on /dev/$dev with -o dax at $PMEM_FS"; return 1; }
	echo "persistent memory: ext2 -o dax on /dev/$dev at $PMEM_FS"
}

pmem_teardown() {
	mountpoint -q $PMEM_FS && umount $PMEM_FS
	return 0
}

# Fault injection disarmed (fail_function's list emptied, every probability 0), for after
# a suite: a test program killed while it injected (a suite past its time) leaves the
# kernel failing calls for whatever runs next. Prints what was still armed, if anything.
fault_injection_off() {
	local d=/sys/kernel/debug armed=

	if [ -w $d/fail_function/inject ]; then
		[ -n "$(cat $d/fail_function/inject)" ] &&
			armed="fail_function ($(tr '\n' ' ' <$d/fail_function/inject))"
		echo 0 >$d/fail_function/probability
		echo >$d/fail_function/inject
	fi
	for f in failslab fail_page_alloc; do
		[ -w $d/$f/probability ] || continue
		[ "$(cat $d/$f/probability)" != 0 ] && armed="$armed $f"
		echo 0 >$d/$f/probability
	done
	[ -z "$armed" ] || echo "$armed"
}

# The cgroup v2 hierarchy at /sys/fs/cgroup with the memory controller for its children,
# where the kernel has memory cgroups.
memcg_on() {
	grep -qw cgroup2 /proc/filesystems || { echo "no cgroups in this kernel"; return 1; }
	[ -e /sys/fs/cgroup/cgroup.controllers ] || mount -t cgroup2 none /sys/fs/cgroup ||
		{ echo "cannot mount cgroup2"; return 1; }
	grep -qw memory /sys/fs/cgroup/cgroup.controllers || { echo "no memory cgroups"; return 1; }
	echo +memory >/sys/fs/cgroup/cgroup.subtree_control
}

# kmemleak (debug kernel): one scan after everything ran, into $OUT/kmemleak; whatever
# it lists is a leak (scripts/results.py judges it).
kmemleak_report() {
	[ -w /sys/kernel/debug/kmemleak ] || return 0
	echo scan >/sys/kernel/debug/kmemleak
	# No event to wait for: kmemleak reports an object only once it is older than its
	# minimum age (5 s), so a second scan after that age finds what the first could not.
	sleep 5
	echo scan >/sys/kernel/debug/kmemleak
	cat /sys/kernel/debug/kmemleak >"$OUT/kmemleak"
}

# Whether SUITES (vmt_suites) picks suite $1: every suite when it is unset. An entry
# SUITE/PROGRAM (verbs/odp_mm_pressure) picks the suite, and only that program of it
# (program_wanted).
suite_wanted() {
	local want
	[ -n "${vmt_suites:-}" ] || return 0
	for want in ${vmt_suites//,/ }; do
		case $1 in *"${want%%/*}"*) return 0 ;; esac
	done
	return 1
}

# Whether SUITES picks program $2 of suite $1: yes unless an entry names the suite with
# programs of it (SUITE/PROGRAM) and none of them is $2.
program_wanted() {
	local want named=0
	[ -n "${vmt_suites:-}" ] || return 0
	for want in ${vmt_suites//,/ }; do
		case $1 in *"${want%%/*}"*) ;; *) continue ;; esac
		[ "$want" = "${want#*/}" ] && return 0
		named=1
		[ "${want#*/}" = "$2" ] && return 0
	done
	[ $named = 0 ]
}

# program_here CLASS: whether this profile runs the test programs of CLASS, which each
# program's source declares on a line " * vmtest-class: CLASS" (program_class). The rule:
#   dma    the program moves ODP pages through the device's DMA path, which each profile
#          takes differently (IOMMU strict or lazy, intel or virtio, none, bounced): every
#          profile runs it;
#   mm     it makes memory management act on ODP memory (fault injection, a FUSE server
#          that holds a READ, reclaim, KSM, NUMA migration): the profiles that have a
#          machine for it, distro-mm and debug (both strict intel-iommu); the DMA side of
#          what it triggers, pages unlinked and faulted again, is the dma programs' part;
#   nodma  it never reaches the DMA path (pinned memory, registration, queries, frames on
#          a tap), or reaches it only through verbs that the dma programs drive already
#          (what it adds is a library's or a tool's own behaviour): one IOMMU profile,
#          iommu-strict, and debug.
# A profile lists its classes in PROGRAM_CLASSES (all three when it says nothing). The
# same rule holds for a whole suite (suite_class_here) and for the cases inside one: a suite
# of tests/suites/ whose cases are partly nodma runs those only where program_here nodma
# (rdma-core's pinned-memory tests, hmm-tests' CPU-side fixtures).
program_here() {
	case ",$PROGRAM_CLASSES," in *",$1,"*) return 0 ;; esac
	return 1
}

# declared_class FILE: the CLASS of FILE's first "vmtest-class: CLASS" line, a shell
# comment ("# ": a suite's class for all of it) or a C comment's (" * ": a program's);
# nothing when it has none (10-verbs.sh: each of its programs has its own, rdma-core and
# hmm decide per case).
declared_class() {
	sed -n 's/^\(#\| \*\) vmtest-class: *\([a-z]*\) *$/\2/p' "$1" 2>/dev/null | head -1
}

# suite_class_here FILE: whether this profile runs the suite FILE as far as its class goes
# (it declares none, or one that program_here runs).
suite_class_here() {
	local class
	class=$(declared_class "$1")
	[ -z "$class" ] || program_here "$class"
}

# program_class NAME: the class tests/verbs/NAME.c declares (dma when none).
program_class() {
	local class
	class=$(declared_class "$GUEST_ROOT/tests/verbs/$1.c")
	echo "${class:-dma}"
}

# run_suite FILE KIND: one suite script (tests/suites/ or tests/cluster/), its output in
# $OUT/NAME.out, within its "# vmtest-timeout: N" line (900 s without one; the host's
# suite_timeout() reads the same) times TIME_FACTOR; said on the console, and a suite
# killed at its limit is an error.
run_suite() {
	local suite=$1 kind=$2 name limit start rc

	name=$(basename "$suite" .sh)
	echo "vmtest: $kind $name" >/dev/console
	export VMT_SUITE=$name
	limit=$(sed -n 's/^# vmtest-timeout: *\([0-9]\+\)$/\1/p' "$suite" | head -1)
	limit=$(( ${limit:-900} * TIME_FACTOR ))
	start=$(date +%s)
	timeout -k 10 "$limit" bash "$suite" >"$OUT/$name.out" 2>&1
	rc=$?
	[ $rc -eq 124 ] && guest_error "$kind $name ran past its ${limit} s and was killed (log: $OUT/$name.out)"
	echo "vmtest: $kind $name exited $rc after $(($(date +%s) - start))s" >/dev/console
}
