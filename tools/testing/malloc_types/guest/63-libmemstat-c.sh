#!/bin/sh
# libmemstat for C programs against the live kernel, through the static
# builds of its examples (tools/memstat/capi/examples):
#  - libmemstat-skbuffs, the example of libmemstat(3)'s EXAMPLES section,
#    prints the objects in use of skbuff_head_cache that SLUB's sysfs shows;
#  - libmemstat-vmstat_m, vmstat -m in C, prints the C sample's malloc types
#    with the rows /proc/malloc_types and memstat -m -H give, size classes
#    from memstat_malloc_zone_*().
name=63-libmemstat-c
fail() { echo "$name: FAIL: $*"; exit 1; }
command -v libmemstat-skbuffs >/dev/null || fail "libmemstat-skbuffs is not in the image"
command -v libmemstat-vmstat_m >/dev/null || fail "libmemstat-vmstat_m is not in the image"

objects=/sys/kernel/slab/skbuff_head_cache/objects
[ -r $objects ] || fail "no $objects"
# The count can move between two reads (network traffic): take the example's
# figure when sysfs gives the same before and after it.
i=0
while :; do
	before=$(cut -d' ' -f1 $objects)
	out=$(libmemstat-skbuffs) || fail "libmemstat-skbuffs exited $?: $out"
	after=$(cut -d' ' -f1 $objects)
	[ "$before" = "$after" ] && break
	i=$((i + 1))
	[ $i -lt 10 ] || fail "skbuff_head_cache never still over 10 tries"
done
[ "$out" = "skbuffs: $before" ] || fail "libmemstat-skbuffs: '$out', sysfs: $before"

insmod /lib/modules/malloc_types_sample.ko || fail "insmod malloc_types_sample"
trap 'rmmod malloc_types_sample 2>/dev/null' EXIT
table=$(libmemstat-vmstat_m) || fail "libmemstat-vmstat_m exited $?"
[ "$(echo "$table" | head -n 1)" = "         Type InUse MemUse Requests  Size(s)" ] ||
	fail "vmstat_m header: '$(echo "$table" | head -n 1)'"
# The C sample's rows (guest test 62 explains the figures); the size
# classes as this kernel numbers them.
want=" c sample buf     3     7K        6  16,256,512,1024,2048,4096"
got=$(echo "$table" | grep '^ c sample buf ')
[ "$got" = "$want" ] || fail "vmstat_m c sample buf: '$got', want '$want'"
# A type never used is skipped, as FreeBSD's vmstat -m does: the sample's
# "c sample leak" is, a "c sample leak" kept from guest test 62 (its leaked
# blocks still charged to it after its module unloaded) is not.
used=$(grep -cE '^c sample leak +[0-9]+ +[0-9]+K +[1-9]' /proc/malloc_types)
[ "$(echo "$table" | grep -c '^c sample leak ')" = "$used" ] ||
	fail "vmstat_m lists the unused c sample leak ($used used): $(echo "$table" | grep '^c sample leak ')"
r=$(memstat -m -H --name c_sample_buf | grep '^ c sample buf ')
[ "$r" = "$want" ] || fail "memstat -m -H c sample buf: '$r'"
rmmod malloc_types_sample || fail "rmmod malloc_types_sample"
libmemstat-vmstat_m | grep -q '^ c sample ' && fail "vmstat_m lists the sample's types after rmmod"
echo "$name: ok (skbuffs: $before; vmstat_m: $(($(echo "$table" | grep -c .) - 1)) types)"
