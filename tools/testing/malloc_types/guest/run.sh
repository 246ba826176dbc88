#!/bin/sh
# The main job in the production guest: real typed allocations in a running
# kernel, read with the project's tools.
#  - memstat -m before the workloads (the 20 types that hold the most
#    memory: every kmalloc of the kernel is charged to a type);
#  - the workloads: the Rust malloc types sample (every form of the API,
#    leak=4), the C sample (every function of the C API, leak=2), shell
#    pipelines (pipes are charged to the C type "pipe"), the trace test
#    module, the stock rust_minimal sample (a plain KVec,
#    charged to the default type "rust kmalloc"), Binder IPC between
#    processes through Rust Binder (binderload, built on rsbinder) and block
#    I/O on a Rust null_blk (rnull) device, set up through configfs (its
#    open attribute files are charged to the C type "configfs buffer", its
#    directory entries to "configfs dirent");
#  - a dtmalloc top snapshot and the dtmalloc event view (4 KiB and more)
#    recorded while they run, and the kernel stacks of "binder work" under
#    the Binder workload (dtmalloc stacks: the top 3, a flame graph and a
#    pprof profile, which run.sh on the host writes to the cache);
#  - memstat -m after (the 20 largest again), how much of the kmalloc
#    caches' memory the types hold, then memstat -m -l for the workloads'
#    types: their
#    failed allocations, peak bytes in use (tracked from the start through
#    /proc/malloc_types_peak) and owning modules;
#  - the kernel's leak warnings when the samples are unloaded with
#    allocations outstanding.
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

