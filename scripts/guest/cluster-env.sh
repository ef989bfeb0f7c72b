# SPDX-License-Identifier: GPL-2.0
# The settings that make Open MPI and UCX run over soft-RoCE (rxe0) between the cluster's
# nodes, in one place: every node sources this file for its shells and commands (its
# ~/.bashrc, which bash also reads for a command run over ssh: mpirun's daemons on the
# other nodes start with these settings), and cluster-node.sh writes the Open MPI part
# into each node's MCA parameter file. `mpirun -x UCX_...=...` overrides a setting.

# UCX 1.13 on rxe0 only, over RC and UD verbs (and itself within a process). UD
# endpoints time out unless the DGID check is off: UCX 1.13 reads the L3 type of a RoCE
# UD completion the way mlx5 reports it, which rxe does not.
export UCX_NET_DEVICES=rxe0:1
export UCX_TLS=rc_verbs,ud_verbs,self
export UCX_UD_ETH_DGID_CHECK=n

# Open MPI 4.1 over UCX: its pml and osc ucx only take devices named mlx* unless told any;
# its control traffic on the cluster's link; no TCP or openib BTL (UCX carries messages).
CLUSTER_MCA_PARAMS='pml = ucx
osc = ucx
btl = self,vader
pml_ucx_devices = any
osc_ucx_devices = any
oob_tcp_if_include = eth0
rmaps_base_oversubscribe = true'

# The Open MPI host file of the cluster, a slot per CPU of each node (scripts/cluster.sh).
export CLUSTER_HOSTFILE=/run/cluster/hostfile
# mpirun as root, which the guest is.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
