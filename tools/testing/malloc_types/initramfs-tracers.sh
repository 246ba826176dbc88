#!/usr/bin/env bash
# Adds the tracepoint consumers the documentation's examples run (perf,
# trace-cmd and bpftrace, from Debian's linux-perf, trace-cmd and bpftrace
# packages) to an initramfs staging directory: each binary in /usr/bin, the
# shared libraries it loads (its ldd closure, at the same paths as on this
# machine, the dynamic loader included) and what they read or run at run
# time: perf's tips file (perf report ends with a tip, or with "Cannot
# load tips.txt file, please install perf!"). perf and trace-cmd read the
# events' formats from tracefs. bpftrace, without BTF, compiles a
# tracepoint's argument struct with clang against the kernel's headers,
# which it unpacks from /sys/kernel/kheaders.tar.xz (CONFIG_IKHEADERS) with
# `tar xf`: busybox's tar (which the guest's shell always runs for "tar",
# whatever is in PATH) does not detect the compression without -J, so the
# guest test unpacks them itself into /tmp/kheaders-RELEASE, the directory
# bpftrace would unpack them to, and which it then uses. A consumer
# that is not installed is left out with a warning (setup.sh installs all
# three); the guest test then says which is missing. With TOOL arguments,
# only those (the bench images take perf alone, for `perf record -g`).
# Usage: initramfs-tracers.sh STAGE [TOOL...]
set -euo pipefail

stage=${1:?usage: initramfs-tracers.sh STAGE [TOOL...]}
shift
tools=("$@")
[ ${#tools[@]} -gt 0 ] || tools=(perf trace-cmd bpftrace)
if [ ! -d "$stage" ]; then
	echo "initramfs-tracers: no staging directory $stage" >&2
	exit 1
fi

# Copy FILE (following symbolic links) to the same path under the stage.
stage_file() {
	local dest="$stage$1"
	[ -e "$dest" ] && return 0
	mkdir -p "$(dirname "$dest")"
	cp -L "$1" "$dest"
}

# Install the executable BIN as DEST in the stage, with the shared
# libraries it loads and the dynamic loader.
stage_binary() {
	local bin=$1 dest=$2 libs lib
	mkdir -p "$(dirname "$stage$dest")"
	install -m 0755 "$bin" "$stage$dest"
	# ldd prints "libfoo.so.1 => /path/libfoo.so.1 (0x...)" for each
	# library and "/lib64/ld-linux-x86-64.so.2 (0x...)" for the loader;
	# a library that is "not found" fails the build, not the guest.
	if ! libs=$(ldd "$bin"); then
		echo "initramfs-tracers: ldd $bin failed" >&2
		exit 1
	fi
	if grep -q 'not found' <<<"$libs"; then
		echo "initramfs-tracers: $bin: missing libraries:" \
			"$(grep 'not found' <<<"$libs" | tr -s ' \t\n' ' ')" >&2
		exit 1
	fi
	while read -r lib; do
		stage_file "$lib"
	done < <(awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<<"$libs")
}

for tool in "${tools[@]}"; do
	bin=$(command -v "$tool" || true)
	if [ -z "$bin" ]; then
		echo "initramfs-tracers: $tool is not installed, left out of the initramfs" >&2
		continue
	fi
	stage_binary "$(readlink -f "$bin")" "/usr/bin/$tool"
	tips=/usr/share/doc/linux-perf/tips.txt
	if [ "$tool" = perf ] && [ -f "$tips" ]; then
		stage_file "$tips"
	fi
done
