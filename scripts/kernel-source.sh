#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Unpack the Debian kernel source into $SRC, make it a git repository and apply the
# series with `git am`: ours (kernel/patches on linux-source-6.12) or, with
# SERIES=upstream, our fixes for upstream Linux (kernel/upstream on the linux-source
# that kernel/upstream/BASE pins, as scripts/peer.sh fetches it). Skips all of it when
# neither the source package nor the series changed since the last run. Never resets or
# deletes a tree holding work that is not in the series (commits, changes, untracked
# files) unless FORCE=1.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [ "${SERIES:-ours}" = upstream ]; then
	bash "$ROOT/scripts/peer.sh" >/dev/null
	read -r pkg have <"$BUILD/peer/linux/.peer-version"
	TARBALL=$BUILD/peer/download/$pkg.tar.xz
	[ -f "$TARBALL" ] || die "$TARBALL is missing: run scripts/peer.sh again"
else
	pkg=linux-source-6.12
	TARBALL=/usr/src/$pkg.tar.xz
	BASE=$(cat "$ROOT/kernel/BASE")
	[ -f "$TARBALL" ] || die "$TARBALL is missing: run scripts/deps.sh (apt package $pkg)"
	have=$(dpkg-query -W -f='${Version}' $pkg)
	[ "$have" = "$BASE" ] || echo "note: kernel/BASE pins $BASE; the archive has moved on, building on $have"
fi

# The series file lists patch names in order; blank lines and comments are allowed.
mkdir -p "$BUILD/logs"
series=()
while read -r name _; do
	case "$name" in '' | '#'*) continue ;; esac
	[ -f "$PATCHES/$name" ] || die "${PATCHES#"$ROOT"/}/series names $name, which does not exist"
	series+=("$PATCHES/$name")
done <"$PATCHES/series"

stamp=$SRC/.git/applied-series
want="$have $(content_hash "${series[@]}" "$PATCHES/series")"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
	exit 0
fi

if [ ! -f "$SRC/.git/base-version" ] || [ "$(cat "$SRC/.git/base-version")" != "$have" ]; then
	guard_kernel_tree "$SRC" "deleting"
	info "unpacking $pkg $have into $SRC"
	rm -rf "$SRC" "$SRC.tmp"
	mkdir -p "$SRC.tmp"
	tar -xJf "$TARBALL" -C "$SRC.tmp" --strip-components=1
	(
		cd "$SRC.tmp"
		# Debian's .gitignore ends with a packaging section that ignores every top-level
		# path, which would hide the whole tree (and every new file) from git.
		sed -i '/^# Debian packaging/,$d' .gitignore
		git init -q -b debian
		# Commits made here become the series: they carry this project's identity.
		git config user.name "$(git -C "$ROOT" config user.name || echo "kernel build")"
		git config user.email "$(git -C "$ROOT" config user.email || echo "build@localhost")"
		# Everything the tarball holds, the files its .gitignore names included
		# (.clang-format, ...): untracked, they would look like a developer's own
		# files to the guard, and git clean -fdx would delete them.
		git add -A -f
		git commit -q \
			-m "Debian $pkg $have" \
			-m "Pristine, except that .gitignore loses its Debian packaging section."
		git tag base
		echo "$have" >.git/base-version
		# Nothing applied yet: the tree holds no work of anyone's.
		git rev-parse HEAD >.git/applied-head
	)
	mv "$SRC.tmp" "$SRC"
fi

# The series changed (a pull, say): the tree is made again from its base.
guard_kernel_tree "$SRC" "resetting"
cd "$SRC"
git am --abort >/dev/null 2>&1 || true
git checkout -q -B series base
git reset -q --hard base
git clean -q -fdx
info "applying ${#series[@]} patch(es) from ${PATCHES#"$ROOT"/}"
for p in "${series[@]}"; do
	if ! git am -q --keep-cr "$p" >"$BUILD/logs/git-am.log" 2>&1; then
		git am --abort >/dev/null 2>&1 || true
		show_log_tail "$BUILD/logs/git-am.log" 15
		die "patch $(basename "$p") does not apply on $pkg $have (log: $BUILD/logs/git-am.log)"
	fi
done
echo "$want" >"$stamp"
git rev-parse HEAD >.git/applied-head
