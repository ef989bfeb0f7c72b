#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Export the commits on top of the pristine base in $SRC (branch `series`) back into
# the series folder (kernel/patches/, or kernel/upstream/ with SERIES=upstream) as
# numbered format-patch files and rewrite its `series` file.
# Refuses when the tree has uncommitted changes or untracked files, so nothing is
# silently left out.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -d "$SRC/.git" ] || die "no kernel tree in $SRC: run scripts/kernel-source.sh first"
cd "$SRC"
[ ! -d .git/rebase-apply ] && [ ! -d .git/rebase-merge ] ||
	die "a git am or rebase is in progress in $SRC: finish or abort it first"
[ -z "$(git status --porcelain -uno)" ] ||
	die "$SRC has uncommitted changes: commit them (git add -f for new files) first"
# A new file no commit holds would be left out of the patches without a word.
untracked=$(git ls-files --others --exclude-standard | head -3 | tr '\n' ' ')
if [ -n "$untracked" ]; then
	[ "${FORCE:-}" = 1 ] ||
		die "$SRC has untracked files that no commit holds, so the export would leave them out (${untracked% }): commit or delete them, or FORCE=1 to export without them"
	info "FORCE=1: exporting without the untracked files ${untracked% }"
fi
[ "$(git symbolic-ref --short HEAD 2>/dev/null)" = series ] ||
	die "$SRC is not on branch series: check it out first"
# The series must still be what this tree was made from or last exported: else it
# changed since (a pull, say) and the export would overwrite that.
made_from=$(cat .git/applied-series 2>/dev/null || true)
now="$(cat .git/base-version) $(cd "$ROOT" && content_hash $(sed "s|^|$PATCHES/|" "$PATCHES/series") "$PATCHES/series")"
if [ "$made_from" != "$now" ]; then
	[ "${FORCE:-}" = 1 ] ||
		die "${PATCHES#"$ROOT"/} changed since $SRC was made from it: exporting would overwrite those changes. Run scripts/kernel-source.sh (it keeps your commits safe) or FORCE=1 to overwrite"
	info "FORCE=1: exporting over ${PATCHES#"$ROOT"/} although it changed since $SRC was made"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# --zero-commit, no signature and no "n/N" in the subjects keep the files identical when
# nothing changed, and a new patch from rewriting every other one.
git format-patch -q -N --zero-commit --no-signature -o "$tmp" base..HEAD
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
git rev-parse HEAD >.git/applied-head
info "exported $n patch(es) to ${PATCHES#"$ROOT"/}/"
