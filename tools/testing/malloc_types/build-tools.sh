#!/usr/bin/env bash
# Builds the userspace tools (tools/memstat, tools/binderload) as static musl
# binaries for the guest's initramfs. Their cargo target directory lives in
# the build cache; the binaries land in its <rust target>/release.
# Usage: build-tools.sh [x86_64|arm64]   (default x86_64; arm64: for the
# arm64 guest, in aarch64-unknown-linux-musl/release)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
mt_step "build tools"
arch=${1:-x86_64}
case $arch in
x86_64)
	target=x86_64-unknown-linux-musl
	step=""
	;;
arm64)
	target=aarch64-unknown-linux-musl
	step=" arm64"
	# No cross gcc here: rustc links with the rust-lld of its toolchain,
	# the musl target bringing its own crt objects and libc (self-contained),
	# so the result is static without any aarch64 package. The flags make it
	# a plain static executable, not a static PIE, like memstat's
	# .cargo/config.toml does for x86_64. lld aligns aarch64 segments to
	# 64 KiB, so the binaries load on a 16K-page kernel too.
	export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=rust-lld
	export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_RUSTFLAGS="-C target-feature=+crt-static -C relocation-model=static"
	# C or assembly of a crate built with the cc crate for the target (none
	# today): clang cross-compiles by itself (cc passes --target). There are
	# no aarch64 libc headers here, and the host's glibc ones must not be
	# used: -nostdlibinc leaves clang's own freestanding headers (stdint.h,
	# stddef.h, ...), so C code that needs libc fails loudly. Build scripts
	# and proc-macros still build for the host, with the host's cc.
	export CC_aarch64_unknown_linux_musl="clang-$LLVM_VERSION"
	export CFLAGS_aarch64_unknown_linux_musl=-nostdlibinc
	export AR_aarch64_unknown_linux_musl="llvm-ar-$LLVM_VERSION"
	;;
*) die "usage: build-tools.sh [x86_64|arm64]" ;;
esac
mt_step "build tools$step"
export CARGO_TARGET_DIR="$MT_CACHE/cargo-target"
crates=()
for c in tools/memstat tools/binderload; do [ -d "$MT_ROOT/$c" ] && crates+=("$c"); done
[ ${#crates[@]} -eq 0 ] || mt_cargo_fresh "tools-$arch" "${crates[@]}"
if [ -f "$MT_ROOT/tools/memstat/Cargo.toml" ]; then
	(cd "$MT_ROOT/tools/memstat" &&
		mt_run cargo "+$RUST_VERSION" build --release --locked --target "$target" --bins --examples)
fi
# libmemstat for C programs (tools/memstat/capi): installed under the cache,
# then its examples built as a C programmer builds them, with pkg-config,
# statically (glibc), for guest/63-libmemstat-c.sh. For x86_64 the library
# is the host's build, the one capi/tests/run.sh tests; for arm64 that of the
# GNU target, linked by the cross gcc.
if [ -f "$MT_ROOT/tools/memstat/capi/Makefile" ]; then
	mt_step "build libmemstat for C$step"
	capi="$MT_CACHE/capi-$arch"
	case $arch in
	x86_64) gnu= cc=gcc ;;
	arm64) gnu=aarch64-unknown-linux-gnu cc=aarch64-linux-gnu-gcc ;;
	esac
	mt_run make -C "$MT_ROOT/tools/memstat/capi" install PREFIX="$capi" RUST_TARGET="$gnu" \
		CC="$cc" CARGO="cargo +$RUST_VERSION"
	mkdir -p "$capi/bin"
	for ex in skbuffs vmstat_m; do
		# shellcheck disable=SC2046 # pkg-config's words are separate arguments
		mt_run "$cc" -static -O2 -Wall -Wextra -Werror -Wl,--gc-sections -s -o "$capi/bin/$ex" \
			"$MT_ROOT/tools/memstat/capi/examples/$ex.c" \
			$(PKG_CONFIG_PATH="$capi/lib/pkgconfig" pkg-config --cflags --libs --static memstat)
	done
fi
# The Binder IPC workload of guest/70-binder.sh; its AIDL compiler is a
# build dependency (rsbinder-aidl), so nothing outside Cargo is needed.
if [ -f "$MT_ROOT/tools/binderload/Cargo.toml" ]; then
	mt_step "build binderload$step"
	(cd "$MT_ROOT/tools/binderload" &&
		mt_run cargo "+$RUST_VERSION" build --release --locked --target "$target")
fi
[ ${#crates[@]} -eq 0 ] || mt_cargo_built "tools-$arch"
