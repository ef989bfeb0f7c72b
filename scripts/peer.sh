#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make peer`: unpack Debian's build of the Linux that upstream develops (the
# linux-source-X.Y package and version kernel/upstream/BASE pins, from PEER_SUITE,
# trixie-backports by default; PEER_VERSION=newest takes the suite's newest instead)
# into $BUILD/peer/linux, for a kernel built with our config fragments and none of our
# patches, and keep its tarball for the tree our fixes for it are applied to
# (SERIES=upstream scripts/kernel-source.sh). `make test KERNEL=<its image>` and
# `make bench KERNEL=...` then say where that kernel and ours differ.
#
# The package comes straight from the archive (it is architecture-independent, and this
# host's apt does not know that suite): the suite's InRelease is checked against Debian's
# archive keyring, the package index against InRelease, the package against the index.
# Skips the download when the newest version is already unpacked.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

MIRROR=${PEER_MIRROR:-http://deb.debian.org/debian}
SUITE=${PEER_SUITE:-trixie-backports}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
dest=$BUILD/peer
work=$dest/download
mkdir -p "$work"

fetch() {
	curl -fsS --retry 3 -m 600 -o "$2" "$MIRROR/$1" ||
		die "cannot download $MIRROR/$1 (curl exit $?): check the network or set PEER_MIRROR"
}

# The SHA256 that a checked file lists for NAME.
listed_sha() {
	awk -v f="$2" '/^SHA256:/ {s = 1; next} /^[^ ]/ {s = 0} s && $3 == f {print $1}' "$1"
}

fetch "dists/$SUITE/InRelease" "$work/InRelease"
gpgv --keyring "$KEYRING" --output "$work/Release" "$work/InRelease" >"$work/gpgv.log" 2>&1 ||
	die "$SUITE's InRelease does not verify against $KEYRING (log: $work/gpgv.log)"
# linux-source is in binary-all and in each architecture's index; a mirror's plain file
# can lag behind its InRelease, so each is also tried by hash, as apt does. The first one
# that matches InRelease is used.
index_ok=
for idx in main/binary-all/Packages.xz main/binary-amd64/Packages.xz; do
	want=$(listed_sha "$work/Release" "$idx")
	[ -n "$want" ] || continue
	for url in "dists/$SUITE/${idx%/*}/by-hash/SHA256/$want" "dists/$SUITE/$idx"; do
		curl -fsS --retry 2 -m 600 -o "$work/Packages.xz" "$MIRROR/$url" 2>/dev/null || continue
		if [ "$(sha256sum <"$work/Packages.xz" | cut -d' ' -f1)" = "$want" ]; then
			index_ok=$url
			break 2
		fi
	done
done
[ -n "$index_ok" ] || die "no package index of $SUITE on $MIRROR matches its InRelease (a mirror mid-sync: try again later or set PEER_MIRROR)"

# The pinned linux-source-X.Y (or the newest): name, version, file and checksum.
read -r want_pkg want_version <"$ROOT/kernel/upstream/BASE"
[ "${PEER_VERSION:-}" != newest ] || want_pkg=
read -r pkg version file sha < <(
	xz -dc "$work/Packages.xz" | awk '
		/^Package: linux-source-[0-9]/ {p = $2}
		/^Version:/ {v = $2}
		/^Filename:/ {f = $2}
		/^SHA256:/ {s = $2}
		/^$/ {if (p) print p, v, f, s; p = ""}
		END {if (p) print p, v, f, s}' |
		awk -v p="$want_pkg" -v v="$want_version" 'p == "" || ($1 == p && $2 == v)' |
		sort -k2,2V | tail -n 1
)
if [ -z "${pkg:-}" ]; then
	[ -n "$want_pkg" ] ||
		die "$SUITE has no linux-source-X.Y package"
	die "$SUITE no longer has $want_pkg $want_version, which kernel/upstream/BASE pins: move the series to the suite's newest (PEER_VERSION=newest, then update BASE) or set PEER_MIRROR to an archive that has it (snapshot.debian.org)"
fi

if [ -f "$dest/linux/.peer-version" ] && [ "$(cat "$dest/linux/.peer-version")" = "$pkg $version" ] &&
	[ -f "$work/$pkg.tar.xz" ]; then
	echo "$dest/linux"
	exit 0
fi

deb=$work/$(basename "$file")
if [ ! -f "$deb" ] || [ "$(sha256sum <"$deb" | cut -d' ' -f1)" != "$sha" ]; then
	info "downloading $pkg $version from $SUITE"
	fetch "$file" "$deb.part"
	[ "$(sha256sum <"$deb.part" | cut -d' ' -f1)" = "$sha" ] ||
		die "$deb.part does not match the checksum $SUITE's index gives"
	mv "$deb.part" "$deb"
fi

info "unpacking $pkg $version into $dest/linux"
rm -rf "$dest/linux" "$work/pkg"
dpkg-deb -x "$deb" "$work/pkg"
tarball=$(find "$work/pkg/usr/src" -maxdepth 1 -name 'linux-source-*.tar.xz' | head -n 1)
[ -n "$tarball" ] || die "$deb holds no linux-source tarball"
mkdir -p "$dest/linux"
tar -xJf "$tarball" -C "$dest/linux" --strip-components=1
mv "$tarball" "$work/$pkg.tar.xz"
rm -rf "$work/pkg"
echo "$pkg $version" >"$dest/linux/.peer-version"
echo "$dest/linux"
