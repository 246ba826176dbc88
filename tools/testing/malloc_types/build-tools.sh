#!/usr/bin/env bash
# Builds the userspace tools (tools/memstat, tools/binderload) as static musl
# binaries for the guest's initramfs. Their cargo target directory lives in
# the build cache.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
mt_step "build tools"
export CARGO_TARGET_DIR="$MT_CACHE/cargo-target"
if [ -f "$MT_ROOT/tools/memstat/Cargo.toml" ]; then
	(cd "$MT_ROOT/tools/memstat" &&
		mt_run cargo "+$RUST_VERSION" build --release --locked --target x86_64-unknown-linux-musl --bins --examples)
fi
# The Binder IPC workload of guest/70-binder.sh; its AIDL compiler is a
# build dependency (rsbinder-aidl), so nothing outside Cargo is needed.
if [ -f "$MT_ROOT/tools/binderload/Cargo.toml" ]; then
	mt_step "build binderload"
	(cd "$MT_ROOT/tools/binderload" &&
		mt_run cargo "+$RUST_VERSION" build --release --locked --target x86_64-unknown-linux-musl)
fi
