#!/usr/bin/env bash
# Configures and builds one kernel flavour: tinyconfig + configs/base.config
# + configs/malloc_types.config + configs/FLAVOUR.config, with LLVM=-19 and
# the pinned Rust toolchain, in $MT_KCACHE/build-FLAVOUR. The kernels with
# CONFIG_RUST_INLINE_HELPERS -- prod, and bench-inline (bench.config +
# bench-inline.config) -- are built with LLVM=-$LLVM_INLINE_VERSION, rustc's
# own LLVM major version.
# The configuration is regenerated only when a fragment changed, and the
# .config is replaced only when its content changed, so a rebuild stays
# incremental. Every option a fragment asks for is checked in the result.
# The nomt flavour (the kernel without malloc types) leaves
# malloc_types.config out; so does bench-nomt, the bench-inline kernel
# without malloc types (bench.config + bench-inline.config +
# bench-nomt.config), the baseline of malloc_types.default_types=0. The
# bench-debug flavour is the bench-inline kernel with failure injection and
# memguard per type (bench.config + bench-inline.config + bench-debug.config).
# The arm64 flavour is the test kernel cross-built for arm64 with 16 KiB
# pages (test.config + arm64.config; ARCH=arm64, the same LLVM and Rust
# toolchain: clang and rustc are cross compilers already).
# The test kernel is built with clippy (`make CLIPPY=1`), every Rust object
# again each time (the kernel crate's object is removed first, and every Rust
# object depends on it), so that its build log holds clippy's findings on
# every Rust file; check.sh judges those on the files of the series.
# `build-kernel.sh FLAVOUR rustdoc` then runs `make rustdoc` in its build
# directory, the log in $MT_CACHE/logs/rustdoc-FLAVOUR.log.
# Usage: build-kernel.sh test|prod|bench|bench-inline|bench-nomt|bench-debug|nomt|arm64 [rustdoc]
set -euo pipefail
. "$(dirname "$0")/lib.sh"

flavour=${1:?usage: build-kernel.sh test|prod|bench|bench-inline|bench-nomt|bench-debug|nomt|arm64 [rustdoc]}
what=${2:-kernel}
[ -f "$MT_DIR/configs/$flavour.config" ] || die "no configs/$flavour.config"
tree="$MT_KCACHE/linux"
out="$MT_KCACHE/build-$flavour"
[ -f "$tree/Makefile" ] || die "no kernel tree: run 'make tree'"

export RUSTUP_TOOLCHAIN="$RUST_VERSION"
# The LLVM version of each flavour; bindgen's libclang goes with it.
case $flavour in
prod | bench-inline | bench-nomt | bench-debug) llvm=$LLVM_INLINE_VERSION ;;
*) llvm=$LLVM_VERSION ;;
esac
command -v "clang-$llvm" >/dev/null || die "clang-$llvm is not installed (make run and make bench install it)"
export LIBCLANG_PATH="/usr/lib/llvm-$llvm/lib"
kmake=(make -C "$tree" "LLVM=-$llvm" "BINDGEN=$MT_TOOLS/bin/bindgen" -j"$(nproc)")
[ "$(mt_arch "$flavour")" = arm64 ] && kmake+=(ARCH=arm64)
[ "$flavour" = test ] && kmake+=(CLIPPY=1)

if [ "$what" = rustdoc ]; then
	[ -f "$out/.config" ] || die "no $flavour kernel to document: build it first"
	mkdir -p "$MT_CACHE/logs"
	log="$MT_CACHE/logs/rustdoc-$flavour.log"
	"${kmake[@]}" O="$out" rustdoc >"$log" 2>&1 || die "make rustdoc failed (log: $log)"
	exit 0
fi

frags=("$MT_DIR/configs/base.config")
case $flavour in
nomt | bench-nomt) ;;
*) [ -f "$MT_DIR/configs/malloc_types.config" ] && frags+=("$MT_DIR/configs/malloc_types.config") ;;
esac
case $flavour in
bench-inline) frags+=("$MT_DIR/configs/bench.config") ;;
bench-nomt | bench-debug) frags+=("$MT_DIR/configs/bench.config" "$MT_DIR/configs/bench-inline.config") ;;
arm64) frags+=("$MT_DIR/configs/test.config") ;;
esac
frags+=("$MT_DIR/configs/$flavour.config")

mt_step "rust available"
mkdir -p "$out"
mt_run "${kmake[@]}" O="$out" rustavailable

mt_step "configure $flavour"
stamp=$(cat "$MT_DIR/versions" "${frags[@]}" "$tree/.malloc-types/manifest" "$tree"/.malloc-types/patches/* 2>/dev/null |
	sha256sum | cut -d' ' -f1)
if [ ! -f "$out/.config" ] || [ "$(cat "$out/.config-stamp" 2>/dev/null)" != "$stamp" ]; then
	cfg="$MT_KCACHE/config-$flavour"
	mkdir -p "$cfg"
	mt_run "${kmake[@]}" O="$cfg" tinyconfig
	mt_run "$tree/scripts/kconfig/merge_config.sh" -m -O "$cfg" "$cfg/.config" "${frags[@]}"
	mt_run "${kmake[@]}" O="$cfg" olddefconfig
	# Every option the fragments set must have survived olddefconfig, with
	# the value of the last fragment that sets it (a later fragment
	# overrides an earlier one, as merge_config.sh does).
	bad=()
	while IFS= read -r line; do
		case "$line" in
		CONFIG_*=n) opt=${line%%=*}
			grep -q "^$opt=" "$cfg/.config" && bad+=("$line") ;;
		CONFIG_*=*) grep -qxF "$line" "$cfg/.config" || bad+=("$line") ;;
		esac
	done < <(cat "${frags[@]}" | awk -F= '/^CONFIG_[A-Za-z0-9_]+=/ {
		if (!($1 in last)) order[++n] = $1
		last[$1] = $0
	} END { for (i = 1; i <= n; i++) print last[order[i]] }')
	[ ${#bad[@]} -eq 0 ] ||
		die "the configuration does not keep: ${bad[*]} (unmet dependencies? see $cfg/.config)"
	cmp -s "$cfg/.config" "$out/.config" || cp "$cfg/.config" "$out/.config"
	echo "$stamp" >"$out/.config-stamp"
fi

mt_step "build $flavour kernel"
echo "kernel: building $flavour kernel in $out" >&2
[ "$flavour" = test ] && rm -f "$out/rust/kernel.o"
log="$MT_CACHE/logs/build-$flavour.log"
mkdir -p "$MT_CACHE/logs"
# headers: the uapi headers in $out/usr/include, for the kselftest.
if ! "${kmake[@]}" O="$out" "$(basename "$(mt_image "$flavour")")" modules headers >"$log" 2>&1; then
	grep -E -A4 '^error(\[E[0-9]+\])?:|: error:|undefined' "$log" | head -n 40 >&2 || true
	die "build failed (log: $log)"
fi
grep -E '^(warning|error)' "$log" | head -n 20 >&2 || true
echo "$out"
