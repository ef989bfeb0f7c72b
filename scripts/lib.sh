# SPDX-License-Identifier: GPL-2.0
# Shared paths and helpers for the build and test scripts. Source it, do not run it.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
SRC=$BUILD/linux              # git tree: pristine Debian source + kernel/patches
KOBJ=$BUILD/kernel            # out-of-tree kernel builds, one folder per variant
RESULTS=$BUILD/results        # one folder per VM profile, written by the guest
PROFILES_DIR=$ROOT/tests/vm/profiles

# Each failure is one line that says what went wrong and where to look.
die() {
	echo "error: $*" >&2
	exit 1
}

info() {
	echo "==> $*"
}

warn() {
	echo "warning: $*" >&2
}

# The kernel series a script works on (SERIES=): `ours`, kernel/patches on Debian's
# linux-source-6.12 in $BUILD/linux, or `upstream`, kernel/upstream (our fixes for the
# Linux that upstream develops) on the linux-source that kernel/upstream/BASE pins and
# scripts/peer.sh fetches, in $BUILD/peer-fixed/linux.
case "${SERIES:-ours}" in
ours) PATCHES=$ROOT/kernel/patches ;;
upstream)
	PATCHES=$ROOT/kernel/upstream
	SRC=$BUILD/peer-fixed/linux
	;;
*) die "SERIES=$SERIES: expected ours or upstream" ;;
esac

# Print the last lines of a log after a failure, then the path of the full log.
show_log_tail() {
	local log=$1 lines=${2:-25}

	[ -f "$log" ] || return 0
	echo "---- last $lines lines of $log ----" >&2
	tail -n "$lines" "$log" >&2
	echo "----" >&2
}

# `make test`'s time table (scripts/time_table.py): with TIMES set (scripts/test.sh sets
# it to a file), record_time KIND NAME SECONDS [NOTE] adds one step to it; otherwise nothing.
record_time() {
	[ -n "${TIMES:-}" ] || return 0
	printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${4:-}" >>"$TIMES"
}

# timed KIND NAME COMMAND...: run COMMAND and record how long it took; its status.
timed() {
	local kind=$1 name=$2 start rc=0

	shift 2
	start=$(date +%s)
	"$@" || rc=$?
	record_time "$kind" "$name" $(($(date +%s) - start))
	return $rc
}

# Hash of files' contents (and their names), used to skip steps whose inputs did not change.
content_hash() {
	local f

	for f in "$@"; do
		[ -e "$f" ] || continue
		printf '%s\n' "$f"
		cat "$f"
	done | sha256sum | cut -c1-16
}

# The kernel tree records what it holds: the series applied or exported last
# ($SRC/.git/applied-series) and the commit that ended it ($SRC/.git/applied-head).
# kernel_tree_unsaved DIR prints why resetting or deleting DIR would lose work, nothing
# when it would not.
kernel_tree_unsaved() {
	local dir=$1 head applied base ignored

	[ -d "$dir/.git" ] || return 0
	if [ -d "$dir/.git/rebase-apply" ] || [ -d "$dir/.git/rebase-merge" ]; then
		echo "a git am or rebase is in progress there"
		return
	fi
	if [ -n "$(git -C "$dir" status --porcelain 2>/dev/null)" ]; then
		echo "it has uncommitted changes or untracked files"
		return
	fi
	# git clean -fdx deletes ignored files too (tags, an in-tree build, notes).
	ignored=$(git -C "$dir" status --porcelain --ignored 2>/dev/null | sed -n 's/^!! //p' |
		head -3 | tr '\n' ' ')
	if [ -n "$ignored" ]; then
		echo "it has files git ignores, which cleaning would delete (${ignored% })"
		return
	fi
	head=$(git -C "$dir" rev-parse -q --verify HEAD) || return 0
	applied=$(cat "$dir/.git/applied-head" 2>/dev/null || true)
	if [ -z "$applied" ]; then
		# No record: a tree just unpacked (nothing on its base) holds no work; one from
		# before the record is saved when kernel/patches holds as many patches as the
		# tree has commits on its base.
		base=$(git -C "$dir" rev-list --count base..HEAD 2>/dev/null || echo 0)
		[ "$base" = 0 ] ||
			[ "$base" = "$(grep -cv '^[[:space:]]*\(#\|$\)' "$PATCHES/series")" ] ||
			echo "it has $base commits on its base while ${PATCHES#"$ROOT"/} has another number"
		return
	fi
	[ "$head" = "$applied" ] ||
		echo "it has commits not in ${PATCHES#"$ROOT"/} (HEAD ${head:0:12}, last applied or exported ${applied:0:12})"
}

