#!/bin/sh
# /proc/malloc_types, /proc/malloc_stats, /proc/malloc_types_peak and the
# malloc sysctls: modes and permissions, exact values after known allocation
# sequences (the leak test module, with a failed allocation and its peak
# tracked; 200 types of the many-types module), owners, the stream read back
# with every read size, agreement of memstat with the text file, and readers
# racing module load/unload.
name=40-malloc-type-proc
fail() { echo "$name: FAIL: $*"; exit 1; }
note() { echo "$name: $*"; }
leak=/lib/modules/malloc_type_leak_test.ko
many=/lib/modules/malloc_type_many_test.ko
types=/proc/malloc_types
stats=/proc/malloc_stats
peak=/proc/malloc_types_peak

for f in $types $stats; do
	[ -f $f ] || fail "$f is missing"
	[ "$(stat -c %a $f)" = 400 ] || fail "$f has mode $(stat -c %a $f), expected 400"
done
[ "$(head -n 1 $types)" = "malloc_types - version: 1.1" ] || fail "bad version line: $(head -n 1 $types)"
[ "$(sed -n 2p $types)" = "#        Type InUse MemUse Requests Zone Fails HighUse Owner         Size(s)" ] ||
	fail "bad legend: $(sed -n 2p $types)"
[ "$(stat -c %a $peak)" = 600 ] || fail "$peak has mode $(stat -c %a $peak), expected 600"
[ -z "$(cat $peak)" ] || fail "$peak is not empty at boot: $(cat $peak)"

# sysctls.
# The size classes are the object sizes of the kernel's normal kmalloc caches
# (kmalloc-8 .. kmalloc-8k with 4 KiB pages, up to kmalloc-32k with 16 KiB
# pages; no cache below the DMA alignment where kmalloc keeps it), as the
# slab allocator shows them in /sys/kernel/slab, each once, ascending.
want=$(for d in /sys/kernel/slab/kmalloc-[0-9]*; do cat "$d/object_size"; done | sort -n -u | tr '\n' ' ')
want=${want% }
[ -n "$want" ] || fail "no kmalloc caches in /sys/kernel/slab"
sizes=$(tr '\t' ' ' </proc/sys/vm/malloc_zone_sizes)
[ "$sizes" = "$want" ] || fail "vm.malloc_zone_sizes: '$sizes', the kmalloc caches: '$want'"
[ "$(cat /proc/sys/vm/malloc_zone_count)" = "$(echo $want | wc -w)" ] ||
	fail "vm.malloc_zone_count: $(cat /proc/sys/vm/malloc_zone_count), $(echo $want | wc -w) classes"
note "size classes: $sizes"
[ "$(cat /proc/sys/vm/malloc_numzones)" = 1 ] || fail "vm.malloc_numzones: $(cat /proc/sys/vm/malloc_numzones)"
rows() { echo $(($(wc -l <$types) - 2)); }
# No row ends in white space (a type that used no size class ends at its zone).
grep -n '[[:space:]]$' $types && fail "$types has rows that end in white space"
count=$(cat /proc/sys/kernel/malloc_count)
[ "$count" = "$(rows)" ] || fail "kernel.malloc_count is $count but $types has $(rows) rows"
{ echo 1 >/proc/sys/kernel/malloc_count; } 2>/dev/null && fail "kernel.malloc_count is writable"

# Root only, as /proc/slabinfo and /proc/allocinfo.
for f in $types $stats $peak; do
	out=$(su -s /bin/sh nobody -c "cat $f" 2>&1) && fail "nobody could read $f"
	echo "$out" | grep -q "Permission denied" || fail "nobody reading $f: '$out', expected EACCES"
done
su -s /bin/sh nobody -c "echo x >$peak" 2>/dev/null && fail "nobody could write $peak"
# Patterns of 1 to 124 bytes (the text form of a 31-byte name) of printable
# ASCII; a bad one is EINVAL and changes nothing, the good words of its
# write included.
{ printf '%0125d\n' 0 >$peak; } 2>/dev/null && fail "$peak took a 125-byte pattern"
{ printf 'good bad\\x\n' >$peak; } 2>/dev/null && fail "$peak took a bad escape"
[ -z "$(cat $peak)" ] || fail "$peak kept a pattern of a failed write: $(cat $peak)"

# A known sequence: the leak test module fails one allocation (too large),
# allocates 64 bytes and frees them, then keeps 8, 100 and 5000 bytes
# (accounted 8, 128 and 8192). Its peak is tracked from its registration
# (the pattern is written before the module loads): 8328 bytes, 9K.
echo 'malloc_leak_*' >$peak || fail "cannot write $peak"
[ "$(cat $peak)" = 'malloc_leak_*' ] || fail "$peak reads '$(cat $peak)'"
insmod $leak || fail "insmod $leak"
row=$(grep '^malloc leak test ' $types)
[ "$row" = "malloc leak test     3     9K        4    0     1      9K malloc_type_leak_test  8,64,128,8192" ] ||
	fail "leak test row: '$row'"
