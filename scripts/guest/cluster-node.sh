#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# One node of the cluster (scripts/cluster.sh), inside its guest: soft-RoCE on the link,
# its name, the other nodes' names, an ssh server (dropbear) with the cluster's key, the
# Open MPI and UCX settings; then it says it is ready ($OUT/ready). Node 0 waits until
# the host says every node is ($OUT/go), checks that it reaches each of them (their ssh
# port, then ssh), runs the command ($vmt_cluster/cmd: its status into $OUT/status) or a shell. The
# others wait until the host tells them to stop ($OUT/stop). Kernel parameters:
# vmt_node, vmt_nodes, vmt_addr, vmt_cluster (the host's cluster folder), vmt_shell.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$GUEST_ROOT/scripts/guest/cluster-env.sh"
node=node${vmt_node:?}
dir=${vmt_cluster:?}

# A problem of this node: one line for the host to print, then stop.
node_fail() {
	echo "$node: $*" >"$OUT/error"
	exit 1
}

# Wait until file $1 exists (the host writes it), at most $2 seconds.
wait_file() {
	local i
	for i in $(seq $(($2 * 10))); do
		[ -e "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

setup_rxe || node_fail "soft-RoCE did not come up on $NETDEV (console log)"
hostname "$node"
mkdir -p /run/cluster
cp "$dir/hosts" /run/cluster/hosts && mount --bind /run/cluster/hosts /etc/hosts ||
	node_fail "cannot put the cluster's names in /etc/hosts"
cp "$dir/hostfile" "$CLUSTER_HOSTFILE"
# /root is this guest's own (tmpfs): the cluster's key, and ssh without questions.
# dropbear trusts authorized_keys only under a home no one else may write (tmpfs: 1777).
chmod 700 /root
mkdir -p /root/.ssh /root/.openmpi && chmod 700 /root/.ssh
cp "$dir/id_ed25519" "$dir/id_ed25519.pub" /root/.ssh/ &&
	cp "$dir/id_ed25519.pub" /root/.ssh/authorized_keys && chmod 600 /root/.ssh/* ||
	node_fail "cannot install the cluster's ssh key"
cat >/root/.ssh/config <<-CONF
	Host node*
	    IdentityFile /root/.ssh/id_ed25519
	    StrictHostKeyChecking no
	    UserKnownHostsFile /dev/null
	    LogLevel ERROR
	    BatchMode yes
CONF
echo "$CLUSTER_MCA_PARAMS" >/root/.openmpi/mca-params.conf
# Login shells on this node (mpirun's remote starts included) get the settings too.
printf '. %s/scripts/guest/cluster-env.sh\n' "$GUEST_ROOT" >/root/.bashrc
cp /root/.bashrc /root/.profile
dropbearkey -t ed25519 -f /run/cluster/host_key >/dev/null 2>&1 &&
	dropbear -r /run/cluster/host_key -p 22 -s -P /run/cluster/dropbear.pid ||
	node_fail "cannot start the ssh server (dropbear)"
touch "$OUT/ready"

if [ "$vmt_node" != 0 ]; then
	# Until the host says stop; an hour at most, the cluster's own limit.
	wait_file "$OUT/stop" 3600
	teardown_rxe
	exit 0
fi

wait_file "$OUT/go" 3600 || node_fail "the host never said every node was up"
for i in $(seq 1 $((vmt_nodes - 1))); do
	# Reachable: its ssh port answers over the link (within 30 s: ARP, a slow boot).
	if ! timeout 30 bash -c "until echo >/dev/tcp/node$i/22; do sleep 0.2; done" 2>/dev/null; then
		{ getent hosts "node$i"; ip -br addr; ip neigh; ip -s link show "$NETDEV"; } \
			>"$OUT/link.txt" 2>&1
		node_fail "cannot reach node$i (169.254.10.$((i + 1))) over the cluster's link (node0's link: $OUT/link.txt)"
	fi
	ssh "node$i" true 2>"$OUT/ssh.err" ||
		node_fail "cannot ssh to node$i: $(tr '\n' ' ' <"$OUT/ssh.err")"
done
cd "$(cat "$dir/cwd")" 2>/dev/null || cd /root
if [ -n "${vmt_shell:-}" ]; then
	echo "cluster of $vmt_nodes nodes: node0..node$((vmt_nodes - 1)); mpirun -np 4 --hostfile \$CLUSTER_HOSTFILE ..."
	setsid -c bash -l </dev/ttyS0 >/dev/ttyS0 2>&1
	status=$?
else
	bash -c "$(cat "$dir/cmd")" >"$OUT/cmd.out" 2>&1
	status=$?
fi
echo "$status" >"$OUT/status"
teardown_rxe
