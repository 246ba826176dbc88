#!/usr/bin/env bash
# Builds the guest's initramfs for one kernel flavour: busybox-static, the
# guest init, the guest tests (guest/*.sh), the main job (guest/run.sh), the
# benchmark job (guest/bench.sh), every module the kernel build made, the
# memstat tools and examples and binderload when built, and, in the test
# image, perf, trace-cmd and bpftrace with their libraries (the bench images:
# perf).
# The arm64 image has Debian's arm64 busybox-static (setup.sh fetches it) and
# the tools built for aarch64-unknown-linux-musl, and no tracers.
# Usage: mkinitramfs.sh test|prod|bench|arm64   (prints the image's path)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

flavour=${1:?usage: mkinitramfs.sh test|prod|bench|arm64}
out="$MT_KCACHE/build-$flavour"
stage="$MT_KCACHE/initramfs-$flavour"
image="$MT_KCACHE/initramfs-$flavour.cpio.gz"
mt_step "initramfs $flavour"
[ -f "$out/$(mt_image "$flavour")" ] || die "no $flavour kernel: run 'make kernel'"
arch=$(mt_arch "$flavour")
if [ "$arch" = arm64 ]; then
	busybox=$MT_CACHE/arm64/busybox
	[ -x "$busybox" ] || die "no arm64 busybox: run setup.sh"
else
	busybox=$(command -v busybox || true)
	[ -n "$busybox" ] && file -L "$busybox" 2>/dev/null | grep -q 'statically linked' ||
		busybox=/bin/busybox
	[ -x "$busybox" ] || die "busybox-static is not installed"
fi

rm -rf "$stage"
mkdir -p "$stage"/{bin,sbin,etc,proc,sys,dev,tmp,root,tests,lib/modules}
cp "$busybox" "$stage/bin/busybox"
install -m 0755 "$MT_DIR/guest/init" "$stage/init"
for t in "$MT_DIR"/guest/[0-9]*.sh; do
	[ -f "$t" ] && install -m 0755 "$t" "$stage/tests/"
done
[ -f "$MT_DIR/guest/run.sh" ] && install -m 0755 "$MT_DIR/guest/run.sh" "$stage/run.sh"
[ -f "$MT_DIR/guest/bench.sh" ] && install -m 0755 "$MT_DIR/guest/bench.sh" "$stage/bench.sh"
[ -f "$MT_DIR/guest/lib.sh" ] && install -m 0644 "$MT_DIR/guest/lib.sh" "$stage/tests/lib.sh"
find "$out" -name '*.ko' -exec cp {} "$stage/lib/modules/" \;
case $arch in arm64) triple=aarch64-unknown-linux-musl ;; *) triple=x86_64-unknown-linux-musl ;; esac
musl="$MT_CACHE/cargo-target/$triple/release"
for tool in memstat dtmalloc binderload; do
	[ -x "$musl/$tool" ] && install -m 0755 "$musl/$tool" "$stage/bin/$tool"
done
# The library's example that reads a stream with every read size (guest tests).
[ -x "$musl/examples/read_sizes" ] && install -m 0755 "$musl/examples/read_sizes" "$stage/bin/memstat-read-sizes"
[ -x "$musl/examples/bench_reads" ] && install -m 0755 "$musl/examples/bench_reads" "$stage/bin/memstat-bench-reads"
[ -x "$musl/examples/bench_load" ] && install -m 0755 "$musl/examples/bench_load" "$stage/bin/memstat-bench-load"
# libmemstat's C examples, static (build-tools.sh): guest test 63.
for ex in skbuffs vmstat_m; do
	[ -x "$MT_CACHE/capi-$arch/bin/$ex" ] && install -m 0755 "$MT_CACHE/capi-$arch/bin/$ex" "$stage/bin/libmemstat-$ex"
done
case $flavour in
test) bash "$MT_DIR/initramfs-tracers.sh" "$stage" ;; # perf, trace-cmd, bpftrace
# perf for the bench's call chains (guest/bench.sh, mt.bench=stacks).
bench*) bash "$MT_DIR/initramfs-tracers.sh" "$stage" perf ;;
esac
# The kselftest of the user space ABI, built as the kselftests are (lib.mk),
# against this kernel's uapi headers (build-kernel.sh makes them), linked
# statically for the busybox guest: guest test 80-kselftest runs it.
kst="$MT_KCACHE/kselftest-$flavour"
if [ -f "$MT_KCACHE/linux/tools/testing/selftests/malloc_types/Makefile" ]; then
	case $arch in arm64) kcc=aarch64-linux-gnu-gcc ;; *) kcc=gcc ;; esac
	mkdir -p "$kst"
	mt_run make -C "$MT_KCACHE/linux/tools/testing/selftests/malloc_types" OUTPUT="$kst" \
		CC="$kcc" KHDR_INCLUDES="-isystem $out/usr/include" LDFLAGS=-static
	install -m 0755 "$kst/malloc_types_test" "$stage/bin/malloc_types_test"
fi
echo "root:x:0:0:root:/root:/bin/sh" >"$stage/etc/passwd"
echo "nobody:x:65534:65534:nobody:/:/bin/sh" >>"$stage/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$stage/etc/group"
(cd "$stage" && find . -print0 | sort -z | cpio --null -o -H newc -R 0:0 --quiet) | gzip -1 >"$image.new"
mv "$image.new" "$image"
echo "$image"