cat $stats >/tmp/leak.stream
row=$(memstat -m -H -f /tmp/leak.stream | grep 'malloc leak test')
[ "$row" = "malloc leak test     3     9K        4  8,64,128,8192" ] ||
	fail "leak test row in the stream: '$row'"
row=$(memstat -m -l -H -f /tmp/leak.stream | grep 'malloc leak test')
[ "$row" = "malloc leak test     3     9K        4      1      9K malloc_type_leak_test  8,64,128,8192" ] ||
	fail "leak test long row in the stream: '$row'"
memstat -m --json -f /tmp/leak.stream | grep -q '{"type":"malloc leak test","in-use":3,"memory-use":9,"requests":4,"size":\[8,64,128,8192\],"failures":1,"high-use":9,"owner":"malloc_type_leak_test"}' ||
	fail "leak test in memstat --json: $(memstat -m --json -f /tmp/leak.stream | tr '}' '\n' | grep 'leak')"
# The Prometheus export of the same type, from the kernel: 3 allocations and
# 8328 bytes in use (8 + 128 + 8192), 4 requests, 4 size classes, one
# failure, a peak of 8328 bytes, a module's.
memstat --prometheus >/tmp/leak.prom || fail "memstat --prometheus"
series='{type="malloc leak test",probe="malloc_leak_test",id="[0-9]*",zone="0",origin="module",module="malloc_type_leak_test"}'
for want in "malloc_type_in_use_allocations$series 3" "malloc_type_in_use_bytes$series 8328" \
	"malloc_type_requests_total$series 4" "malloc_type_size_classes_used$series 4" \
	"malloc_type_failures_total$series 1" "malloc_type_peak_bytes$series 8328"; do
	grep -qx "$want" /tmp/leak.prom || { grep 'leak' /tmp/leak.prom; fail "memstat --prometheus: no '$want'"; }
done
# Ten families of the types, six of the kmalloc coverage (one sample per
# size class, five of them, and the slab allocator's own bytes).
[ "$(grep -c '^# TYPE ' /tmp/leak.prom)" = 16 ] || fail "memstat --prometheus: not 16 families"
nz=$(wc -w </proc/sys/vm/malloc_zone_sizes)
[ "$(grep -c '^malloc_type_kmalloc_typed_bytes{size="[0-9]*"} [0-9]*$' /tmp/leak.prom)" = "$nz" ] ||
	fail "memstat --prometheus: not one malloc_type_kmalloc_typed_bytes per size class"
[ "$(grep -c '^malloc_type_peak_bytes{' /tmp/leak.prom)" = 1 ] || fail "memstat --prometheus: peaks of untracked types"
# Written again, the pattern resets the peak to the bytes in use (the same
# here); taken out, the type is no longer tracked.
echo 'malloc_leak_*' >>$peak || fail "cannot append to $peak"
echo '!malloc_leak_*' >>$peak || fail "cannot remove a pattern from $peak"
[ -z "$(cat $peak)" ] || fail "$peak after the removal: $(cat $peak)"
row=$(grep '^malloc leak test ' $types)
[ "$row" = "malloc leak test     3     9K        4    0     1       - malloc_type_leak_test  8,64,128,8192" ] ||
	fail "leak test row, peak no longer tracked: '$row'"
grep -qx "malloc_types $((count + 1))" /tmp/leak.prom || fail "memstat --prometheus: malloc_types is not $((count + 1))"
rmmod malloc_type_leak_test || fail "rmmod malloc_type_leak_test"
grep -q '^malloc leak test ' $types && fail "the leak test type is still listed after rmmod"
[ "$(cat /proc/sys/kernel/malloc_count)" = "$count" ] || fail "kernel.malloc_count did not come back to $count"

# memstat -m agrees with /proc/malloc_types (same rows without the zone).
# Every kmalloc is charged to a type, the readers' own too, so some rows
# move while they read: /proc/malloc_types is read before and after
# memstat, each straight into a file, and every row that is the same in
# both (its Requests and InUse unchanged: nothing was allocated or freed in
# between) must be memstat's row. Most rows stay still.
norm_proc='s/^ *(.*[^ ]) +([0-9]+) +([0-9]+)K +([0-9]+) +[0-9]+ +([0-9]+) +([0-9]+K|-) +([^ ]+) *([^ ]*)$/\1|\2|\3|\4|\5|\6|\7|\8/'
norm_memstat='s/^ *(.*[^ ]) +([0-9]+) +([0-9]+)K +([0-9]+) +([0-9]+) +([0-9]+K|-) +([^ ]+) *([^ ]*)$/\1|\2|\3|\4|\5|\6|\7|\8/'
cat $types >/tmp/a1.raw
memstat -m -l -a -H >/tmp/b.raw
cat $types >/tmp/a2.raw
tail -n +3 /tmp/a1.raw | sed -E "$norm_proc" | sort >/tmp/a1
tail -n +3 /tmp/a2.raw | sed -E "$norm_proc" | sort >/tmp/a2
tail -n +2 /tmp/b.raw | sed -E "$norm_memstat" | sort >/tmp/b
grep -Fxf /tmp/a2 /tmp/a1 >/tmp/still
all=$(wc -l </tmp/a1)
still=$(wc -l </tmp/still)
[ $((still * 10)) -ge $((all * 9)) ] || fail "only $still of $all rows of $types stayed still across one memstat -m"
if grep -Fxvf /tmp/b /tmp/still >/tmp/differ; then
	echo "$name: rows that stayed still in $types, not so in memstat -m:"
	cat /tmp/differ
	fail "memstat -m and $types disagree"
