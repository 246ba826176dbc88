#!/bin/sh
# Blocks of kmalloc_mt() that KFENCE serves keep the record of their type:
# KFENCE, built in but off at boot, is enabled at run time with a sample
# interval of 1 ms; malloc_type_kfence_test allocates blocks of 40 bytes of
# its type "kfence test" until KFENCE has served five, and frees them with
# kfree(), kfree_mt(), krealloc_mt() before a kfree() of the new block,
# kvfree() and kfree_bulk(). Every free must charge the type back its size
# class: it holds nothing afterwards, not a byte (without the record the
# kfree() of a KFENCE object left it charged; charging back the 40 bytes
# KFENCE keeps would leave 24). KFENCE's sample interval is then set back to
# what it was, so that no later test meets a KFENCE object.
name=37-malloc-type-kfence
. /tests/lib.sh
fail() { echo "$name: FAIL: $*"; echo "$before" >$interval 2>/dev/null; exit 1; }
interval=/sys/module/kfence/parameters/sample_interval

if [ ! -e $interval ]; then
	echo "$name: KFENCE is not built into this kernel: skipped"
	exit 0
fi
# "InUse MemUse Requests" of the type "kfence test".
row() { type_row 'kfence test'; }

before=$(cat $interval)
dmesg -c >/dev/null
echo 1 >$interval || fail "cannot enable KFENCE (write 1 to $interval): $(dmesg | tail -n 3)"
[ "$(cat $interval)" = 1 ] || fail "KFENCE not enabled: sample_interval reads $(cat $interval)"
insmod /lib/modules/malloc_type_kfence_test.ko ||
	fail "insmod malloc_type_kfence_test: $(dmesg | grep malloc_type_kfence_test)"
echo "$before" >$interval || fail "cannot set KFENCE's sample interval back to $before"
allocs=$(dmesg | sed -nE 's/.*malloc_type_kfence_test: KFENCE served 5 blocks of ([0-9]+) allocations.*/\1/p')
[ -n "$allocs" ] || fail "the module did not report its KFENCE blocks: $(dmesg | grep malloc_type_kfence_test)"
# Each allocation of the loop, and the new block of krealloc_mt().
want="0 0K $((allocs + 1))"
[ "$(row)" = "$want" ] || fail "kfence test after the frees: '$(row)', want '$want'"
rmmod malloc_type_kfence_test || fail "rmmod malloc_type_kfence_test"
dmesg | grep -q 'memory type kfence test leaked' && fail "leak warning at unload: $(dmesg | grep 'kfence test')"
[ -z "$(row)" ] || fail "kfence test still listed after the unload: '$(row)'"
echo "$name: 5 KFENCE blocks of $allocs allocations charged back by kfree(), kfree_mt(), krealloc_mt(), kvfree() and kfree_bulk()"
echo "$name: ok"
