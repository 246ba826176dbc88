#!/bin/sh
# Rust null_blk (rnull) under block I/O: the module's malloc types "rnull
# tagset" and "rnull queue" hold one allocation each while a device is
# powered, dd writes and reads the device, and both types return to their
# idle balance (nothing in use, one request each) when the device goes;
# the dtmalloc events show exactly those allocations and frees. The device
# is set up through configfs, whose open attribute files are charged to the
# C type "configfs buffer": each write allocates two blocks, and nothing is
# left in use once the files are closed. The device's directory entries come
# from configfs's own kmem_cache and are charged to "configfs dirent" with
# malloc_type_allocated(): in use while the device's directory exists, back
# to where they were when it is removed.
name=72-rnull
. /tests/lib.sh
fail() { echo "$name: FAIL: $*"; exit 1; }
types=/proc/malloc_types
cfs=/sys/kernel/config
dev=$cfs/rnull/rnullb0
inst=/sys/kernel/tracing/instances/mt72

# "InUse MemUse Requests" of the type called $1 in /proc/malloc_types.
row() { type_row "$1"; }
cleanup() {
	[ -d $dev ] && { echo 0 >$dev/power; rmdir $dev; }
	rmdir $inst 2>/dev/null
}
trap cleanup EXIT

grep -q " $cfs configfs " /proc/mounts || mount -t configfs configfs $cfs || fail "mount configfs"
insmod /lib/modules/rnull_mod.ko || fail "insmod rnull_mod"
for t in "rnull tagset" "rnull queue"; do
	[ "$(row "$t")" = "0 0K 0" ] || fail "$t before any device: '$(row "$t")'"
done

mkdir $inst || fail "mkdir $inst"
echo 'probe ~ "rnull_*"' >$inst/events/dtmalloc/filter
echo 1 >$inst/events/dtmalloc/enable

set -- $(row "configfs buffer")
[ $# = 3 ] || fail "no configfs buffer row"
cfs_in0=$1 cfs_req0=$3
set -- $(row "configfs dirent")
[ $# = 3 ] || fail "no configfs dirent row"
dir_in0=$1 dir_req0=$3
mkdir $dev || fail "mkdir $dev"
set -- $(row "configfs dirent")
[ "$1" -gt "$dir_in0" ] || fail "configfs dirent in use did not grow with $dev: $1, before: $dir_in0"
dir_in1=$1
echo 16 >$dev/size || fail "set size"
echo 1 >$dev/power || fail "power on"
[ -b /dev/rnullb0 ] || fail "no /dev/rnullb0"
set -- $(row "rnull tagset")
[ "$1" = 1 ] && [ "$3" = 1 ] || fail "rnull tagset with a device: '$*'"
[ "$(row "rnull queue")" = "1 1K 1" ] || fail "rnull queue with a device: '$(row "rnull queue")'"

dd if=/dev/urandom of=/tmp/rnull.in bs=64k count=16 2>/dev/null
dd if=/tmp/rnull.in of=/dev/rnullb0 bs=64k count=16 2>/dev/null || fail "dd write"
dd if=/dev/rnullb0 of=/tmp/rnull.out bs=64k count=256 2>/dev/null || fail "dd read"
[ "$(wc -c </tmp/rnull.out)" = 16777216 ] || fail "read $(wc -c </tmp/rnull.out) bytes, not 16 MiB"
rm -f /tmp/rnull.in /tmp/rnull.out
# I/O allocates nothing of rnull's own: requests come from the tag set.
[ "$(row "rnull queue")" = "1 1K 1" ] || fail "rnull queue after I/O: '$(row "rnull queue")'"

echo 0 >$dev/power || fail "power off"
rmdir $dev || fail "rmdir $dev"
echo 0 >$inst/events/dtmalloc/enable
# Three writes (size, power on, power off): a configfs_buffer and a page each.
set -- $(row "configfs buffer")
[ "$1" = "$cfs_in0" ] || fail "configfs buffer in use after the device went: $1, before: $cfs_in0"
[ $(($3 - cfs_req0)) -ge 6 ] || fail "configfs buffer requests grew by $(($3 - cfs_req0)), not 6 or more"
set -- $(row "configfs dirent")
[ "$1" = "$dir_in0" ] || fail "configfs dirent in use after $dev went: $1, before: $dir_in0"
[ $(($3 - dir_req0)) -ge $((dir_in1 - dir_in0)) ] ||
	fail "configfs dirent requests grew by $(($3 - dir_req0)), fewer than the $((dir_in1 - dir_in0)) entries of $dev"
for t in "rnull tagset" "rnull queue"; do
	[ "$(row "$t")" = "0 0K 1" ] || fail "$t after the device went: '$(row "$t")' (idle balance is 0 0K 1)"
done
got=$(grep -v '^#' $inst/trace | sed -E 's/^.*: (malloc|free): probe=([a-z_]+) .*$/\1 \2/' | sort | tr '\n' ' ')
[ "$got" = "free rnull_queue free rnull_tagset malloc rnull_queue malloc rnull_tagset " ] ||
	fail "dtmalloc events: '$got'"
rmmod rnull_mod || fail "rmmod rnull_mod"
grep -q '^ *rnull ' $types && fail "rnull types still listed after rmmod"
echo "$name: ok"