# The 20 types that hold the most memory.
top() { memstat -m -H -s memuse >/tmp/top.out || { echo "FAILED: memstat -m -s memuse"; rc=1; }; head -n 21 /tmp/top.out; }
# How much of the kmalloc caches' memory the types hold: the reconciliation
# that ends memstat -m (per size class, the bytes in use of the kmalloc
# caches and the bytes the types hold of them), the classes in use only.
# Every kmalloc is charged to a type: under 99% of the bytes in use fails.
coverage() {
	memstat -m -H >/tmp/cov.out || { echo "FAILED: memstat -m"; rc=1; return; }
	sed -n '/^kmalloc caches and malloc types/,$p' /tmp/cov.out | grep -Ev '^ +[0-9]+ +0 +0 +0 +-$'
	set -- $(awk '$1 == "Total" { print $2, $3 }' /tmp/cov.out)
	if [ $# -ne 2 ] || [ "$1" -eq 0 ]; then
		echo "FAILED: memstat -m ends with no reconciliation"; rc=1
	elif [ $(($2 * 1000 / $1)) -lt 990 ]; then
		echo "FAILED: the types hold $(($2 * 1000 / $1 / 10)).$(($2 * 1000 / $1 % 10))% of the kmalloc caches' bytes in use, under 99%"; rc=1
	fi
}

banner "memstat -m (before the workloads: the 20 types that hold the most)"
top
coverage

# The peaks of the workloads' types, tracked from now (or from their
# registration, for the modules loaded below).
echo 'binder_* rnull* sample_* c_sample_* pipe configfs_*' >/proc/malloc_types_peak ||
	{ echo "FAILED: /proc/malloc_types_peak"; rc=1; }

# Watch while the workloads run: dtmalloc-top and the event view.
dtmalloc top --once --duration 20 >/tmp/top.out 2>/tmp/top.err &
top_pid=$!
dtmalloc --min 4096 --duration 20 >/tmp/events.out 2>/tmp/events.err &
events_pid=$!
sleep 3

banner "workloads"
echo "insmod rust_malloc_types leak=4"
run insmod $mods/rust_malloc_types.ko leak=4
dmesg | sed -n 's/^\[[^]]*\] \(rust_malloc_types: type\)/  \1/p'
echo "insmod malloc_types_sample leak=2 (the C API: MALLOC_DEFINE, kmalloc_mt and friends)"
run insmod $mods/malloc_types_sample.ko leak=2
echo "pipes: 200 shell pipelines (fs/pipe.c charges every pipe to \"pipe\")"
i=0
while [ $i -lt 200 ]; do
	echo x | cat >/dev/null
	i=$((i + 1))
done
echo "insmod and rmmod malloc_type_trace_test (a known sequence)"
run insmod $mods/malloc_type_trace_test.ko
run rmmod malloc_type_trace_test
echo "insmod and rmmod rust_minimal (a plain KVec)"
run insmod $mods/rust_minimal.ko
run rmmod rust_minimal
echo "Binder IPC: binderload on Rust Binder (a service manager, a service, 2 clients)"
mkdir -p /dev/binderfs
run mount -t binder binder /dev/binderfs
# Who allocates binder work: its kernel stacks during the workload, with
# dtmalloc stacks (only that type is traced with its stacks).
dtmalloc --instance stacks --type 'binder work' stacks --top 3 \
	--svg /tmp/binder-work.svg --pprof /tmp/binder-work.pprof >/tmp/stacks.out 2>/tmp/stacks.err &
stacks_pid=$!
i=0
while [ "$(cat /sys/kernel/tracing/instances/stacks/events/dtmalloc/malloc/enable 2>/dev/null)" != 1 ] &&
	[ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
binderload --device /dev/binderfs/binder --clients 2 --calls 120 >/tmp/binderload.out 2>&1 ||
	{ echo "FAILED: binderload"; rc=1; }
sed 's/^/  /' /tmp/binderload.out
[ "$(pidof binderload)" = "" ] || { echo "FAILED: binderload left processes"; rc=1; }
kill -INT $stacks_pid
wait $stacks_pid || { echo "FAILED: dtmalloc stacks: $(cat /tmp/stacks.err)"; rc=1; }
echo "block I/O: a 64 MiB rnull device, 16 MiB written and read back with dd"
grep -q ' /sys/kernel/config configfs ' /proc/mounts ||
	run mount -t configfs configfs /sys/kernel/config
run insmod $mods/rnull_mod.ko
cfg=/sys/kernel/config/rnull/rnullb0
run mkdir $cfg
echo 64 >$cfg/size && echo 1 >$cfg/power || { echo "FAILED: rnull device"; rc=1; }
run dd if=/dev/urandom of=/dev/rnullb0 bs=64k count=256 2>/dev/null
run dd if=/dev/rnullb0 of=/dev/null bs=64k count=256 2>/dev/null
echo 0 >$cfg/power && rmdir $cfg || { echo "FAILED: rnull device removal"; rc=1; }
wait $top_pid || { echo "FAILED: dtmalloc top: $(cat /tmp/top.err)"; rc=1; }
wait $events_pid || { echo "FAILED: dtmalloc: $(cat /tmp/events.err)"; rc=1; }

banner "dtmalloc top (net bytes and balance by type during the workloads)"
cat /tmp/top.out
tail -n 1 /tmp/top.err
banner "dtmalloc --min 4096 (the allocations and frees of 4 KiB or more)"
cat /tmp/events.out
tail -n 1 /tmp/events.err

banner "dtmalloc --type 'binder work' stacks (its top 3 stacks by bytes under the Binder workload)"
cat /tmp/stacks.out
tail -n 2 /tmp/stacks.err
# The flame graph and the profile, to the host (run.sh writes them to the
# cache): base64 on the console, a line each.
for f in binder-work.svg binder-work.pprof; do
	[ -s /tmp/$f ] || { echo "FAILED: dtmalloc stacks wrote no /tmp/$f"; rc=1; continue; }
	base64 -w 76 /tmp/$f | sed "s/^/MT-FILE: $f /"
done

banner "memstat -m (after the workloads, the 20 largest; the samples and rnull are still loaded, binderfs mounted)"
top
coverage

banner "memstat -m -l (failures, peak KiB in use and owner of the workloads' types)"
# Probe names (white space as `_`): a pattern has no spaces.
for p in 'binder_*' 'rnull_*' 'sample_*' 'c_sample_*' pipe 'configfs_*'; do
	memstat -m -l -H --name "$p" >/tmp/list.out || { echo "FAILED: memstat --name $p"; rc=1; }
	{ [ "$p" = 'binder_*' ] && cat || tail -n +2; } </tmp/list.out
done

banner "rmmod rust_malloc_types and malloc_types_sample (4 and 2 blocks leaked on purpose)"
run rmmod rust_malloc_types
run rmmod malloc_types_sample
dmesg | grep 'leaked memory on destroy\|kept until' | sed 's/^\[[^]]*\] //'

banner "memstat -z (slab caches, the largest 10 by memory)"
memstat -z -s memuse | head -n 12
exit $rc
