#!/bin/sh
# The main job in the production guest: real typed allocations in a running
# kernel, read with the project's tools.
#  - memstat -m before the workloads;
#  - the workloads: the malloc types sample (every form of the API, leak=4),
#    the trace test module and the stock rust_minimal sample (a plain KVec,
#    charged to the default type "rust kmalloc");
#  - a dtmalloc top snapshot and the dtmalloc event view (4 KiB and more)
#    recorded while they run;
#  - memstat -m after, and the kernel's leak warning when the sample is
#    unloaded with allocations outstanding.
set -u
banner() { printf '\n==== %s ====\n' "$*"; }
rc=0
run() { "$@" || { echo "FAILED: $*"; rc=1; }; }
mods=/lib/modules

# Kernel messages go to the log only; the job prints those it is about.
dmesg -n 1
banner "malloc types for Linux: production kernel in QEMU"
uname -a
echo "cpus: $(grep -c ^processor /proc/cpuinfo)   memory: $(sed -n 's/^MemTotal: *//p' /proc/meminfo)"
echo "malloc types: $(cat /proc/sys/kernel/malloc_count)   zones: $(cat /proc/sys/vm/malloc_numzones)" \
	"  size classes: $(tr '\t' ' ' </proc/sys/vm/malloc_zone_sizes)"

banner "memstat -m (before the workloads)"
run memstat -m -H

# Watch while the workloads run: dtmalloc-top and the event view.
dtmalloc top --once --duration 14 >/tmp/top.out 2>/tmp/top.err &
top_pid=$!
dtmalloc --min 4096 --duration 14 >/tmp/events.out 2>/tmp/events.err &
events_pid=$!
sleep 3

banner "workloads"
echo "insmod rust_malloc_types leak=4"
run insmod $mods/rust_malloc_types.ko leak=4
dmesg | sed -n 's/^\[[^]]*\] \(rust_malloc_types: type\)/  \1/p'
echo "insmod and rmmod malloc_type_trace_test (a known sequence)"
run insmod $mods/malloc_type_trace_test.ko
run rmmod malloc_type_trace_test
echo "insmod and rmmod rust_minimal (a plain KVec)"
run insmod $mods/rust_minimal.ko
run rmmod rust_minimal
wait $top_pid || { echo "FAILED: dtmalloc top: $(cat /tmp/top.err)"; rc=1; }
wait $events_pid || { echo "FAILED: dtmalloc: $(cat /tmp/events.err)"; rc=1; }

banner "dtmalloc top (net bytes and balance by type during the workloads)"
cat /tmp/top.out
tail -n 1 /tmp/top.err
banner "dtmalloc --min 4096 (the allocations and frees of 4 KiB or more)"
cat /tmp/events.out
tail -n 1 /tmp/events.err

banner "memstat -m (after the workloads; the sample is still loaded)"
run memstat -m -H

banner "rmmod rust_malloc_types (4 blocks leaked on purpose)"
run rmmod rust_malloc_types
dmesg | grep 'leaked memory on destroy' | sed 's/^\[[^]]*\] //'

banner "memstat -z (slab caches, the largest 10 by memory)"
memstat -z -s memuse | head -n 12
exit $rc
