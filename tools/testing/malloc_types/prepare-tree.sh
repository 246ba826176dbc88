#!/usr/bin/env bash
# Lays this repository over Debian's kernel source:
#  1. the pristine tree is unpacked once from the verified package;
#  2. patches/*.patch are applied in order (only from the first one that
#     changed: earlier ones, and the files they touch, are left alone), but
#     for their changes to files of this repository, which step 3 lays over
#     as they are at the end of the series;
#  3. files of this repository at kernel paths are copied in where their
#     content differs, so unchanged files keep their mtimes and a rebuild
#     after a one-file change rebuilds only what depends on it. Files that
#     left the repository are removed from the tree again.
# Prints the tree's path on stdout.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

tree="$MT_KCACHE/linux"
state="$tree/.malloc-types"
deb="$MT_KCACHE/${KERNEL_PKG}_${KERNEL_PKG_VERSION}_all.deb"

unpack() {
	mt_step "unpack kernel source"
	[ -f "$deb" ] || die "$deb is missing: run 'make setup'"
	echo "tree: unpacking $KERNEL_PKG $KERNEL_PKG_VERSION" >&2
	rm -rf "$tree" "$tree.new"
	mkdir -p "$tree.new"
	dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/src/$KERNEL_PKG.tar.xz" |
		tar -xJ -C "$tree.new" --strip-components=1 ||
		die "could not unpack $deb"
	mkdir -p "$tree.new/.malloc-types/patches"
	: >"$tree.new/.malloc-types/manifest"
	mv "$tree.new" "$tree"
}
[ -f "$tree/Makefile" ] && [ -d "$state" ] || unpack

# --- patches -------------------------------------------------------------
mt_step "apply patches"
# The kernel paths of this repository's files, which the overlay writes, and
# the sections of a patch on the kernel's own files ($state/diff).
ours=$(mt_overlay | cut -f2)
kernel_diff() { mt_kernel_diff "$1" <<<"$ours" >"$state/diff"; }
mapfile -t want < <(cd "$MT_ROOT" && ls patches/*.patch 2>/dev/null | sort)
mapfile -t have < <(cd "$state" && ls patches/*.patch 2>/dev/null | sort)
# The first position at which the applied series and the wanted one differ.
keep=0
while [ $keep -lt ${#want[@]} ] && [ $keep -lt ${#have[@]} ] &&
	[ "${want[$keep]}" = "${have[$keep]}" ] &&
	cmp -s "$MT_ROOT/${want[$keep]}" "$state/${have[$keep]}"; do
	keep=$((keep + 1))
done
# The files the reverted patches touch keep their mtimes where the new patches
# leave them as they were, so that renaming, splitting or reordering patches
# rebuilds only what really changed.
stash="$state/stash"
rm -rf "$stash"
for ((i = keep; i < ${#have[@]}; i++)); do
	sed -n 's|^+++ b/\([^[:space:]]*\).*|\1|p' "$state/${have[$i]}"
done | sort -u | while IFS= read -r f; do
	if [ -f "$tree/$f" ]; then
		mkdir -p "$(dirname "$stash/$f")"
		cp -p "$tree/$f" "$stash/$f"
	fi
done
for ((i = ${#have[@]} - 1; i >= keep; i--)); do
	echo "tree: reverting ${have[$i]}" >&2
	kernel_diff "$state/${have[$i]}"
	if grep -q '^+++ ' "$state/diff" &&
		! patch -d "$tree" -p1 -R -s --no-backup-if-mismatch <"$state/diff" >/dev/null; then
		echo "tree: could not revert ${have[$i]}; unpacking afresh" >&2
		unpack
		exec "$0" "$@"
	fi
	rm -f "$state/${have[$i]}"
done
for ((i = keep; i < ${#want[@]}; i++)); do
	echo "tree: applying ${want[$i]}" >&2
	# A patch that only adds or changes files of this repository has no diff here.
	kernel_diff "$MT_ROOT/${want[$i]}"
	if grep -q '^+++ ' "$state/diff"; then
		out=$(patch -d "$tree" -p1 -N -s --no-backup-if-mismatch <"$state/diff" 2>&1) ||
			die "${want[$i]} does not apply: $(echo "$out" | tail -n 1)"
	fi
	cp "$MT_ROOT/${want[$i]}" "$state/${want[$i]}"
done
if [ -d "$stash" ]; then
	(cd "$stash" && find . -type f) | while IFS= read -r f; do
		if cmp -s "$stash/$f" "$tree/$f"; then touch -r "$stash/$f" "$tree/$f"; fi
	done
	rm -rf "$stash"
fi

# --- overlay -------------------------------------------------------------
mt_step "overlay"
new_manifest=$(mktemp)
trap 'rm -f "$new_manifest"' EXIT
while IFS=$'\t' read -r f k; do
	[ -n "$k" ] || continue
	if [ -e "$tree/$k" ] && ! grep -qxF "$k" "$state/manifest"; then
		die "$f would replace the kernel's own $k: change it with a patch under patches/"
	fi
	echo "$k" >>"$new_manifest"
	if ! cmp -s "$MT_ROOT/$f" "$tree/$k"; then
		mkdir -p "$(dirname "$tree/$k")"
		cp "$MT_ROOT/$f" "$tree/$k"
	fi
done < <(mt_overlay)
sort -o "$new_manifest" "$new_manifest"
comm -23 "$state/manifest" "$new_manifest" | while IFS= read -r gone; do
	[ -n "$gone" ] || continue
	rm -f "$tree/$gone"
	# and the directories it leaves empty
	d=$(dirname "$gone")
	while [ "$d" != . ] && rmdir "$tree/$d" 2>/dev/null; do d=$(dirname "$d"); done
done
cp "$new_manifest" "$state/manifest"
echo "$tree"
