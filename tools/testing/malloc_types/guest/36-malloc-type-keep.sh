#!/bin/sh
# A block outlives the module of its type: malloc_type_keep_test allocates
# three blocks of its type "keep test" with kmalloc_mt() (kmalloc-64,
# kmalloc-1k and a large kmalloc of three pages) and frees a fourth with
# kfree(), and one block of plain kmalloc(100), charged to the module's
# default type "malloc_type_keep_test"; malloc_type_keep_test_holder keeps
# the four and frees them with kfree() when told to. The types must stay
# registered, with their counters,
# after its module unloads (with FreeBSD's leak warning, exact, and a line
# saying it is kept), also beside a second instance of the module; every
# kfree() must charge the recorded type back; and the next load or unload of
# a module must unregister it once nothing is charged to it, no earlier.
# KASAN and lockdep are on: the kernel must stay silent (judged from the
# console log).
name=36-malloc-type-keep
. /tests/lib.sh
fail() { echo "$name: FAIL: $*"; exit 1; }
types=/proc/malloc_types
holder=/lib/modules/malloc_type_keep_test_holder.ko
keep=/lib/modules/malloc_type_keep_test.ko
release=/sys/module/malloc_type_keep_test_holder/parameters/release

# "InUse MemUse Requests" of each type called "keep test", one per line;
# of each default type of the module (drows).
rows() { type_row 'keep test' | tr '\n' ';'; }
drows() { type_row malloc_type_keep_test | tr '\n' ';'; }
dflt="1 1K 1"
dfreed="0 0K 1"
# The size class of $1 bytes: the smallest in vm.malloc_zone_sizes that holds it.
class() {
	for s in $(cat /proc/sys/vm/malloc_zone_sizes); do
		[ "$s" -ge "$1" ] && { echo "$s"; return; }
	done
}
page=4096
[ "$(uname -m)" = aarch64 ] && page=16384
# A large kmalloc of three pages takes an order-2 block: four pages.
bytes=$(($(class 64) + $(class 1000) + 4 * page))
one="3 $(((bytes + 1023) / 1024))K 4"
freed="0 0K 4"

count=$(cat /proc/sys/kernel/malloc_count)
dmesg -c >/dev/null
insmod $holder || fail "insmod malloc_type_keep_test_holder"
insmod $keep || fail "insmod malloc_type_keep_test"
[ "$(rows)" = "$one;" ] || fail "keep test after insmod: '$(rows)', want '$one;'"
[ "$(drows)" = "$dflt;" ] || fail "the default type after insmod: '$(drows)', want '$dflt;'"
rmmod malloc_type_keep_test || fail "rmmod malloc_type_keep_test"
[ "$(rows)" = "$one;" ] || fail "keep test after rmmod: '$(rows)', want '$one;'"
[ "$(drows)" = "$dflt;" ] || fail "the default type after rmmod: '$(drows)', want '$dflt;'"
grep -qE '^ *keep test .* malloc_type_keep_test ' $types || fail "the kept type lost its owner: $(grep 'keep test' $types)"
msg="Warning: memory type keep test leaked memory on destroy (3 allocations, $bytes bytes leaked)."
[ "$(dmesg | grep -cF "$msg")" = 1 ] || fail "no '$msg' in the kernel log: $(dmesg | grep 'keep test')"
msg='memory type keep test of module malloc_type_keep_test: kept until the memory charged to it is freed'
[ "$(dmesg | grep -cF "$msg")" = 1 ] || fail "no '$msg' in the kernel log"
msg="Warning: memory type malloc_type_keep_test leaked memory on destroy (1 allocations, $(class 100) bytes leaked)."
[ "$(dmesg | grep -cF "$msg")" = 1 ] || fail "no '$msg' in the kernel log"
msg='memory type malloc_type_keep_test of module malloc_type_keep_test: kept until the memory charged to it is freed'
[ "$(dmesg | grep -cF "$msg")" = 1 ] || fail "no '$msg' in the kernel log"
[ "$(cat /proc/sys/kernel/malloc_count)" = $((count + 2)) ] ||
	fail "kernel.malloc_count is $(cat /proc/sys/kernel/malloc_count) with the kept types, expected $((count + 2))"

# Loaded again: a second type of the same name beside the kept one, kept too.
insmod $keep || fail "insmod malloc_type_keep_test again"
[ "$(rows)" = "$one;$one;" ] || fail "two keep test types: '$(rows)'"
[ "$(drows)" = "$dflt;$dflt;" ] || fail "two default types: '$(drows)'"
rmmod malloc_type_keep_test || fail "rmmod malloc_type_keep_test again"
# Other modules come and go: a type with memory charged stays.
insmod /lib/modules/malloc_type_unload_test.ko || fail "insmod malloc_type_unload_test"
rmmod malloc_type_unload_test || fail "rmmod malloc_type_unload_test"
[ "$(rows)" = "$one;$one;" ] || fail "kept types after another module came and went: '$(rows)'"
[ "$(drows)" = "$dflt;$dflt;" ] || fail "kept default types after another module came and went: '$(drows)'"
[ "$(cat /proc/sys/kernel/malloc_count)" = $((count + 4)) ] ||
	fail "kernel.malloc_count is $(cat /proc/sys/kernel/malloc_count) with four kept types, expected $((count + 4))"

# kfree() of the eight blocks by the holder charges each back to its type.
echo 1 >$release || fail "write $release"
dmesg | grep -qF 'malloc_type_keep_test_holder: freed 8 blocks' || fail "the holder did not free 8 blocks"
[ "$(rows)" = "$freed;$freed;" ] || fail "keep test after the holder's kfree(): '$(rows)', want '$freed;$freed;'"
[ "$(drows)" = "$dfreed;$dfreed;" ] || fail "the default types after the holder's kfree(): '$(drows)'"
# The next unload (any module's) unregisters both.
rmmod malloc_type_keep_test_holder || fail "rmmod malloc_type_keep_test_holder"
[ -z "$(rows)" ] || fail "keep test still listed: '$(rows)'"
[ -z "$(drows)" ] || fail "the default types still listed: '$(drows)'"
[ "$(cat /proc/sys/kernel/malloc_count)" = "$count" ] ||
	fail "kernel.malloc_count is $(cat /proc/sys/kernel/malloc_count), expected $count"
echo "$name: a type kept after its module with $bytes bytes charged, and its default type with $(class 100), twice; charged back by another module's kfree(), then unregistered"
echo "$name: ok"
