#!/usr/bin/env bash
# `make series-build`: builds the kernel after every patch of the series, in
# order, as a maintainer bisecting it would, and fails on the first patch
# after which the tree does not build, W=1 warns about a file of the
# series, or the linker or objtool warns.
#
# The series' commits are series.py's (`series.py commits`, on the pristine
# source in $MT_KCACHE/series/linux). A work tree of that repository
# ($MT_KCACHE/series-build/src) is moved from commit to commit with
# `git checkout`, which rewrites only the files a patch changes, and built
# in one build directory ($MT_KCACHE/series-build/out): each build compiles
# what its patch changed and what depends on it. The configuration is
# tinyconfig with configs/malloc_types.config and configs/series.config (a
# small x86_64 kernel with every option the series' code is built under),
# made again after each patch that changes a Kconfig file: an option that a
# later patch adds is off until then. Built: the kernel image and the
# modules, with W=1.
#
# The trees built are listed in $work/built as they pass: a run after a
# change builds only the patches whose trees are new, from the build
# directory as it is (every build is incremental anyway), and an unchanged
# series is not built again. Once every patch has built, the trees are
# recorded in patches/series-built with the set-up (the toolchain's versions
# and the configuration fragments), for the repository: a run on another
# machine skips the patches whose trees it lists, since a tree is the whole
# source after its patch, and the same source built the same way builds the
# same, whichever patch it follows. `make check` runs this script, so a
# change to patches/ is built there.
# A patch that does not build is built on with make -k, so that its log has
# every error.
# One log per patch: $MT_CACHE/logs/series-build/.
# Usage: series-build.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

base="$MT_KCACHE/series/linux"
work="$MT_KCACHE/series-build"
src="$work/src"
out="$work/out"
logs="$MT_CACHE/logs/series-build"
export MT_ROOT KERNEL_PKG KERNEL_PKG_VERSION