# Stop, in one line, before discarding the kernel tree DIR's work (WHAT: what would be
# done to it), unless FORCE=1 asks for it.
guard_kernel_tree() {
	local dir=$1 what=$2 why

	why=$(kernel_tree_unsaved "$dir")
	[ -n "$why" ] || return 0
	if [ "${FORCE:-}" = 1 ]; then
		info "FORCE=1: $what $dir although $why"
		return 0
	fi
	die "$what $dir would lose work: $why. Export it (make export-patches${SERIES:+ SERIES=$SERIES}), commit or stash it, or run again with FORCE=1 to discard it"
}

# The profiles that exist: the built-in ones in this order, then any others.
BUILTIN_PROFILES="iommu-strict iommu-lazy no-iommu swiotlb virtio-iommu debug debug-mm"
all_profiles() {
	local p

	for p in $BUILTIN_PROFILES; do
		[ -f "$PROFILES_DIR/$p.conf" ] && echo "$p"
	done
	for p in "$PROFILES_DIR"/*.conf; do
		p=$(basename "$p" .conf)
		case " $BUILTIN_PROFILES " in
		*" $p "*) ;;
		*) echo "$p" ;;
		esac
	done
}

# One setting of a VM profile (tests/vm/profiles/NAME.conf), or a default.
profile_var() {
	local profile=$1 var=$2 default=${3:-}

	(
		# shellcheck disable=SC1090
		. "$PROFILES_DIR/$profile.conf"
		echo "${!var:-$default}"
	)
}

# The CPUs of a profile's guest: its GUEST_CPUS, one when it says nothing. Each emulated
# CPU is a host thread that wants a core of its own: test.sh starts VMs side by side only
# while their CPUs fit the host's (a guest CPU that waits for a core turns every wakeup
# between the guest's CPUs into a wait for the host's scheduler).
profile_cpus() {
	profile_var "$1" GUEST_CPUS 1
}

# The seconds a guest suite may run: its "# vmtest-timeout: N" line (900 without one).
# run-suites.sh kills a suite past it and names it.
suite_timeout() {
	local t

	t=$(sed -n 's/^# vmtest-timeout: *\([0-9]\+\)$/\1/p' "$1" | head -1)
	echo "${t:-900}"
}

# The seconds a `make test` guest may run: every suite's timeout, plus 300 for booting
# and the checks after the suites. Longer than any suite can take, so a slow suite is
# named as such, not reported as a hung guest.
guest_timeout() {
	local total=300 f

	for f in "${1:-$ROOT/tests/suites}"/*.sh; do
		total=$((total + $(suite_timeout "$f")))
	done
	echo "$total"
}

# Die unless the profile exists, listing those that do.
require_profile() {
	[ -f "$PROFILES_DIR/$1.conf" ] ||
		die "no VM profile '$1' (profiles: $(all_profiles | tr '\n' ' '))"
}

# Get ready to boot one profile: check it exists, install what is missing, and set IMAGE
# to the kernel it boots: KERNEL= when given, else our kernel of the profile's variant,
# built as needed. The patched source is unpacked either way.
prepare_vm() {
	local profile=$1 variant

	require_profile "$profile"
	bash "$ROOT/scripts/deps.sh"
	# Also for another kernel: the guest runs the selftests of our source.
	bash "$ROOT/scripts/kernel-source.sh"
	if [ -n "${KERNEL:-}" ]; then
		[ -f "$KERNEL" ] || die "KERNEL=$KERNEL does not exist"
		IMAGE=$(realpath "$KERNEL")
		return
	fi
	variant=$(profile_var "$profile" KERNEL_VARIANT normal)
	bash "$ROOT/scripts/kernel-build.sh" "$variant"
	IMAGE=$KOBJ/$variant/arch/x86/boot/bzImage
}
