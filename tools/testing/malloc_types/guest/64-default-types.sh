#!/bin/sh
# Default types: every kmalloc of the kernel is charged to a type of the
# code that made it (one per KBUILD_MODNAME for built-in code, owned by
# vmlinux; one per module: guest test 62 checks the C sample's). After boot:
#  - vmlinux has its default types besides its explicit ones;
#  - memstat -m's reconciliation (vm.malloc_zone_memuse against SLUB's
#    sysfs, the free objects of the sheaves taken off): per size class, the
#    types never hold more than the kmalloc caches have in use (beyond what
#    a concurrent free can skew), and over all classes they hold at least
#    85% of it. The rest is mostly KASAN's quarantine, freed objects that
#    count as in use until the quarantine lets them go (those memstat's own
#    start and reads free after the shrink below): the production kernel
#    of the main job, without KASAN, is held to 99% (guest/run.sh).
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

# SLUB's sheaf_objects (patch 37): the free objects of a cache's sheaves,
# a number no larger than the objects its slabs hold; 0 for a cache
# without sheaves; read-only.
for d in /sys/kernel/slab/kmalloc-*; do
	[ -L "$d" ] && continue
	read -r sheaf <"$d/sheaf_objects" || fail "${d##*/}: no sheaf_objects"
	read -r total _ <"$d/total_objects" || fail "${d##*/}: no total_objects"
	case $sheaf in '' | *[!0-9]*) fail "${d##*/}: sheaf_objects reads '$sheaf'" ;; esac
	[ "$sheaf" -le "$total" ] || fail "${d##*/}: $sheaf objects in the sheaves, $total in the slabs"
	if [ "$(cat "$d/sheaf_capacity")" = 0 ]; then
		[ "$sheaf" = 0 ] || fail "${d##*/}: no sheaves, yet $sheaf objects in them"
	fi
	echo 1 >"$d/sheaf_objects" 2>/dev/null && fail "${d##*/}: sheaf_objects is writable"
done

# The caches are shrunk first: KASAN's quarantine holds freed objects that
# count as in use in SLUB's sysfs until they go back to their slabs, and no
# type holds them.
for d in /sys/kernel/slab/*kmalloc-* /sys/kernel/slab/malloc-zone*; do
	[ -d "$d" ] && [ ! -L "$d" ] && echo 1 >"$d/shrink" 2>/dev/null
done
memstat -m -H >/tmp/default.txt || fail "memstat -m"
sed -n '/^kmalloc caches and malloc types/,$p' /tmp/default.txt >/tmp/coverage.txt
[ -s /tmp/coverage.txt ] || fail "memstat -m ends with no reconciliation"
sed "s/^/$name: /" /tmp/coverage.txt
# Per class: Size Caches Typed Untyped Typed%. A block freed between
# memstat's read of the sysctl and of the caches leaves it typed but not in
# use: a few objects of slack per class.
awk -v name="$name" '
	$1 ~ /^[0-9]+$/ && NF == 5 {
		if ($3 > $2 + 16 * $1) { print name ": class " $1 ": the types hold " $3 " bytes, the caches " $2; bad = 1 }
	}
	$1 == "Total" { caches = $2; typed = $3 }
	END {
		if (bad) exit 1
		if (caches == "") { print name ": no Total line"; exit 1 }
		printf "%d %d\n", caches, typed > "/tmp/coverage.total"
	}' /tmp/coverage.txt || fail "the types hold more of a size class than its caches"
read slab typed </tmp/coverage.total
[ "$slab" -gt 0 ] || fail "no bytes in use in the kmalloc caches"
pct=$((typed * 100 / slab))
echo "$name: the types hold $pct% of the kmalloc caches' bytes"
[ "$pct" -ge 85 ] || fail "the types hold $pct% of the kmalloc caches' bytes in use"
echo "$name: ok"
