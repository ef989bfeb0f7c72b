#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Check the patch series the way a maintainer would before taking it:
#   1. every patch is `checkpatch.pl --strict` clean;
#   2. every patch builds on its own (the series is bisectable): apply them one by one in
#      a separate worktree and build bzImage after each, with the normal kernel's config;
#   3. the C files each patch touches build without new warnings at W=1.
# Prints one line per patch and exits 1 when any check fails.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PATCHES=$ROOT/kernel/patches
bash "$ROOT/scripts/kernel-source.sh"
[ -f "$KOBJ/normal/.config" ] || bash "$ROOT/scripts/kernel-build.sh" normal

mapfile -t series < <(grep -vE '^\s*(#|$)' "$PATCHES/series" | awk '{print $1}')
[ ${#series[@]} -gt 0 ] || { echo "the series is empty: nothing to check"; exit 0; }

tree=$BUILD/bisect/linux
obj=$BUILD/bisect/kernel
log=$BUILD/logs/check-series.log
mkdir -p "$BUILD/bisect" "$obj"
: >"$log"
git -C "$SRC" worktree remove --force "$tree" >/dev/null 2>&1 || rm -rf "$tree"
git -C "$SRC" worktree prune
git -C "$SRC" worktree add -q --detach "$tree" base
export CCACHE_BASEDIR=$BUILD
kmake() {
	make -C "$tree" O="$obj" CC="ccache gcc" HOSTCC="ccache gcc" "$@"
}

failed=0
for name in "${series[@]}"; do
	p=$PATCHES/$name
	problems=()

	# checkpatch asks whether MAINTAINERS needs updating for every new file;
	# answer it: each new file must have a MAINTAINERS entry (get_maintainer.pl).
	# Debian's python3 has ply for the SPDX check; another python3 on PATH may not.
	if ! PATH=/usr/bin:$PATH "$SRC/scripts/checkpatch.pl" --strict --quiet --no-summary \
		--ignore FILE_PATH_CHANGES "$p" >>"$log" 2>&1; then
		problems+=("checkpatch --strict")
	fi
	for f in $(awk '/^--- \/dev\/null/ { getline; sub(/^\+\+\+ b\//, ""); print }' "$p"); do
		[ -f "$SRC/$f" ] || continue
		if ! (cd "$SRC" && ./scripts/get_maintainer.pl --no-git --no-rolestats -f "$f" 2>/dev/null) |
			grep -qv 'linux-kernel@vger.kernel.org'; then
			problems+=("no MAINTAINERS entry covers $f")
		fi
	done
	if ! git -C "$tree" am -q --keep-cr "$p" >>"$log" 2>&1; then
		git -C "$tree" am --abort >/dev/null 2>&1 || true
		echo "  FAIL $name: does not apply (log: $log)"
		failed=1
		break
	fi
	# Start from the full config each time, so an option a later patch adds
	# keeps the value base.config gives it instead of its default.
	cp "$KOBJ/normal/.config" "$obj/.config"
	if ! { kmake olddefconfig && kmake -j"$(nproc)" bzImage; } >>"$log" 2>&1; then
		problems+=("build")
	else
		# W=1 on the C files this patch touches that the config builds.
		for c in $(git -C "$tree" diff --name-only HEAD~1 HEAD -- '*.c'); do
			o=${c%.c}.o
			[ -f "$obj/$o" ] || continue
			rm -f "$obj/$o"
			if ! kmake W=1 "$o" >"$log.w1" 2>&1 || grep -q 'warning:' "$log.w1"; then
				problems+=("W=1 warnings in $c")
			fi
			cat "$log.w1" >>"$log"
		done
	fi
	if [ ${#problems[@]} -eq 0 ]; then
		echo "  ok   $name"
	else
		echo "  FAIL $name: ${problems[*]} (log: $log)"
		failed=1
	fi
done
rm -f "$log.w1"
git -C "$SRC" worktree remove --force "$tree" >/dev/null 2>&1 || true
[ $failed = 0 ] && echo "series: ${#series[@]} patch(es) checkpatch-clean, each builds on its own"
exit $failed
