#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Install everything the build and the guest need, with apt. Idempotent: prints nothing
# when all is already there. Needs root (it is what CI runs as).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PACKAGES=(
	# kernel build
	build-essential bc bison flex libelf-dev libssl-dev cpio xz-utils kmod rsync git ccache
	python3 python3-ply python3-git
	# the VM and its initramfs
	qemu-system-x86 busybox-static
	# RDMA userspace that runs inside the guest (the guest mounts this machine's root)
	rdma-core ibverbs-utils ibverbs-providers libibverbs-dev librdmacm-dev python3-pyverbs
	perftest iproute2
	# the distro-mm and debug guests' NVDIMM, made a device-DAX namespace
	ndctl
	# make cluster: ssh between the nodes, and the HPC stack that runs across them
	dropbear-bin openmpi-bin libopenmpi-dev python3-mpi4py ucx-utils rdmacm-utils
	# libibodp: host unit tests under valgrind, and the plots of `make bench`
	valgrind pkg-config gnuplot-nox
	# make peer: an upstream kernel source straight from the archive, signature checked
	curl gpgv
)
KSRC_PKG=linux-source-6.12
BASE=$(cat "$ROOT/kernel/BASE")
BACKPORTS=/etc/apt/sources.list.d/bookworm-backports.sources

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
# An installed source newer than the pin is accepted: the archive moved on, and the
# unpack step says so in one line.
have_ksrc=$(dpkg-query -W -f='${Version}' "$KSRC_PKG" 2>/dev/null || true)
if [ -n "$have_ksrc" ] && dpkg --compare-versions "$have_ksrc" ge "$BASE" &&
	[ ${#missing[@]} -eq 0 ]; then
	exit 0
fi

[ "$(id -u)" = 0 ] || die "packages missing (${missing[*]} $KSRC_PKG=$BASE); run as root so apt can install them"
export DEBIAN_FRONTEND=noninteractive

if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
	info "adding bookworm-backports to apt's sources ($BACKPORTS)"
	cat >"$BACKPORTS" <<-EOF
		Types: deb
		URIs: http://deb.debian.org/debian
		Suites: bookworm-backports
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
	EOF
fi

log=$BUILD/logs/apt.log
mkdir -p "$(dirname "$log")"
want_ksrc=
[ -n "$have_ksrc" ] && dpkg --compare-versions "$have_ksrc" ge "$BASE" || want_ksrc=$KSRC_PKG
info "installing packages: ${missing[*]:-} $want_ksrc"
apt-get update -q >"$log" 2>&1 || { show_log_tail "$log"; die "apt-get update failed (log: $log)"; }

ksrc_spec=$KSRC_PKG=$BASE
if ! apt-cache madison "$KSRC_PKG" | awk -F'|' '{gsub(/ /,"",$2); print $2}' | grep -qxF "$BASE"; then
	newest=$(apt-cache policy "$KSRC_PKG" | awk '/Candidate:/ {print $2}')
	[ -n "$newest" ] && [ "$newest" != "(none)" ] ||
		die "apt has no $KSRC_PKG at all: is bookworm-backports (or bookworm-security) reachable?"
	echo "note: kernel/BASE pins $KSRC_PKG $BASE, which the archive no longer has; using $newest"
	ksrc_spec=$KSRC_PKG=$newest
fi

[ -n "$want_ksrc" ] || ksrc_spec=
if ! apt-get install -y -q --no-install-recommends "${missing[@]}" $ksrc_spec >>"$log" 2>&1; then
	show_log_tail "$log"
	die "apt-get install failed (log: $log)"
fi
