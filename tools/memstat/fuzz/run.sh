#!/bin/sh
# Fuzz a parser: tools/memstat/fuzz/run.sh [RUNS] [TARGET] (stream, trace_line, core, names, stacks, kernel_files)
# Installs cargo-fuzz if missing, writes the seed corpus, runs the target
# with the nightly toolchain; exits non-zero on a crash.
set -eu
RUNS=${1:-100000}
TARGET=${2:-stream}
cd "$(dirname "$0")"
# The fuzzer needs a nightly toolchain (sanitizer flags).
rustup run nightly rustc --version >/dev/null 2>&1 || rustup toolchain install nightly --profile minimal
if ! cargo fuzz --version >/dev/null 2>&1; then
	cargo install --locked cargo-fuzz
fi
# Seed corpus: streams written from known values, trace lines, names and patterns of the
# shared vectors (see tests/seeds.rs).
MEMSTAT_FUZZ_CORPUS="$PWD/corpus" cargo test --manifest-path ../Cargo.toml --test seeds -q
exec cargo +nightly fuzz run ${CARGO_TARGET_DIR:+--target-dir "$CARGO_TARGET_DIR"} "$TARGET" -- -runs="$RUNS"
