#!/usr/bin/env bash
# Installs what the build needs, idempotently: Debian packages, the pinned
# Rust toolchain with rust-src and the x86_64 and aarch64 musl targets,
# bindgen-cli, Debian's linux-source package and the arm64 busybox of the
# arm64 guest (both verified against their recorded SHA-256). Reuses
# everything that is already in place; a failed step says which one and
# why, on one line.
# Usage: setup.sh [inline]   (inline: also the LLVM of the kernels built with
# CONFIG_RUST_INLINE_HELPERS: prod and bench-inline)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# prometheus: promtool checks the metrics of the memstat exporter (make check);
# libclang-rt: libFuzzer for the fuzzing of the selection files' parser;
# pkgconf, g++, valgrind: the C programs of libmemstat's tests (capi/tests/run.sh);
# golang-go, chromium: `go tool pprof` reads back dtmalloc stacks' profile, and a headless
# browser shows its flame graph (tools/memstat/tests/stacks.rs).
PACKAGES="clang-$LLVM_VERSION lld-$LLVM_VERSION llvm-$LLVM_VERSION libclang-$LLVM_VERSION-dev
	libclang-rt-$LLVM_VERSION-dev
	qemu-system-x86 qemu-system-arm busybox-static flex bison bc libelf-dev libssl-dev cpio
	make xz-utils kmod python3 python3-venv python3-ply python3-git python3-sphinx python3-yaml gcc libc6-dev musl-tools ca-certificates
	linux-perf trace-cmd bpftrace prometheus gcc-aarch64-linux-gnu libc6-dev-arm64-cross
	pkgconf g++ valgrind golang-go chromium"
# `setup.sh inline` (make run, make bench) adds the LLVM that
# CONFIG_RUST_INLINE_HELPERS needs for the prod and bench-inline kernels:
# clang with rustc's LLVM major version.
if [ "${1:-}" = inline ]; then
	v=$LLVM_INLINE_VERSION
	PACKAGES="$PACKAGES clang-$v lld-$v llvm-$v libclang-$v-dev"
fi

mt_step "Debian packages"
missing=()
for p in $PACKAGES; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	[ "$(id -u)" = 0 ] || die "need root to install: ${missing[*]}"
	echo "setup: installing ${missing[*]}"
	mt_run apt-get update
	DEBIAN_FRONTEND=noninteractive mt_run apt-get install -y --no-install-recommends "${missing[@]}"
fi

# drgn reads make check's vmcores beside memstat -M (vmcore.py): PyPI's
# drgn, pinned, in a virtual environment under the cache (its wheel brings
# its own libdw, libelf and libkdumpfile).
mt_step "drgn"
venv="$MT_CACHE/drgn-venv"
if [ "$("$venv/bin/python3" -c 'import drgn; print(drgn.__version__)' 2>/dev/null)" != "$DRGN_VERSION" ]; then
	echo "setup: installing drgn $DRGN_VERSION (PyPI) in $venv"
	rm -rf "$venv"
	mt_run python3 -m venv "$venv"
	mt_run "$venv/bin/pip" install --quiet --disable-pip-version-check "drgn==$DRGN_VERSION"
fi

mt_step "Rust toolchain"
command -v rustup >/dev/null || die "rustup is not installed (see https://rustup.rs)"
if ! rustup run "$RUST_VERSION" rustc --version >/dev/null 2>&1; then
	echo "setup: installing Rust $RUST_VERSION"
	mt_run rustup toolchain install "$RUST_VERSION" --profile minimal -c rust-src -c rustfmt -c clippy
fi
rustup component list --toolchain "$RUST_VERSION" --installed 2>/dev/null | grep -q '^rust-src' ||
	mt_run rustup component add rust-src --toolchain "$RUST_VERSION"
# clippy-driver, for the test kernel's `make CLIPPY=1`.
rustup component list --toolchain "$RUST_VERSION" --installed 2>/dev/null | grep -q '^clippy' ||
	mt_run rustup component add clippy --toolchain "$RUST_VERSION"
rustup target list --toolchain "$RUST_VERSION" --installed 2>/dev/null | grep -q '^x86_64-unknown-linux-musl' ||
	mt_run rustup target add x86_64-unknown-linux-musl --toolchain "$RUST_VERSION"
# The arm64 guest's tools (build-tools.sh arm64): rustup's musl target ships
# its own C runtime, libc and linker (rust-lld), so no cross gcc is needed.
rustup target list --toolchain "$RUST_VERSION" --installed 2>/dev/null | grep -q '^aarch64-unknown-linux-musl' ||
	mt_run rustup target add aarch64-unknown-linux-musl --toolchain "$RUST_VERSION"
# libmemstat's C programs for the arm64 guest (build-tools.sh arm64) link
# libmemstat.a with the cross gcc's static glibc: the GNU target.
rustup target list --toolchain "$RUST_VERSION" --installed 2>/dev/null | grep -q '^aarch64-unknown-linux-gnu' ||
	mt_run rustup target add aarch64-unknown-linux-gnu --toolchain "$RUST_VERSION"

mt_step "bindgen-cli"
if [ "$("$MT_TOOLS/bin/bindgen" --version 2>/dev/null)" != "bindgen $BINDGEN_VERSION" ]; then
	echo "setup: building bindgen-cli $BINDGEN_VERSION (a few minutes, once)"
	mt_run cargo "+$RUST_VERSION" install --locked --root "$MT_TOOLS" bindgen-cli --version "=$BINDGEN_VERSION"
