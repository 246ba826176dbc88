#!/bin/sh
# The malloc types of a memory image (memstat -M, libmemstat's kvm side),
# after a workload: Binder busy (binderload), a binder proc still open,
# rnull_mod's types in module memory, KASLR on. Every kmalloc of the kernel
# is charged to a type (the default types), so the counters of many types
# move all the time: the comparisons take what does not move.
#  - /proc/kcore: memstat -M /proc/kcore lists as many types as
#    /proc/malloc_stats, and the same rows, every column, for the types that
#    stay still (Binder's and rnull's, idle), when /proc/malloc_stats shows
#    them the same just before and just after.
#  - With mt.vmcore=1 (make check watches this guest's console and holds
#    its QMP socket, vmcore.py): /proc/malloc_stats is read, the line
#    "MT-VMCORE: dump N" asks the host to stop the guest and have QEMU
#    write its memory as an ELF vmcore (dump-guest-memory), and
#    /proc/malloc_stats is read again; both streams are printed afterwards
#    (base64, "MT-VMCORE: b64 N ..." and "MT-VMCORE: after N ...", each with
#    its SHA-256). The host checks that the stream memstat -M reads from the
#    vmcore lies between them: the same types, and each per-CPU counter
#    (they only grow) between its two values. Nothing between the reads
#    loads a module, which would add or remove types.
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

# /proc/kcore, in this guest: the still types' rows (PATTERN), and the
# number of types.
kcore_same() { # kcore_same PATTERN
	try=1
	while :; do
		memstat -a -l -H --name "$1" >/tmp/kcore-before.txt || fail "memstat --name $1"
		memstat -M /proc/kcore -a -l -H --name "$1" >/tmp/kcore.txt 2>/tmp/kcore.err ||
			fail "memstat -M /proc/kcore: $(cat /tmp/kcore.err)"
		memstat -a -l -H --name "$1" >/tmp/kcore-after.txt || fail "memstat --name $1"
		if cmp -s /tmp/kcore-before.txt /tmp/kcore-after.txt; then
			if ! cmp -s /tmp/kcore-before.txt /tmp/kcore.txt; then
				echo "$name: /proc/malloc_stats:"
				cat /tmp/kcore-before.txt
				echo "$name: memstat -M /proc/kcore:"
				cat /tmp/kcore.txt
				fail "memstat -M /proc/kcore differs from /proc/malloc_stats for $1"
			fi
			break
		fi
		if [ $try -ge $kcore_tries ]; then
			diff /tmp/kcore-before.txt /tmp/kcore-after.txt
			fail "the types $1 moved in each of $kcore_tries tries"
		fi
		try=$((try + 1))
	done
	[ "$(($(wc -l </tmp/kcore.txt) - 1))" -gt 0 ] || fail "no type $1 in /proc/kcore"
}
kcore_same 'binder*'
kcore_same 'rnull*'
# The rows of the table (the running kernel's report goes on, after a blank
# line, with the kmalloc caches' coverage, which a core does not have).
n=$(memstat -a -H | sed '/^$/,$d' | wc -l)
k=$(memstat -M /proc/kcore -a -H | sed '/^$/,$d' | wc -l)
[ "$n" = "$k" ] || fail "memstat -M /proc/kcore lists $((k - 1)) types, /proc/malloc_stats $((n - 1))"
echo "$name: memstat -M /proc/kcore: the same $((n - 1)) types as /proc/malloc_stats, the same Binder and rnull rows"
memstat -M /proc/kcore -m -l -H --name 'binder*' || fail "memstat -M /proc/kcore -m -l"
memstat -M /proc/kcore -m -a -l -H --name 'rnull*' | grep -q ' rnull_mod ' || fail "no rnull_mod type in /proc/kcore"

if grep -qw 'mt.vmcore=1' /proc/cmdline; then
	stream /tmp/vmcore-before
	echo "MT-VMCORE: dump 1"
	# The host stops the guest here, within a second, and lets it go on when
	# QEMU has written the vmcore.
	sleep 10
	stream /tmp/vmcore-after
	base64 -w 76 /tmp/vmcore-before | sed "s/^/MT-VMCORE: b64 1 /"
	echo "MT-VMCORE: sha256 1 $(sha256sum </tmp/vmcore-before | cut -d' ' -f1)"
	base64 -w 76 /tmp/vmcore-after | sed "s/^/MT-VMCORE: after 1 /"
	echo "MT-VMCORE: sha256a 1 $(sha256sum </tmp/vmcore-after | cut -d' ' -f1)"
else
	echo "$name: no mt.vmcore=1: no vmcore of this guest (make check gives its x86_64 and arm64 test boots one)"
fi
exec 3<&-
rmmod rnull_mod || fail "rmmod rnull_mod"
umount $binderfs || fail "umount $binderfs"
echo "$name: ok"