fi

# Reads of every size from 1 byte to two records, at many offsets, and
# whole passes of the smallest sizes, a record's, a page's and the whole
# file's, each give a complete stream that parses (the reader is the memstat
# library's read_sizes example).
out=$(memstat-read-sizes $stats) || fail "$out"
note "$out"

# 200 types of one module: all listed, counted and charged, all gone at unload.
insmod $many || fail "insmod $many"
n=$(grep -c '^ *many [0-9][0-9][0-9] ' $types)
[ "$n" = 200 ] || fail "$n of the 200 types listed"
[ "$(cat /proc/sys/kernel/malloc_count)" = $((count + 200)) ] || fail "kernel.malloc_count with 200 more types"
row=$(grep '^     many 007 ' $types)
[ "$row" = "     many 007     8     1K        8    0     0       - malloc_type_many_test  32" ] || fail "many 007 row: '$row'"
row=$(grep '^     many 199 ' $types)
[ "$row" = "     many 199   200     7K      200    0     0       - malloc_type_many_test  32" ] || fail "many 199 row: '$row'"
cat $stats >/tmp/many.stream
n=$(memstat -m -a -H -f /tmp/many.stream | grep -c ' many [0-9][0-9][0-9] ')
[ "$n" = 200 ] || fail "$n of the 200 types in the stream"
rmmod malloc_type_many_test || fail "rmmod malloc_type_many_test"
n=$(grep -c '^ *many [0-9][0-9][0-9] ' $types)
[ "$n" = 0 ] || fail "$n types left after rmmod"

# A type that goes while the stream is read keeps its place, flagged as
# gone: the stream has the length its header announces, and memstat leaves
# the type out. The first read takes the set of types (the module's 200
# among them); the module is unloaded before the rest is read.
insmod $many || fail "insmod $many"
{
	dd bs=16 count=1 of=/tmp/gone.head 2>/dev/null
	rmmod malloc_type_many_test || fail "rmmod malloc_type_many_test while reading"
	cat >/tmp/gone.tail
} <$stats
cat /tmp/gone.head /tmp/gone.tail >/tmp/gone.stream
set -- $(od -An -tu4 -N16 /tmp/gone.stream)
[ "$3" = $((count + 200)) ] || fail "the stream header counts $3 types, not $((count + 200))"
[ "$(wc -c </tmp/gone.stream)" = $((16 + $3 * (128 + 64 * $2))) ] ||
	fail "the stream is $(wc -c </tmp/gone.stream) bytes, not the length its header announces"
memstat -m -a -H -f /tmp/gone.stream >/tmp/gone.out 2>&1 ||
	fail "memstat does not read a stream with types gone: $(tail -n 1 /tmp/gone.out)"
n=$(grep -c ' many [0-9][0-9][0-9] ' /tmp/gone.out)
[ "$n" = 0 ] || fail "memstat shows $n of the types gone"
[ "$(($(wc -l </tmp/gone.out) - 1))" = "$count" ] || fail "memstat shows $(($(wc -l </tmp/gone.out) - 1)) types, not $count"
rm -f /tmp/gone.*

# Readers racing module load and unload: every stream parses (KASAN and
# lockdep watch the kernel side).
rm -f /tmp/stop /tmp/bad
(
	i=0
	while [ ! -f /tmp/stop ]; do
		cat $stats >/tmp/race.$i || echo "read failed" >>/tmp/bad
		memstat -m -a -f /tmp/race.$i >/dev/null 2>>/tmp/bad || echo "stream $i does not parse" >>/tmp/bad
		cat $types >/dev/null || echo "text read failed" >>/tmp/bad
		rm -f /tmp/race.$i
		i=$((i + 1))
	done
	echo $i >/tmp/reads
) &
reader=$!
for round in 1 2 3 4 5 6 7 8; do
	insmod $many || fail "insmod $many, round $round"
	rmmod malloc_type_many_test || fail "rmmod, round $round"
done
touch /tmp/stop
wait $reader
[ -s /tmp/bad ] && fail "racing readers: $(head -n 3 /tmp/bad)"
note "$(cat /tmp/reads) racing reads, all well-formed"
echo "$name: ok"