fi

mt_step "cargo-deny"
if [ "$("$MT_TOOLS/bin/cargo-deny" --version 2>/dev/null)" != "cargo-deny $CARGO_DENY_VERSION" ]; then
	echo "setup: building cargo-deny $CARGO_DENY_VERSION (a few minutes, once)"
	mt_run cargo "+$RUST_VERSION" install --locked --root "$MT_TOOLS" cargo-deny --version "=$CARGO_DENY_VERSION"
fi

# The Debian mirror this machine's apt sources already use (the first one
# that is not the security archive), for the private apt configurations of
# the downloads below: no mirror is written down in this repository.
mirror_uri() {
	local uri
	uri=$(sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources 2>/dev/null |
		tr ' ' '\n' | grep -v -e security -e '^$' | head -n 1)
	[ -n "$uri" ] || uri=$(awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /:\/\//) { print $i; exit } }' \
		/etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | head -n 1)
	[ -n "$uri" ] || die "no Debian mirror found in this machine's apt sources"
	echo "$uri"
}
# A private apt configuration in directory $1 with the one source line $2,
# without touching the machine's sources, lists or preferences: sets the
# array aptopts, the options of apt-get that select it.
private_apt() {
	local apt=$1
	mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/etc/preferences.d"
	echo "$2" >"$apt/etc/sources.list"
	aptopts=(-o "Dir::Etc::SourceList=$apt/etc/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
		-o Dir::Etc::Preferences=/dev/null -o "Dir::Etc::PreferencesParts=$apt/etc/preferences.d"
		-o Debug::NoLocking=1 -o APT::Sandbox::User=root)
}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
# Downloads the package SPEC (name=version) with the private apt
# configuration that aptopts selects into directory DIR, and checks that it
# produced DEB with the SHA-256 SHA.
fetch_deb() { # fetch_deb DIR SPEC DEB SHA
	local dir=$1 spec=$2 deb=$3 sha=$4
	mt_run apt-get "${aptopts[@]}" update
	(cd "$dir" && mt_run apt-get "${aptopts[@]}" download "$spec")
	[ -f "$deb" ] || die "apt-get download did not produce $deb"
	echo "$sha  $deb" | sha256sum -c --status ||
		die "SHA-256 of $deb is $(sha256sum "$deb" | cut -d' ' -f1), expected $sha"
}

mt_step "kernel source"
deb="$MT_KCACHE/${KERNEL_PKG}_${KERNEL_PKG_VERSION}_all.deb"
if [ ! -f "$deb" ] || ! echo "$KERNEL_PKG_SHA256  $deb" | sha256sum -c --status; then
	mkdir -p "$MT_KCACHE"
	# The suite the package lives in, on the mirror this machine already uses.
	uri=$(mirror_uri)
	private_apt "$MT_CACHE/apt" "deb [signed-by=$keyring] $uri $KERNEL_PKG_SUITE main"
	echo "setup: fetching $KERNEL_PKG $KERNEL_PKG_VERSION ($KERNEL_PKG_SUITE)"
	fetch_deb "$MT_KCACHE" "$KERNEL_PKG=$KERNEL_PKG_VERSION" "$deb" "$KERNEL_PKG_SHA256"
fi

# The busybox of the arm64 guest's initramfs: Debian's busybox-static for
# arm64, fetched like the kernel source (a private apt configuration, here
# one whose only architecture is arm64, so that nothing of the machine's
# dpkg multiarch set-up changes), checked against its SHA-256 and unpacked
# to $MT_CACHE/arm64/busybox. The suite is this machine's release: the
# pinned version is the one of Debian 12 (bookworm).
mt_step "arm64 busybox"
arm64="$MT_CACHE/arm64"
deb="$arm64/busybox-static_${BUSYBOX_ARM64_PKG_VERSION//:/%3a}_arm64.deb"
if [ ! -x "$arm64/busybox" ] || [ ! -f "$deb" ] ||
	! echo "$BUSYBOX_ARM64_PKG_SHA256  $deb" | sha256sum -c --status; then
	mkdir -p "$arm64"
	if [ ! -f "$deb" ] || ! echo "$BUSYBOX_ARM64_PKG_SHA256  $deb" | sha256sum -c --status; then
		uri=$(mirror_uri)
		suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
		[ -n "$suite" ] || die "no VERSION_CODENAME in /etc/os-release"
		private_apt "$MT_CACHE/apt-arm64" "deb [arch=arm64 signed-by=$keyring] $uri $suite main"
		aptopts+=(-o APT::Architecture=arm64 -o APT::Architectures=arm64)
		echo "setup: fetching busybox-static:arm64 $BUSYBOX_ARM64_PKG_VERSION ($suite)"
		fetch_deb "$arm64" "busybox-static:arm64=$BUSYBOX_ARM64_PKG_VERSION" "$deb" "$BUSYBOX_ARM64_PKG_SHA256"
	fi
	# Unpacked next to the cache, then moved in place: an interrupted run
	# leaves no half-written busybox behind.
	rm -rf "$arm64/deb"
	mt_run dpkg-deb -x "$deb" "$arm64/deb"
	[ -f "$arm64/deb/bin/busybox" ] || die "$deb has no bin/busybox"
	mv -f "$arm64/deb/bin/busybox" "$arm64/busybox"
	rm -rf "$arm64/deb"
fi
exit 0
