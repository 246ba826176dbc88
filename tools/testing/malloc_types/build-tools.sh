#!/usr/bin/env bash
# Builds the userspace tools (tools/memstat) as static musl binaries for the
# guest's initramfs. Their cargo target directory lives in the build cache.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
mt_step "build tools"
[ -f "$MT_ROOT/tools/memstat/Cargo.toml" ] || exit 0
export CARGO_TARGET_DIR="$MT_CACHE/cargo-target"
(cd "$MT_ROOT/tools/memstat" &&
	mt_run cargo "+$RUST_VERSION" build --release --locked --target x86_64-unknown-linux-musl --bins --examples)
