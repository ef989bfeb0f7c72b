#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Export the commits on top of the pristine base in $SRC (branch `series`) back into
# kernel/patches/ as numbered format-patch files and rewrite kernel/patches/series.
# Refuses when the tree has uncommitted changes, so nothing is silently left out.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PATCHES=$ROOT/kernel/patches
[ -d "$SRC/.git" ] || die "no kernel tree in $SRC: run scripts/kernel-source.sh first"
cd "$SRC"
[ -z "$(git status --porcelain -uno)" ] ||
	die "$SRC has uncommitted changes: commit them (git add -f for new files) first"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# --zero-commit and no signature keep regenerated files identical when nothing changed.
git format-patch -q --zero-commit --no-signature -o "$tmp" base..HEAD
rm -f "$PATCHES"/*.patch
: >"$PATCHES/series"
for p in "$tmp"/*.patch; do
	[ -e "$p" ] || continue
	# An empty context line is " " in git's diffs; git am and patch take it as
	# an empty line too, and then no line of a patch ends in white space.
	awk '/^diff --git / { d = 1 } { if (d && $0 == " ") print ""; else print }' \
		"$p" >"$PATCHES/$(basename "$p")"
	basename "$p" >>"$PATCHES/series"
done
n=$(wc -l <"$PATCHES/series")
# The exported series is what the tree holds now: record it, so the next build does not
# re-apply it from scratch.
echo "$(cat .git/base-version) $(cd "$ROOT" && content_hash $(sed "s|^|$PATCHES/|" "$PATCHES/series") "$PATCHES/series")" \
	>.git/applied-series
info "exported $n patch(es) to kernel/patches/"
