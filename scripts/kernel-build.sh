#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build bzImage for one kernel variant: `normal` (tinyconfig + base.config +
# distro-mm.config) or `debug` (+ debug.config), out of tree in $KOBJ/VARIANT, with ccache.
# Prints the image path. One normal kernel serves the IOMMU profiles and distro-mm alike:
# distro-mm's options (swap, KSM, NUMA, memcg, pmem, FUSE, fault injection) cost the
# other profiles nothing, and a second kernel cost a first run 15 minutes of building.
# `peer` builds the upstream source of scripts/peer.sh with base.config: options that
# kernel does not have (our patches' own) are listed, not an error. `peer-fixed` builds
# the same source with our fixes for it (SERIES=upstream scripts/kernel-source.sh).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

variant=${1:-normal}
source_stamp=$SRC/.git/applied-series
case "$variant" in
normal) fragments=("$ROOT/kernel/config/base.config" "$ROOT/kernel/config/distro-mm.config") ;;
debug)
	fragments=("$ROOT/kernel/config/base.config" "$ROOT/kernel/config/distro-mm.config"
		"$ROOT/kernel/config/debug.config")
	;;
peer)
	fragments=("$ROOT/kernel/config/base.config")
	SRC=$BUILD/peer/linux
	source_stamp=$SRC/.peer-version
	;;
peer-fixed)
	fragments=("$ROOT/kernel/config/base.config")
	SRC=$BUILD/peer-fixed/linux
	source_stamp=$SRC/.git/applied-series
	;;
distro) die "the distro kernel is the normal one now (base.config + distro-mm.config): build 'normal'" ;;
*) die "unknown kernel variant '$variant' (expected normal, debug, peer or peer-fixed)" ;;
esac

[ -f "$SRC/Makefile" ] || die "no kernel source in $SRC: run scripts/kernel-source.sh (or scripts/peer.sh, or SERIES=upstream scripts/kernel-source.sh) first"
obj=$KOBJ/$variant
log=$BUILD/logs/kernel-$variant.log
mkdir -p "$obj" "$BUILD/logs"
export CCACHE_BASEDIR=$BUILD
# "MISSES HITS": compilations ccache could not serve so far, and those it served (all of
# ccache's users).
ccache_counts() {
	ccache --print-stats 2>/dev/null | awk '
		$1 == "cache_miss" { m = $2 }
		$1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { h += $2 }
		END { print m + 0, h + 0 }'
}
kmake() {
	make -C "$SRC" O="$obj" CC="ccache gcc" HOSTCC="ccache gcc" "$@"
}

# Regenerate .config only when a fragment or the source changed, so that an unchanged
# tree rebuilds nothing.
stamp=$obj/.config-inputs
want=$(content_hash "${fragments[@]}" "$source_stamp")
if [ ! -f "$obj/.config" ] || [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
	info "configuring the $variant kernel: tinyconfig + ${fragments[*]##*/}"
	{
		kmake tinyconfig
		"$SRC/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "${fragments[@]}"
		kmake olddefconfig
	} >"$log.config" 2>&1 ||
		{ show_log_tail "$log.config"; die "configuring the $variant kernel failed (log: $log.config)"; }

	# merge_config.sh only warns when Kconfig drops an option (an unmet dependency):
	# make that an error naming the option.
	dropped=()
	while IFS= read -r line; do
		case "$line" in
		CONFIG_*=*) opt=${line%%=*} ;;
		"# CONFIG_"*" is not set") opt=${line#\# } opt=${opt%% *} ;;
		*) continue ;;
		esac
		got=$(grep -E "^($opt=|# $opt is not set)" "$obj/.config" || true)
		[ -z "$got" ] && [ "$line" = "# $opt is not set" ] && continue
		[ "$got" = "$line" ] || dropped+=("$line (got: ${got:-absent})")
	done < <(cat "${fragments[@]}")
	if [ ${#dropped[@]} -gt 0 ] && [ "${variant#peer}" != "$variant" ]; then
		echo "note: the $variant kernel has no such options (ours, or renamed upstream):"
		printf '  %s\n' "${dropped[@]}"
	elif [ ${#dropped[@]} -gt 0 ]; then
		printf '  %s\n' "${dropped[@]}" >&2
		die "the $variant kernel config lost options the fragments ask for (see above)"
	fi
	echo "$want" >"$stamp"
fi

info "building the $variant kernel in $obj (make -j$(nproc), log: $log)"
start=$(date +%s)
read -r misses_before hits_before < <(ccache_counts)
# Progress: a line every 20 s while make runs, counting compiled objects.
(
	while sleep 20; do
		echo "    $(grep -cE '^  (CC|AR|LD|AS) ' "$log" 2>/dev/null || echo 0) objects, $(($(date +%s) - start))s"
	done
) &
progress=$!
rc=0
kmake -j"$(nproc)" bzImage >"$log" 2>&1 || rc=$?
kill "$progress" 2>/dev/null || true
wait "$progress" 2>/dev/null || true
if [ "$rc" -ne 0 ]; then
	grep -E 'error:|Error [0-9]' "$log" | head -n 15 >&2 || true
	show_log_tail "$log" 10
	die "building the $variant kernel failed (log: $log)"
fi
image=$obj/arch/x86/boot/bzImage
seconds=$(($(date +%s) - start))
# Cold (most compilations missed ccache), cached (ccache had most) or up to date.
read -r misses hits < <(ccache_counts)
misses=$((misses - misses_before))
calls=$((misses + hits - hits_before))
if [ "$calls" = 0 ]; then
	note="up to date"
elif [ $((misses * 2)) -gt "$calls" ]; then
	note="cold: ccache missed $misses of $calls compilations"
else
	note="cached: ccache missed $misses of $calls compilations"
fi
record_time kernel "$variant" "$seconds" "$note"
echo "    done in ${seconds}s ($note): $image"
