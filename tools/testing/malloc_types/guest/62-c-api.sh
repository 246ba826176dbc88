#!/bin/sh
# The C API: the C sample module (MALLOC_DEFINE() and kmalloc_mt() and
# friends) shows its types with exact rows in /proc/malloc_types and in
# memstat, fires exact dtmalloc events, shares a type with another module,
# and warns of its leak at unload, keeping the leaked type; and
# the C subsystems charged to their own types carry real traffic: every pipe
# the shell makes is charged to "pipe" and balanced once it is closed.
name=62-c-api
. /tests/lib.sh
fail() { echo "$name: FAIL: $*"; exit 1; }
types=/proc/malloc_types
inst=/sys/kernel/tracing/instances/mt62

# "InUse MemUse Requests" of the type called $1 in /proc/malloc_types.
row() { type_row "$1"; }
trap 'rmdir $inst 2>/dev/null' EXIT

mkdir $inst || fail "mkdir $inst"
echo 'probe == "c_sample_buf"' >$inst/events/dtmalloc/filter
echo 1 >$inst/events/dtmalloc/enable
insmod /lib/modules/malloc_types_sample.ko leak=3 || fail "insmod malloc_types_sample leak=3"
echo 0 >$inst/events/dtmalloc/enable
# c sample buf: kzalloc_mt(200) and kcalloc_mt(3, 4), freed; kmalloc_mt(1024)
# grown to 4096 by krealloc_mt(); kmalloc_array_mt(64, 8); kvzalloc_mt(2000):
# 6 allocations, 3 frees, 4096 + 512 + 2048 bytes in use.
r=$(grep '^ c sample buf ' $types)
[ "$r" = " c sample buf     3     7K        6    0     0       - malloc_types_sample  16,256,512,1024,2048,4096" ] ||
	fail "c sample buf row: '$r'"
r=$(grep '^c sample leak ' $types)
[ "$r" = "c sample leak     3     1K        3    0     0       - malloc_types_sample  256" ] || fail "c sample leak row: '$r'"
# c sample pages: one page of __get_free_pages_mt(), kept until unload (the
# arm64 test kernel has 16 KiB pages).
page=4K
[ "$(uname -m)" = aarch64 ] && page=16K
r=$(row "c sample pages")
[ "$r" = "1 $page 1" ] || fail "c sample pages: '$r', want '1 $page 1'"
# The module's default type: its plain kzalloc(100), kept until unload.
r=$(grep '^ *malloc_types_sample ' $types)
[ "$r" = "malloc_types_sample     1     1K        1    0     0       - malloc_types_sample  128" ] ||
	fail "the default type malloc_types_sample: '$r'"
msg='malloc_types_sample: a block of 200 bytes has 256 usable'
dmesg | grep -qF "$msg" || fail "no '$msg' in the kernel log (malloc_usable_size())"
r=$(memstat -m -H --name c_sample_buf)
echo "$r" | grep -qE '^ *c sample buf +3 +7K +6 +16,256,512,1024,2048,4096$' ||
	fail "memstat --name c_sample_buf: '$r'"
got=$(grep -v '^#' $inst/trace | sed -E 's/^.*: (malloc|free): probe=c_sample_buf size=([0-9]+) .*$/\1 \2/' | sort | tr '\n' ' ')
[ "$got" = "free 1024 free 16 free 256 malloc 1024 malloc 16 malloc 2048 malloc 256 malloc 4096 malloc 512 " ] ||
	fail "dtmalloc events of the C sample: '$got'"
# Another module allocates with the exported type: one 512-byte block more
# of "c sample buf", still owned by malloc_types_sample, which cannot go
# while the other module uses its type.
insmod /lib/modules/malloc_types_sample_user.ko || fail "insmod malloc_types_sample_user"
r=$(grep '^ c sample buf ' $types)
[ "$r" = " c sample buf     4     7K        7    0     0       - malloc_types_sample  16,256,512,1024,2048,4096" ] ||
	fail "c sample buf row with the user module: '$r'"
rmmod malloc_types_sample 2>/dev/null && fail "malloc_types_sample unloaded while its type is used"
rmmod malloc_types_sample_user || fail "rmmod malloc_types_sample_user"
r=$(grep '^ c sample buf ' $types)
[ "$r" = " c sample buf     3     7K        7    0     0       - malloc_types_sample  16,256,512,1024,2048,4096" ] ||
	fail "c sample buf row after the user module: '$r'"
rmmod malloc_types_sample || fail "rmmod malloc_types_sample"
msg='Warning: memory type c sample leak leaked memory on destroy (3 allocations, 768 bytes leaked).'
[ "$(dmesg | grep -cF "$msg")" = 1 ] || fail "no leak warning '$msg'"
# The leaked blocks carry a record of their type, which a kfree() would
# charge back: the type stays, as it was, after its module (guest test 36).
msg='memory type c sample leak of module malloc_types_sample: kept until the memory charged to it is freed'
[ "$(dmesg | grep -cF "$msg")" = 1 ] || fail "no '$msg' in the kernel log"
r=$(grep '^c sample leak ' $types)
[ "$r" = "c sample leak     3     1K        3    0     0       - malloc_types_sample  256" ] ||
	fail "c sample leak row after rmmod: '$r'"
grep '^ *c sample ' $types | grep -v '^c sample leak ' && fail "C sample types still listed after rmmod"
grep '^ *malloc_types_sample ' $types && fail "the default type of malloc_types_sample still listed after rmmod"

# fs/pipe.c: a pipe is its pipe_inode_info and its ring of pipe_buffers, two
# allocations of "pipe". Each row() holds one pipe of its own (the command
# substitution), so the balance before and after is the same.
set -- $(row pipe)
[ $# = 3 ] || fail "no pipe row"
in0=$1 req0=$3
i=0
while [ $i -lt 50 ]; do
	echo x | cat >/dev/null
	i=$((i + 1))
done
set -- $(row pipe)
[ "$1" = "$in0" ] || fail "pipe in use after 50 pipelines: $1, before: $in0"
[ $(($3 - req0)) -ge 100 ] || fail "pipe requests grew by $(($3 - req0)), not 100 or more"
echo "$name: ok"
