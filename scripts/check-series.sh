#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Check the patch series the way a maintainer would before taking it:
#   1. every patch is `checkpatch.pl --strict` clean;
#   2. every patch builds on its own (the series is bisectable): apply them one by one in
#      a separate worktree and build bzImage after each, with the normal kernel's config
#      (the peer-fixed kernel's for SERIES=upstream, our fixes for upstream Linux);
#   3. the C files each patch touches build without new warnings at W=1 (a warning the
#      file had before the patch, with numbers ignored, is not new).
# Prints one line per patch and exits 1 when any check fails.
#   FROM=N  check from patch N on (the earlier ones are only applied), for a quick rerun
#           after fixing a late patch; a full run is what proves the series.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

variant=normal
[ "${SERIES:-ours}" = ours ] || variant=peer-fixed
bash "$ROOT/scripts/kernel-source.sh"
[ -f "$KOBJ/$variant/.config" ] || bash "$ROOT/scripts/kernel-build.sh" "$variant"

mapfile -t series < <(grep -vE '^\s*(#|$)' "$PATCHES/series" | awk '{print $1}')
[ ${#series[@]} -gt 0 ] || { echo "the series is empty: nothing to check"; exit 0; }

bisect=$BUILD/bisect
[ "$variant" = normal ] || bisect=$BUILD/bisect-$variant
tree=$bisect/linux
obj=$bisect/kernel
log=$BUILD/logs/check-series.log
mkdir -p "$bisect" "$obj"
: >"$log"
git -C "$SRC" worktree remove --force "$tree" >/dev/null 2>&1 || rm -rf "$tree"
git -C "$SRC" worktree prune
git -C "$SRC" worktree add -q --detach "$tree" base
export CCACHE_BASEDIR=$BUILD
kmake() {
	make -C "$tree" O="$obj" CC="ccache gcc" HOSTCC="ccache gcc" "$@"
}

# The W=1 warnings of object $1 as built now, without file positions and numbers.
w1_warnings() {
	rm -f "$obj/$1"
	{ kmake W=1 "$1" 2>&1 || true; } | tee -a "$log" | { grep 'warning:' || true; } |
		sed -E 's/^[^ ]*:[0-9]+:[0-9]+: //; s/[0-9]+/N/g' | sort -u
}

failed=0
n=0
for name in "${series[@]}"; do
	p=$PATCHES/$name
	problems=()
	n=$((n + 1))
	if [ "$n" -lt "${FROM:-1}" ]; then
		git -C "$tree" am -q --keep-cr "$p" >>"$log" 2>&1 ||
			die "$name does not apply (log: $log)"
		continue
	fi

	# checkpatch asks whether MAINTAINERS needs updating for every new file;
	# answer it: each new file must have a MAINTAINERS entry (get_maintainer.pl).
	# Debian's python3 has ply for the SPDX check; another python3 on PATH may not.
	# The tree is Debian's source without upstream's history, so checkpatch cannot look
	# up the commit a Fixes: tag names (UNKNOWN_COMMIT_ID); the tag's form is still
	# checked (BAD_FIXES_TAG).
	if ! PATH=/usr/bin:$PATH "$SRC/scripts/checkpatch.pl" --strict --quiet --no-summary \
		--ignore FILE_PATH_CHANGES,UNKNOWN_COMMIT_ID "$p" >>"$log" 2>&1; then
		problems+=("checkpatch --strict")
	fi
	for f in $(awk '/^--- \/dev\/null/ { getline; sub(/^\+\+\+ b\//, ""); print }' "$p"); do
		[ -f "$SRC/$f" ] || continue
		if ! (cd "$SRC" && ./scripts/get_maintainer.pl --no-git --no-rolestats -f "$f" 2>/dev/null) |
			grep -qv 'linux-kernel@vger.kernel.org'; then
			problems+=("no MAINTAINERS entry covers $f")
		fi
	done
	# The warnings the C files this patch touches have before it.
	declare -A before=()
	for c in $(sed -n 's|^+++ b/\(.*\.c\)$|\1|p' "$p"); do
		# Only files that exist before the patch (the object may be left from
		# an earlier run at a later patch).
		if [ -f "$tree/$c" ] && [ -f "$obj/${c%.c}.o" ]; then
			before[$c]=$(w1_warnings "${c%.c}.o")
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
	cp "$KOBJ/$variant/.config" "$obj/.config"
	if ! { kmake olddefconfig && kmake -j"$(nproc)" bzImage; } >>"$log" 2>&1; then
		problems+=("build")
	else
		# W=1 on the C files this patch touches that the config builds.
		for c in $(git -C "$tree" diff --name-only HEAD~1 HEAD -- '*.c'); do
			o=${c%.c}.o
			[ -f "$obj/$o" ] || continue
			new=$(comm -13 <(printf '%s\n' "${before[$c]:-}") <(w1_warnings "$o"))
			if [ -n "$new" ]; then
				problems+=("new W=1 warnings in $c")
				printf 'new W=1 warnings in %s:\n%s\n' "$c" "$new" >>"$log"
			fi
		done
	fi
	if [ ${#problems[@]} -eq 0 ]; then
		echo "  ok   $name"
	else
		echo "  FAIL $name: ${problems[*]} (log: $log)"
		failed=1
	fi
done

git -C "$SRC" worktree remove --force "$tree" >/dev/null 2>&1 || true
[ $failed = 0 ] && echo "series: ${#series[@]} patch(es) checkpatch-clean, each builds on its own"
exit $failed
