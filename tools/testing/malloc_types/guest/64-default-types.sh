#!/bin/sh
# Default types: every kmalloc of the kernel is charged to a type of the
# code that made it (one per KBUILD_MODNAME for built-in code, owned by
# vmlinux; one per module: guest test 62 checks the C sample's). After boot:
#  - vmlinux has its default types besides its explicit ones;
#  - the bytes the types hold cover most of the bytes in use in the kmalloc
#    caches: at least 80% (95% on the x86_64 test kernel, 85% on arm64).
#    What they do not hold is mostly what start_kernel() and the early
#    initcalls before the registry's allocate; the types also hold some
#    memory of other allocators (vmalloc, pages), which the kmalloc caches
#    do not.
name=64-default-types
fail() { echo "$name: FAIL: $*"; exit 1; }

# vmlinux's types: its explicit ones (fewer than a hundred) and a default
# type per KBUILD_MODNAME of code that calls kmalloc.
memstat --prometheus >/tmp/default.prom || fail "memstat --prometheus"
n=$(grep -c '^malloc_type_in_use_bytes{.*module="vmlinux"' /tmp/default.prom)
echo "$name: $n types of vmlinux"
[ "$n" -ge 300 ] || fail "only $n types of vmlinux"

# The ten largest users of kernel memory by type.
memstat -m -l -H -s memuse | head -n 11 | sed "s/^/$name: /"

# Bytes in use in the kmalloc caches (every kind: normal, cg, rcl, dma,
# rnd), after each is shrunk (KASAN's quarantine and the per-CPU caches of
# freed objects count as allocated until then): allocated objects times
# object size, from SLUB's sysfs; and bytes the types hold. The
# kmalloc-no-objext caches hold what the slab allocator keeps for itself,
# the records' vectors of the other caches: shown apart, not charged.
slab=0 own=0
for d in /sys/kernel/slab/kmalloc-* /sys/kernel/slab/dma-kmalloc-*; do
	[ -d "$d" ] && [ ! -L "$d" ] || continue
	echo 1 >"$d/shrink" 2>/dev/null
	set -- $(cat "$d/objects")
	o=$1
	sz=$(cat "$d/object_size")
	[ "$o" -gt 0 ] && echo "$name: ${d##*/}: $o objects of $sz bytes"
	case ${d##*/} in
	kmalloc-no-objext-*) own=$((own + o * sz)) ;;
	*) slab=$((slab + o * sz)) ;;
	esac
done
echo "$name: the slab allocator's vectors (kmalloc-no-objext): $own bytes"
memstat --prometheus >/tmp/default.prom || fail "memstat --prometheus"
typed=$(awk '/^malloc_type_in_use_bytes\{/ { b += $NF } END { printf "%d", b }' /tmp/default.prom)
echo "$name: kmalloc caches: $slab bytes in use; types: $typed bytes"
[ "$slab" -gt 0 ] || fail "no kmalloc cache in SLUB's sysfs"
pct=$((typed * 100 / slab))
echo "$name: the types hold $pct% of the kmalloc caches' bytes"
[ "$pct" -ge 80 ] || fail "the types hold $pct% of the kmalloc caches' bytes in use"
echo "$name: ok"
