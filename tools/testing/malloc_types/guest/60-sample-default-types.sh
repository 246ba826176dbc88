#!/bin/sh
# The malloc types sample: its types and counters after load, the exact leak
# warning at unload with leak=3; and the default type "rust kmalloc"
# accounting the plain KVec allocations of the stock rust_minimal sample.
name=60-sample-default-types
fail() { echo "$name: FAIL: $*"; exit 1; }
types=/proc/malloc_types

insmod /lib/modules/rust_malloc_types.ko leak=3 || fail "insmod rust_malloc_types leak=3"
row=$(grep '^sample list node ' $types)
[ "$row" = "sample list node    10     1K       10    0     0       - rust_malloc_types  16" ] || fail "sample list node row: '$row'"
row=$(grep '^  sample leak ' $types)
[ "$row" = "  sample leak     3     1K        3    0     0       - rust_malloc_types  256" ] || fail "sample leak row: '$row'"
# sample buf: zmalloc 200 (freed), malloc 1024 grown to 4096, an array of
# 512 bytes and a Vec<u32> of 3 elements (capacity 1, 2, then 4): 7
# allocations, 4 frees, 4096 + 512 + 16 bytes in use; and one overflowing
# array, a failure.
row=$(grep '^   sample buf ' $types)
[ "$row" = "   sample buf     3     5K        7    0     1       - rust_malloc_types  8,16,256,512,1024,4096" ] || fail "sample buf row: '$row'"
msg='rust_malloc_types: a block of 200 bytes has 256 usable'
dmesg | grep -qF "$msg" || fail "no '$msg' in the kernel log (usable_size())"
# sample pages: one zeroed TypedPage, kept until unload (the arm64 test
# kernel has 16 KiB pages).
page=4K
[ "$(uname -m)" = aarch64 ] && page=16K
row=$(sed -nE 's/^ *sample pages +([0-9]+) +([0-9]+K) +([0-9]+) .*$/\1 \2 \3/p' $types)
[ "$row" = "1 $page 1" ] || fail "sample pages: '$row', want '1 $page 1'"
# The whole file, in the console log (the documentation's example).
sed "s/^/$name: types: /" $types
rmmod rust_malloc_types || fail "rmmod rust_malloc_types"
msg='Warning: memory type sample leak leaked memory on destroy (3 allocations, 768 bytes leaked).'
[ "$(dmesg | grep -cF "$msg")" = 1 ] || fail "no leak warning '$msg'"
grep -q '^ *sample ' $types && fail "sample types still listed after rmmod"

# rust_minimal pushes 3 i32 into a plain KVec (capacity 1, 2, then 4) and
# drops it at unload: charged to "rust kmalloc", reallocs as malloc of the new
# size, then free of the old one (in place for 4 -> 8 bytes, both in class 8).
inst=/sys/kernel/tracing/instances/mt60
mkdir $inst || fail "mkdir $inst"
trap 'rmdir $inst 2>/dev/null' EXIT
echo 'probe == "rust_kmalloc"' >$inst/events/dtmalloc/filter
echo 1 >$inst/events/dtmalloc/enable
insmod /lib/modules/rust_minimal.ko || fail "insmod rust_minimal"
rmmod rust_minimal || fail "rmmod rust_minimal"
echo 0 >$inst/events/dtmalloc/enable
got=$(grep -v '^#' $inst/trace | sed -E 's/^.*: (malloc|free): probe=rust_kmalloc size=([0-9]+) .*$/\1 \2/' | tr '\n' ' ')
[ "$got" = "malloc 8 malloc 8 free 8 malloc 16 free 8 free 16 " ] ||
	fail "rust kmalloc events of rust_minimal: '$got'"
echo "$name: ok"
