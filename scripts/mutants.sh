#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make mutants [ONLY=name,...]`: prove that the suites notice known-bad kernels. Each
# tests/mutants/NAME.patch is a plausible bug (or a fix undone) on top of the series; its
# header names the guest suites to run (`Suites:`), the suites or checks that must fail
# (`Killed-by:`) and, when the bug shows only there, the VM profile (`Profile:`, else
# iommu-strict; MUTANT_PROFILE overrides both). For each, this builds the kernel of that
# profile's variant with the mutant applied (incremental, ccache), boots it with only
# those suites, and reports it killed (an expected suite failed) or survived. Exit status
# 1 when one survived or could not be built. Not part of `make test`: each mutant costs a
# build and a boot.
#
# The mutant is applied in $SRC on a branch of its own, after checking that the tree has
# no uncommitted changes and is on `series`; the tree and the normal build return to
# `series` at the end, whatever happens.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

MUTANTS=$ROOT/tests/mutants

mutants=()
for m in "$MUTANTS"/*.patch; do
	name=$(basename "$m" .patch)
	[ -z "${ONLY:-}" ] || [[ ",$ONLY," == *",$name,"* ]] || continue
	mutants+=("$m")
done
[ ${#mutants[@]} -gt 0 ] || die "no mutant ${ONLY:+named '$ONLY' }in $MUTANTS"

bash "$ROOT/scripts/deps.sh"
bash "$ROOT/scripts/kernel-source.sh"
[ -z "$(git -C "$SRC" status --porcelain -uno)" ] ||
	die "$SRC has uncommitted changes: commit or export them first (mutants are applied there)"
[ "$(git -C "$SRC" symbolic-ref --short HEAD 2>/dev/null)" = series ] ||
	die "$SRC is not on branch series: check it out first (mutants are applied on top of it)"
bash "$ROOT/scripts/kernel-build.sh" normal >/dev/null

out=$BUILD/mutants
mkdir -p "$out"
# The kernel variants mutants were built as (a profile's KERNEL_VARIANT): each is
# rebuilt from the series at the end.
declare -A built=([normal]=1)
restore() {
	local v
	git -C "$SRC" checkout -q -f series
	git -C "$SRC" branch -q -D mutant >/dev/null 2>&1 || true
	for v in "${!built[@]}"; do
		info "rebuilding the series' own $v kernel"
		bash "$ROOT/scripts/kernel-build.sh" "$v" >/dev/null
	done
}
trap restore EXIT

# header FIELD FILE: the value of "FIELD: value" in the mutant's header.
header() {
	sed -n "/^diff --git /q; s/^$1: *//p" "$2"
}

killed=0
survived=0
broken=0
report=()
for m in "${mutants[@]}"; do
	name=$(basename "$m" .patch)
	dir=$out/$name
	rm -rf "$dir"
	mkdir -p "$dir"
	suites=$(header Suites "$m")
	expect=$(header Killed-by "$m")
	[ -n "$suites" ] && [ -n "$expect" ] || die "$m has no Suites: or Killed-by: line"
	profile=${MUTANT_PROFILE:-$(header Profile "$m")}
	profile=${profile:-iommu-strict}
	require_profile "$profile"
	variant=$(profile_var "$profile" KERNEL_VARIANT normal)
	built[$variant]=1
	info "mutant $name: $(header Mutant "$m")"

	git -C "$SRC" checkout -q -B mutant series
	if ! git -C "$SRC" apply --index "$m" >"$dir/apply.log" 2>&1 ||
		! git -C "$SRC" commit -q -m "mutant $name" >>"$dir/apply.log" 2>&1; then
		report+=("  BROKEN   $name: does not apply on the series (log: $dir/apply.log)")
		broken=$((broken + 1))
		git -C "$SRC" checkout -q -f series
		continue
	fi
	if ! bash "$ROOT/scripts/kernel-build.sh" "$variant" >"$dir/build.log" 2>&1; then
		report+=("  BROKEN   $name: does not build (log: $dir/build.log)")
		broken=$((broken + 1))
		continue
	fi
	cp "$KOBJ/$variant/arch/x86/boot/bzImage" "$dir/bzImage"

	rc=0
	PROFILE=$profile KERNEL=$dir/bzImage SUITES=$suites bash "$ROOT/scripts/test.sh" \
		>"$dir/test.log" 2>&1 || rc=$?
	cp "$RESULTS/$profile/console.log" "$dir/" 2>/dev/null || true
	# Suites (and `checks`) of this profile, and of its two-host run, that reported a failure.
	failed=$(awk -v p="$profile" '($1 == p || $1 == "two-host-" p) && / passed, / {
			for (i = 3; i <= NF; i++) if ($i ~ /^failed/ && $(i - 1) + 0 > 0) print $2
		}' "$dir/test.log" | sort -u)
	hit=()
	for want in $expect; do
		while read -r s; do
			case "$s" in "$want" | "$want"/*) hit+=("$s") ;; esac
		done <<<"$failed"
	done
	if [ ${#hit[@]} -gt 0 ]; then
		killed=$((killed + 1))
		report+=("  killed   $name on $profile by ${hit[*]}")
		# The results folder is the next mutant's: point at this one's copy of the console.
		grep -E '^      FAIL' "$dir/test.log" | head -n 4 |
			sed "s/^      /             /; s|$RESULTS/$profile/console.log|$dir/console.log|" \
			>"$dir/fails" || true
		while IFS= read -r line; do report+=("$line"); done <"$dir/fails"
	else
		survived=$((survived + 1))
		report+=("  SURVIVED $name on $profile: none of '$expect' failed (exit $rc; log: $dir/test.log)")
	fi
done

echo
echo "==> mutants"
printf '%s\n' "${report[@]}"
echo "$killed killed, $survived survived, $broken broken"
[ "$survived" = 0 ] && [ "$broken" = 0 ]
