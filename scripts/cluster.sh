#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make cluster [NODES=2..4] [PROFILE=name] [KERNEL=...] [CMD='...']
#
# NODES guests of one kernel and VM profile, joined by an Ethernet segment of their own
# over Unix sockets (two: one QEMU's link straight to the other's; more: through
# scripts/cluster-hub.py), so nothing reaches another network; each with soft-RoCE, an address 169.254.10.(N+1), the name nodeN known to all, an ssh server with
# a key this script makes, and the Open MPI and UCX settings of
# scripts/guest/cluster-env.sh. With CMD, node0 runs it once every node is up and
# reachable, its output shown here, and this script exits with its status; without, a
# shell on node0. Results: $BUILD/cluster/nodeN (console.log, the command's output), or
# CLUSTER_DIR/nodeN (scripts/test.sh's two-host suites).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

nodes=${NODES:-2}
profile=${PROFILE:-iommu-strict}
case "$nodes" in
2 | 3 | 4) ;;
*) die "NODES=$nodes: a cluster has 2 to 4 nodes" ;;
esac
prepare_vm "$profile"
bash "$ROOT/scripts/build-userspace.sh"
keys=$BUILD/cluster
dir=${CLUSTER_DIR:-$keys}
# How long a node may take to boot and come up (TCG; the debug kernel is the slowest).
BOOT_SECONDS=${BOOT_SECONDS:-600}

