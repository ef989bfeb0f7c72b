#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Make the guest's initramfs for one kernel image: static busybox, scripts/guest/init and,
# when the kernel has modules installed on this machine (a distribution kernel), the
# modules needed to mount the host root over virtio 9p. Prints the path of the cpio.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

image=${1:?usage: make-initramfs.sh BZIMAGE}
[ -f "$image" ] || die "kernel image $image does not exist"

# The x86 boot header keeps a pointer to the version string at offset 0x20e.
kernel_version() {
	local off

	off=$(od -An -tu2 -j $((0x20e)) -N2 "$1" | tr -d ' ')
	dd if="$1" bs=1 skip=$((off + 0x200)) count=128 status=none | tr '\0' '\n' | head -n1 |
		cut -d' ' -f1
}
kver=$(kernel_version "$image")
[ -n "$kver" ] || die "cannot read a kernel version from $image (not an x86 bzImage?)"

busybox=/bin/busybox
file "$busybox" 2>/dev/null | grep -q 'dynamically linked' &&
	die "$busybox is not static: install busybox-static"
out=$BUILD/initramfs/$kver.cpio
inputs=$(content_hash "$ROOT/scripts/guest/init" "$busybox" "$0" "/lib/modules/$kver/modules.dep")
if [ -f "$out" ] && [ "$(cat "$out.inputs" 2>/dev/null)" = "$inputs" ]; then
	echo "$out"
	exit 0
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,dev,proc,sys,newroot,modules}
cp "$busybox" "$stage/bin/busybox"
cp "$ROOT/scripts/guest/init" "$stage/init"
chmod 755 "$stage/init"

if [ -d "/lib/modules/$kver" ]; then
	# Resolve what mounting the root needs, in load order, skipping built-in modules.
	modprobe -S "$kver" --show-depends -a virtio_pci 9pnet_virtio 9p |
		awk '$1 == "insmod" { print $2 }' | awk '!seen[$0]++' >"$stage/list"
	: >"$stage/modules/order"
	while read -r ko; do
		name=$(basename "$ko")
		case "$name" in
		*.ko.xz) xz -dc "$ko" >"$stage/modules/${name%.xz}"; name=${name%.xz} ;;
		*.ko.zst) zstd -qdc "$ko" >"$stage/modules/${name%.zst}"; name=${name%.zst} ;;
		*.ko.gz) gzip -dc "$ko" >"$stage/modules/${name%.gz}"; name=${name%.gz} ;;
		*) cp "$ko" "$stage/modules/$name" ;;
		esac
		echo "$name" >>"$stage/modules/order"
	done <"$stage/list"
	rm -f "$stage/list"
fi

mkdir -p "$(dirname "$out")"
(cd "$stage" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) >"$out.tmp.$$"
mv "$out.tmp.$$" "$out"
echo "$inputs" >"$out.inputs"
echo "$out"
