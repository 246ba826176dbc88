#!/bin/sh
# The malloc types of a memory image (memstat -M, libmemstat's kvm side),
# after a workload: Binder busy (binderload), a binder proc still open,
# rnull_mod's types in module memory, KASLR on.
#  - /proc/kcore: memstat -M /proc/kcore --save gives the same stream,
#    byte for byte, as /proc/malloc_stats read just before and just after
#    (when those two are equal: nothing moved in between).
#  - With mt.vmcore=1 (make check watches this guest's console and holds
#    its QMP socket, vmcore.py): /proc/malloc_stats is read, the line
#    "MT-VMCORE: dump N" asks the host to stop the guest and have QEMU
#    write its memory as an ELF vmcore (dump-guest-memory), and the stream
#    read just before is printed afterwards (base64, "MT-VMCORE: b64 N ...",
#    with its SHA-256), with "quiet N" when a second read after the dump is
#    the same (the host then compares memstat -M on the vmcore with it), or
#    "moved N" (then it tries again, 3 times at most). Nothing between the
#    read and the dump creates a pipe or loads a module, which would count.
name=78-vmcore
fail() { echo "$name: FAIL: $*"; exit 1; }
binderfs=/dev/binderfs
kcore_tries=5
# The stream, read with read(2): busybox cat copies with sendfile(), whose
# splice allocates the task's internal pipe, charged to the type "pipe".
stream() { dd if=/proc/malloc_stats of="$1" bs=1M 2>/dev/null; }

mkdir -p $binderfs
grep -q " $binderfs binder " /proc/mounts || mount -t binder binder $binderfs || fail "mount binderfs"
out=/tmp/vmcore-binderload.out
binderload --device $binderfs/binder --clients 2 --calls 200 >$out 2>&1 ||
	fail "binderload exited with $?: $(tail -n 3 $out)"
# Wait for the workload's binder procs to be released (asynchronously).
i=0
while grep -qE '^ *binder proc +[1-9]' /proc/malloc_types && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
# One binder proc stays open (fd 3) through the dumps: an allocation live.
exec 3<>$binderfs/binder || fail "open $binderfs/binder"
lsmod | grep -q '^rnull_mod ' || insmod /lib/modules/rnull_mod.ko || fail "insmod rnull_mod"
grep -qE '^ *binder proc +[1-9]' /proc/malloc_types || fail "no binder proc in use: $(grep 'binder proc' /proc/malloc_types)"

# /proc/kcore, in this guest.
try=1
while :; do
	stream /tmp/kcore-before || fail "read /proc/malloc_stats"
	memstat -M /proc/kcore --save /tmp/kcore.stream 2>/tmp/kcore.err || fail "memstat -M /proc/kcore: $(cat /tmp/kcore.err)"
	stream /tmp/kcore-after || fail "read /proc/malloc_stats"
	if cmp -s /tmp/kcore-before /tmp/kcore-after; then
		if ! cmp -s /tmp/kcore-before /tmp/kcore.stream; then
			echo "$name: /proc/malloc_stats:"
			memstat -f /tmp/kcore-before -a -l -H
			echo "$name: memstat -M /proc/kcore:"
			memstat -f /tmp/kcore.stream -a -l -H
			fail "memstat -M /proc/kcore differs from /proc/malloc_stats"
		fi
		break
	fi
	if [ $try -ge $kcore_tries ]; then
		memstat -f /tmp/kcore-before -a -l -H >/tmp/kcore-before.txt
		memstat -f /tmp/kcore-after -a -l -H >/tmp/kcore-after.txt
		diff /tmp/kcore-before.txt /tmp/kcore-after.txt
		fail "/proc/malloc_stats moved in each of $kcore_tries tries"
	fi
	try=$((try + 1))
done
n=$(memstat -f /tmp/kcore.stream -a -H | tail -n +2 | wc -l)
echo "$name: memstat -M /proc/kcore: the same $(wc -c </tmp/kcore.stream)-byte stream as /proc/malloc_stats ($n types, try $try)"
memstat -M /proc/kcore -m -l -H --name 'binder*' || fail "memstat -M /proc/kcore -m -l"
memstat -M /proc/kcore -m -a -l -H --name 'rnull*' | grep -q ' rnull_mod ' || fail "no rnull_mod type in /proc/kcore"

if grep -qw 'mt.vmcore=1' /proc/cmdline; then
	n=1
	while [ $n -le 3 ]; do
		stream /tmp/vmcore-before
		echo "MT-VMCORE: dump $n"
		# The host stops the guest here, within a second, and lets it go on when
		# QEMU has written the vmcore.
		sleep 10
		stream /tmp/vmcore-after
		base64 -w 76 /tmp/vmcore-before | sed "s/^/MT-VMCORE: b64 $n /"
		echo "MT-VMCORE: sha256 $n $(sha256sum </tmp/vmcore-before | cut -d' ' -f1)"
		if cmp -s /tmp/vmcore-before /tmp/vmcore-after; then
			echo "MT-VMCORE: quiet $n"
			break
		fi
		echo "MT-VMCORE: moved $n"
		n=$((n + 1))
	done
	[ $n -le 3 ] || fail "/proc/malloc_stats moved around each of 3 dumps"
else
	echo "$name: no mt.vmcore=1: no vmcore of this guest (make check gives its x86_64 and arm64 test boots one)"
fi
exec 3<&-
rmmod rnull_mod || fail "rmmod rnull_mod"
umount $binderfs || fail "umount $binderfs"
echo "$name: ok"