# Only this script's own folder is remade; the key stays, for a later cluster.
mkdir -p "$dir" "$keys"
rm -rf "$dir"/node*
[ -f "$keys/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C "cluster of $ROOT" \
	-f "$keys/id_ed25519" || die "ssh-keygen failed"
[ "$dir" = "$keys" ] || cp "$keys"/id_ed25519 "$keys"/id_ed25519.pub "$dir/"
: >"$dir/hosts"
: >"$dir/hostfile"
echo "127.0.0.1 localhost" >>"$dir/hosts"
# Open MPI's slots on a node: one per CPU of the guest.
slots=$(profile_cpus "$profile")
for i in $(seq 0 $((nodes - 1))); do
	echo "169.254.10.$((i + 1)) node$i" >>"$dir/hosts"
	echo "node$i slots=$slots" >>"$dir/hostfile"
done
printf '%s\n' "${CMD:-}" >"$dir/cmd"
# The command and the shell start where this was run (the guests see the host's files),
# so that relative paths in CMD work, on every node mpirun starts a rank on.
pwd >"$dir/cwd"

pids=()
hub=
sockets=
cleanup() {
	local p
	for i in $(seq 1 $((nodes - 1))); do
		[ -d "$dir/node$i" ] && touch "$dir/node$i/stop"
	done
	# The others power off once told to stop; QEMU is ended if one does not.
	for p in "${pids[@]}"; do
		for _ in $(seq 300); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill "$p" 2>/dev/null || true
	done
	[ -n "$hub" ] && kill "$hub" 2>/dev/null
	rm -rf "$sockets"
	return 0
}
trap cleanup EXIT

# The link's Unix sockets live in a short folder of their own (a socket's path is
# limited to 108 bytes). Two nodes: node1's QEMU listens and node0's connects, a cable.
# More: each QEMU connects to its port of scripts/cluster-hub.py.
sockets=$(mktemp -d /tmp/vmtest-cluster.XXXXXX)
if [ "$nodes" -gt 2 ]; then
	python3 "$ROOT/scripts/cluster-hub.py" "$nodes" "$sockets" &
	hub=$!
	for _ in $(seq 100); do [ -f "$sockets/hub.ready" ] && break; sleep 0.1; done
	[ -f "$sockets/hub.ready" ] || die "the cluster's hub did not start (scripts/cluster-hub.py)"
fi

# boot_node I [interactive]: node I in the background, or node0 on this terminal.
boot_node() {
	local i=$1 link
	local extra="vmt_node=$i vmt_nodes=$nodes vmt_addr=169.254.10.$((i + 1))/16 vmt_cluster=$dir"

	mkdir -p "$dir/node$i"
	[ -n "${2:-}" ] && extra="$extra vmt_shell=1"
	if [ "$nodes" -gt 2 ]; then
		link="server=off,addr.type=unix,addr.path=$sockets/hub-$i.sock"
	elif [ "$i" = 1 ]; then
		link="server=on,addr.type=unix,addr.path=$sockets/link.sock"
	else
		link="server=off,addr.type=unix,addr.path=$sockets/link.sock"
	fi
	VM_NETDEV="stream,id=n0,$link" \
		VM_MAC=$(printf '52:54:00:c1:00:%02x' "$i") VM_CMDLINE="$extra" \
		VM_INTERACTIVE=${2:-} VM_TIMEOUT=${VM_TIMEOUT:-7200} \
		bash "$ROOT/scripts/vm-run.sh" "$profile" "$IMAGE" "$dir/node$i" \
		"$ROOT/scripts/guest/cluster-node.sh"
}

# Wait until node I says it is up; a node that stopped or failed is one line.
wait_up() {
	local i=$1 pid=$2 t

	for t in $(seq $((BOOT_SECONDS * 10))); do
		[ -f "$dir/node$i/ready" ] && return 0
		[ -f "$dir/node$i/error" ] && die "$(cat "$dir/node$i/error") (console: $dir/node$i/console.log)"
		kill -0 "$pid" 2>/dev/null ||
			die "node$i stopped before it was up (console: $dir/node$i/console.log)"
		sleep 0.1
	done
	die "node$i was not up after $BOOT_SECONDS s (console: $dir/node$i/console.log)"
}

info "booting $nodes nodes of profile $profile ($IMAGE)"
for i in $(seq 1 $((nodes - 1))); do
	boot_node "$i" &
	pids+=($!)
done
mkdir -p "$dir/node0"
if [ -z "${CMD:-}" ]; then
	# The shell on this terminal: node0 starts once the others are up.
	for i in $(seq 1 $((nodes - 1))); do
		wait_up "$i" "${pids[$((i - 1))]}"
	done
	info "node1..node$((nodes - 1)) are up; node0 comes up and checks it reaches them"
	touch "$dir/node0/go"
	boot_node 0 1 || true
	[ -f "$dir/node0/error" ] && die "$(cat "$dir/node0/error") (console: $dir/node0/console.log)"
	exit 0
fi
# With a command, node0 boots beside the others (on TCG a boot is a minute or more) as
# soon as its link can connect: to node1's QEMU, which listens once it has started (two
# nodes), or to the hub. node0 waits in its guest until told that every node is up.
if [ "$nodes" = 2 ]; then
	for _ in $(seq 600); do
		[ -S "$sockets/link.sock" ] || ! kill -0 "${pids[0]}" 2>/dev/null && break
		sleep 0.1
	done
	[ -S "$sockets/link.sock" ] || die "node1's QEMU did not open the link ($sockets/link.sock; console: $dir/node1/console.log)"
fi
boot_node 0 >/dev/null 2>&1 &
node0=$!
pids+=("$node0")
for i in $(seq 1 $((nodes - 1))); do
	wait_up "$i" "${pids[$((i - 1))]}"
done
info "node1..node$((nodes - 1)) are up; node0 checks it reaches them"
touch "$dir/node0/go"
wait_up 0 "$node0"
# The command's output as it comes, until node0 is done.
touch "$dir/node0/cmd.out"
tail -n +1 -f --pid="$node0" "$dir/node0/cmd.out" &
follow=$!
wait "$node0" || true
wait "$follow" || true
[ -f "$dir/node0/error" ] && die "$(cat "$dir/node0/error") (console: $dir/node0/console.log)"
[ -f "$dir/node0/status" ] ||
	die "node0 ended without the command's status (console: $dir/node0/console.log)"
status=$(cat "$dir/node0/status")
info "the command ended with status $status on node0 (output: $dir/node0/cmd.out)"
exit "$status"
