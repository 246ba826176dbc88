#!/usr/bin/env bash
# Boots one kernel flavour with its initramfs in QEMU and captures the
# serial console in a log. TCG by default (KVM device nodes exist on these
# machines but guests hang); MT_ACCEL=kvm overrides where KVM works.
# The default is single-threaded TCG: with one host thread per vCPU, a vCPU
# now and then ran a stale translation of kernel text that another vCPU had
# just patched (the int3 of text_poke_bp(), while tracing was switched on),
# and the kernel died with "Oops: int3" in code we did not touch (about one
# boot in eight). One thread for both vCPUs keeps -smp 2 and removes the race.
# QEMU runs with -no-reboot, the guest ends with `reboot -f`, and a hard
# timeout (MT_TIMEOUT seconds) ends a guest that never does.
# The arm64 flavour boots under qemu-system-aarch64 -M virt -cpu max (with
# QEMU's cheaper, implementation-defined pointer authentication: the
# architected one dominates the guest's time under TCG) and a PL011 console.
# With MT_HOSTFWD=tcp:127.0.0.1:PORT-:9100, the x86_64 guest gets a network:
# a virtio-net device on QEMU's user network (the guest 10.0.2.15, the host
# 10.0.2.2) with that host port forwarded to the guest (the fleet export's
# scrape, guest test 75); no boot ROM (none is needed to boot -kernel).
# With MT_QMP=PATH, QEMU serves its QMP monitor on the unix socket PATH and
# has a vmcoreinfo device (the kernel hands it its vmcoreinfo note through
# fw_cfg), so that dump-guest-memory writes a vmcore that memstat -M and
# drgn read (vmcore.py, guest test 78).
# Usage: run-qemu.sh test|prod|arm64 check|run LOG [extra kernel arguments...]
set -euo pipefail
. "$(dirname "$0")/lib.sh"

flavour=${1:?usage: run-qemu.sh FLAVOUR MODE LOG [ARGS...]}
mode=${2:?mode}
log=${3:?log}
shift 3
out="$MT_KCACHE/build-$flavour"
image="$MT_KCACHE/initramfs-$flavour.cpio.gz"
mt_step "boot $flavour"
kernel="$out/$(mt_image "$flavour")"
[ -f "$kernel" ] || die "no $flavour kernel"
[ -f "$image" ] || die "no initramfs"

case $(mt_arch "$flavour") in
arm64) console=ttyAMA0 qemu=(qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on) ;;
*) console=ttyS0 qemu=(qemu-system-x86_64 -cpu max) ;;
esac
append="console=$console panic=-1 oops=panic mt.mode=$mode"
case $flavour in test | arm64) append="$append panic_on_warn=1" ;; esac
append="$append $*"
qemu+=(-accel "${MT_ACCEL:-tcg,thread=single}" -smp "${MT_SMP:-2}" -m "${MT_MEM:-2G}"
	-nographic -no-reboot -kernel "$kernel" -initrd "$image"
	-append "$append")
[ -n "${MT_ICOUNT:-}" ] && qemu+=(-icount "shift=$MT_ICOUNT")
if [ -n "${MT_HOSTFWD:-}" ] && [ "$(mt_arch "$flavour")" = x86_64 ]; then
	qemu+=(-netdev "user,id=net0,hostfwd=$MT_HOSTFWD" -device virtio-net-pci,netdev=net0,romfile=)
fi
if [ -n "${MT_QMP:-}" ]; then
	rm -f "$MT_QMP"
	qemu+=(-qmp "unix:$MT_QMP,server=on,wait=off" -device vmcoreinfo)
fi
mkdir -p "$(dirname "$log")"
echo "qemu: ${qemu[*]}" >"$log"
rc=0
timeout --kill-after=10 "${MT_TIMEOUT:-900}" "${qemu[@]}" </dev/null >>"$log" 2>&1 || rc=$?
case $rc in
0) ;;
124 | 137) echo "qemu: timed out after ${MT_TIMEOUT:-900}s" >>"$log" ;;
*) echo "qemu: exited with status $rc" >>"$log" ;;
esac
exit 0