mt_step "series commits"
mapfile -t commits < <(python3 "$MT_DIR/series.py" commits)
[ ${#commits[@]} -gt 0 ] || die "series.py gave no commits"
# What the builds depend on besides the commits: a change starts afresh.
setup=$(printf '%s\n' "$LLVM_VERSION" "$RUST_VERSION" |
	cat - "$MT_DIR/configs/malloc_types.config" "$MT_DIR/configs/series.config" |
	sha256sum | cut -d' ' -f1)
mkdir -p "$work" "$logs"
if [ "$(cat "$work/setup" 2>/dev/null)" != "$setup" ]; then
	rm -f "$work/built"
	echo "$setup" >"$work/setup"
fi
# The trees built before: here ($work/built), or wherever patches/series-built
# was recorded, with the same set-up. A tree is the whole kernel source after
# its patch, so the same tree built the same way builds the same, whichever
# patch it follows: a patch whose tree is listed is not built again.
record="$MT_ROOT/patches/series-built"
declare -A done_trees=()
listed() { # listed FILE: the trees FILE lists
	grep -v -e '^#' -e '^setup ' "$1" 2>/dev/null | cut -d' ' -f1 || true
}
for t in $(listed "$work/built"); do done_trees[$t]=1; done
if [ "$(sed -n 's/^setup //p' "$record" 2>/dev/null)" = "$setup" ]; then
	for t in $(listed "$record"); do done_trees[$t]=1; done
fi
printf '%s\n' "${!done_trees[@]}" | sort >"$work/built.new"
mv "$work/built.new" "$work/built"
skip=0
for c in "${commits[@]}"; do
	read -r _ tree _ <<<"$c"
	[ -z "${done_trees[$tree]:-}" ] || skip=$((skip + 1))
done

# Records the trees built, with the set-up, in patches/series-built.
write_record() {
	{
		echo "# The trees of the patches of the series, each built by make series-build"
		echo "# (tools/testing/malloc_types/series-build.sh) with no warning about the"
		echo "# series, and the set-up they were built with. Written by the build."
		echo "setup $setup"
		local c
		for c in "${commits[@]}"; do
			read -r _ tree subject <<<"$c"
			echo "$tree $subject"
		done
	} >"$record.new"
	mv "$record.new" "$record"
}

if [ $skip -eq ${#commits[@]} ]; then
	echo "series-build: ${#commits[@]} patches, each built before"
	write_record
	exit 0
fi
[ $skip -eq 0 ] || echo "series-build: $skip of ${#commits[@]} patches built before"

if [ ! -e "$src/.git" ]; then
	rm -rf "$src"
	git -C "$base" worktree prune
	git -C "$base" worktree add -q --detach "$src" pristine
fi

export RUSTUP_TOOLCHAIN="$RUST_VERSION"
export LIBCLANG_PATH="/usr/lib/llvm-$LLVM_VERSION/lib"
kmake=(make -C "$src" "LLVM=-$LLVM_VERSION" "BINDGEN=$MT_TOOLS/bin/bindgen" -j"$(nproc)" O="$out")
frags=("$MT_DIR/configs/malloc_types.config" "$MT_DIR/configs/series.config")

# The .config of the tree checked out, replaced only where it changed.
configure() {
	local cfg="$work/config"
	mkdir -p "$cfg" "$out"
	"${kmake[@]}" O="$cfg" tinyconfig >/dev/null
	"$src/scripts/kconfig/merge_config.sh" -m -O "$cfg" "$cfg/.config" "${frags[@]}" >/dev/null
	"${kmake[@]}" O="$cfg" olddefconfig >/dev/null
	cmp -s "$cfg/.config" "$out/.config" || cp "$cfg/.config" "$out/.config"
}

# The files the series adds or changes, whose W=1 warnings count.
files=$(git -C "$base" diff --name-only "pristine" "${commits[-1]%% *}")

# The warnings of a build log that count: the compiler's about a file of the
# series (C on the warning's line, Rust on the "-->" line under it), and
# every warning of the linker and of objtool, which name no source file.
series_warnings() {
	{
		grep -E '(warning|error)(\[[^]]*\])?:' "$1" |
			grep -F -f <(sed 's|$|:|' <<<"$files") || true
		grep -E '^ *--> ' "$1" | grep -F -f <(sed 's|$|:|' <<<"$files") || true
		grep -E '^(ld(\.lld)?(-[0-9]+)?|[^ ]*: warning: objtool): ' "$1" |
			grep -F 'warning' || true
	} | sort -u
}

prev=
n=0
for c in "${commits[@]}"; do
	n=$((n + 1))
	read -r sha tree subject <<<"$c"
	[ -z "${done_trees[$tree]:-}" ] || continue
	log="$logs/$(printf %04d $n).log"
	mt_step "series build $n/${#commits[@]}"
	git -C "$src" checkout -q --detach "$sha"
	if [ -z "$prev" ] || [ ! -f "$out/.config" ] ||
		! git -C "$base" diff --quiet "$prev" "$sha" -- ':(glob)**/Kconfig*'; then
		configure || die "patch $n ($subject): the configuration fails"
	fi
	prev=$sha
	t0=$(date +%s)
	if ! "${kmake[@]}" -k W=1 bzImage modules >"$log" 2>&1; then
		grep -E -A4 '^error(\[E[0-9]+\])?:|: error:|undefined' "$log" | head -n 40 >&2 || true
		die "patch $n ($subject) does not build (log: $log)"
	fi
	warned=$(series_warnings "$log")
	if [ -n "$warned" ]; then
		echo "$warned" | head -n 10 >&2
		die "patch $n ($subject): the build warns about the series (log: $log)"
	fi
	echo "$tree" >>"$work/built"
	echo "series-build: patch $n/${#commits[@]} builds, $(($(date +%s) - t0)) s: $subject"
done
write_record
echo "series-build: ${#commits[@]} patches, each builds (x86_64, W=1)"
