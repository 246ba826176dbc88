#!/bin/sh
# The benchmark job in the bench guest (-icount shift=0): loads the benchmark
# module once per setup, then reads the /proc files and updates a memstat
# list with 10, 100 and 1000 types. Prints BENCH lines for bench.sh. Both
# bench kernels (bench, bench-inline) run it.
set -u
dmesg -n 1
mods=/lib/modules
tracefs=/sys/kernel/tracing
rc=0
fail() { echo "BENCH error $*"; rc=1; }
. /tests/lib.sh # dtmalloc_wait

bench() { # bench SCENARIO [COMMAND...]: load the module (under COMMAND), print its lines
	scen=$1
	shift
	"$@" insmod $mods/malloc_type_bench.ko scenario=$scen 2>/tmp/bench.err
	dmesg | sed -n "s/^.*malloc_type_bench: \(BENCH scenario=$scen .*\)$/\1/p"
	dmesg | grep -q "BENCH scenario=$scen done" || fail "scenario $scen did not finish"
}

# The cost of the kernel stacks of one type's allocations, recorded two
# ways: by the stacktrace option of a tracefs instance, as `dtmalloc stacks`
# records them, and as call chains of perf_event_open(), as `perf record -g`
# does. The benchmark's type is selected (set_dtmalloc_probes) and its
# dtmalloc:malloc event recorded, as dtmalloc stacks does. The figures are
# guest time per allocate+free pair with the reader running on the other
# CPU, which -icount counts too: what the whole system pays per event.
#  0: tracing off;
# 15: the type's dtmalloc:malloc recorded in an instance, no stacks, no
#     reader (the base of the stacks' cost);
# 13: the same with the instance's stacktrace option: the stacks recorded,
#     no reader;
# 11: dtmalloc -Z -t bench stacks running (stacktrace option, trace_pipe
#     read and summed by stack; -Z: the type registers when the module
#     loads, and goes with it);
# 12: perf record -g of dtmalloc:malloc filtered to the type (kernel call
#     chains only), written to a file in the guest's memory;
# 14: another type's stacks watched by dtmalloc stacks (-t pipe): the
#     benchmark's types are not selected and should pay nothing.
bench_stacks() {
	[ -w $tracefs/set_dtmalloc_probes ] || { fail "no set_dtmalloc_probes"; return; }
	command -v perf >/dev/null || { fail "no perf in the initramfs"; return; }
	inst=$tracefs/instances/bench
	bench 0
	mkdir $inst
	echo 'bench' >$tracefs/set_dtmalloc_probes || fail "cannot select the probes of bench"
	echo 1 >$inst/events/dtmalloc/malloc/enable
	bench 15
	echo 1 >$inst/options/stacktrace
	bench 13
	echo 0 >$inst/events/dtmalloc/malloc/enable
	echo 0 >$inst/options/stacktrace
	rmdir $inst
	: >$tracefs/set_dtmalloc_probes
	stacks_read bench 11
	grep -q '^bench:malloc ' /tmp/stacks.out || fail "dtmalloc stacks: no stack of bench"
	sed 's/^/BENCH stacks11 /' /tmp/stacks.err
	# perf follows the command it runs: insmod, in which the module's
	# init measures.
	echo 'bench' >$tracefs/set_dtmalloc_probes || fail "cannot select the probes of bench"
	bench 12 perf record -g --kernel-callchains -e dtmalloc:malloc --filter 'probe == "bench"' \
		-o /tmp/perf.data --
	grep '^\[ perf record' /tmp/bench.err | sed 's/^/BENCH stacks12 /'
	grep -q 'Captured and wrote' /tmp/bench.err || fail "perf record: $(tail -n 1 /tmp/bench.err)"
	rm -f /tmp/perf.data
	: >$tracefs/set_dtmalloc_probes
	stacks_read pipe 14
}
# stacks_read TYPE SCENARIO: scenario SCENARIO measured while dtmalloc stacks
# reads the stacks of TYPE (-Z: the benchmark's type registers when its
# module loads); its report in /tmp/stacks.out, its summary in
# /tmp/stacks.err.
stacks_read() {
	dtmalloc -Z -t "$1" --instance bench-stacks stacks --top 3 >/tmp/stacks.out 2>/tmp/stacks.err &
	dt=$!
	dtmalloc_wait bench-stacks malloc
	[ "$(cat $tracefs/instances/bench-stacks/events/dtmalloc/malloc/enable 2>/dev/null)" = 1 ] ||
		fail "dtmalloc stacks -t $1 did not enable dtmalloc:malloc within 10 s"
	bench "$2"
	kill -INT $dt
	wait $dt || fail "dtmalloc stacks -t $1 exited with $?: $(tail -n 1 /tmp/stacks.err)"
	[ -z "$(cat $tracefs/set_dtmalloc_probes)" ] || fail "dtmalloc stacks left its selection behind"
}

# What a type that is neither made to fail nor guarded pays for failure
# injection and memguard per type, in the bench-debug kernel (the bench-inline
# configuration with CONFIG_FAIL_MALLOC_TYPE and CONFIG_MALLOC_TYPE_MEMGUARD):
#  0: no type selected by either;
# 16: another type made to fail at every allocation (fail_malloc_type);
# 17: another type guarded (memguard), and guarded blocks possible since;
# 18: both.
# The other type is bench1_000, of the module malloc_type_bench_types_1,
# which allocates nothing: the failures and guarded blocks disturb nothing.
bench_debug() {
	fi=/sys/kernel/debug/fail_malloc_type
	mg=/sys/kernel/debug/memguard
	[ -w $fi/types ] || { fail "no $fi/types"; return; }
	[ -w $mg/types ] || { fail "no $mg/types"; return; }
	bench 0
	insmod $mods/malloc_type_bench_types_1.ko || { fail "insmod malloc_type_bench_types_1"; return; }
	echo 100 >$fi/probability
	echo -1 >$fi/times
	echo bench1_000 >$fi/types || fail "cannot select bench1_000 for failures"
	[ "$(cat $fi/types)" = bench1_000 ] || fail "$fi/types is '$(cat $fi/types)'"
	bench 16
	: >$fi/types
	echo bench1_000 >$mg/types || fail "cannot guard bench1_000"
	[ "$(cat $mg/types)" = bench1_000 ] || fail "$mg/types is '$(cat $mg/types)'"
	bench 17
	echo bench1_000 >$fi/types || fail "cannot select bench1_000 for failures"
	bench 18
	: >$fi/types
	: >$mg/types
	echo 0 >$fi/probability
	rmmod malloc_type_bench_types_1 || fail "rmmod malloc_type_bench_types_1"
	# Nothing but the benchmark's own pairs ran: memguard served no block.
	grep -q '^allocs 0$' $mg/stats || fail "memguard served blocks: $(tr '\n' ' ' <$mg/stats)"
}

# The main job's workloads, timed as a whole (guest nanoseconds: under
# -icount shift=0, instructions), with what both bench-inline and bench-nomt
# have: 200 shell pipelines, then three times a load of the Rust null_blk
# driver (rnull), a device set up through configfs, 8 MiB written to it and
# read back, the device removed and the driver unloaded (the samples of
# malloc types are not in bench-nomt, Rust Binder in neither). Then the
# memory of the per-object records: the slab allocator puts a slab's
# extension vector (struct slabobj_ext, one per object: the malloc type's
# record, and allocation profiling's tag while profiling is supported) in the
# slab's unused tail when it fits, else kmallocs it from the
# kmalloc-no-objext-* caches, which hold nothing else; their bytes in use
# beside all the slab memory in use (/proc/slabinfo).
# Guest time in nanoseconds (/proc/timer_list's clock).
now_ns() { awk '/^now at/ { print $3; exit }' /proc/timer_list; }
bench_macro() {
	grep -q ' /sys/kernel/config configfs ' /proc/mounts ||
		mount -t configfs configfs /sys/kernel/config || fail "mount configfs"
	t0=$(now_ns)
	i=0
	while [ $i -lt 200 ]; do
		echo x | cat >/dev/null
		i=$((i + 1))
	done
	cfg=/sys/kernel/config/rnull/rnullb0
	for i in 1 2 3; do
		insmod $mods/rnull_mod.ko || fail "insmod rnull_mod"
		mkdir $cfg && echo 64 >$cfg/size && echo 1 >$cfg/power || fail "rnull device"
		dd if=/dev/zero of=/dev/rnullb0 bs=64k count=128 2>/dev/null || fail "dd to rnullb0"
		dd if=/dev/rnullb0 of=/dev/null bs=64k count=128 2>/dev/null || fail "dd from rnullb0"
		echo 0 >$cfg/power && rmdir $cfg || fail "rnull device removal"
		rmmod rnull_mod || fail "rmmod rnull_mod"
	done
	t1=$(now_ns)
	echo "BENCH macro ns=$((t1 - t0)) profiling=$(cat /proc/sys/vm/mem_profiling 2>/dev/null || echo none)"
	awk '$1 ~ /^kmalloc-no-objext-/ { objext += $2 * $4 }
		NR > 2 { slab += $15 * $6 * 4096 }
		END { printf "BENCH memory objext_bytes=%d slab_bytes=%d\n", objext, slab }' /proc/slabinfo
}
echo "BENCH cpus=$(grep -c ^processor /proc/cpuinfo)"
# mt.bench=readers on the command line: the readers only (a boot with more
# CPUs, for the per-CPU cost of the readers).
# mt.bench=default-off: the allocation figures only, as scenario 6 (a boot
# with malloc_types.default_types=0, for the cost of KBox with the switch off);
# mt.bench=nomt: the same as scenario 7, in the kernel without malloc types.
# mt.bench=debug: the allocation figures of the bench-debug kernel with no
# type, and another type, made to fail or guarded (bench_debug).
# mt.bench=stacks: the cost of recording the kernel stacks of one type's
# allocations (bench_stacks).
# mt.bench=streams: the readers at 1000 types only (a boot with many CPUs,
# for the stream's cost per type and CPU).
# mt.bench=loads: loads and unloads of a module of one type at 1000 types,
# without readers and while two readers poll the stream (a boot without
# -icount: see bench.sh).
readers_only=no
streams=no
loads=no
case " $(cat /proc/cmdline) " in
*" mt.bench=readers "*) readers_only=yes ;;
*" mt.bench=streams "*)
	readers_only=yes
	streams=yes
	;;
*" mt.bench=loads "*)
	readers_only=yes
	loads=yes
	;;
*" mt.bench=default-off "*)
	bench 6
	echo "BENCH end rc=$rc"
	exit $rc
	;;
*" mt.bench=nomt "*)
	bench 7
	echo "BENCH end rc=$rc"
	exit $rc
	;;
*" mt.bench=debug "*)
	bench_debug
	echo "BENCH end rc=$rc"
	exit $rc
	;;
*" mt.bench=stacks "*)
	bench_stacks
	echo "BENCH end rc=$rc"
	exit $rc
	;;
*" mt.bench=macro "*)
	bench_macro
	echo "BENCH end rc=$rc"
	exit $rc
	;;
esac

if [ $readers_only = no ]; then
	[ -w /proc/sys/vm/mem_profiling ] || fail "no vm.mem_profiling sysctl"
	echo 0 >/proc/sys/vm/mem_profiling || fail "cannot write vm.mem_profiling"

	# 0: tracing off, allocation profiling off.
	bench 0
	# 1: the dtmalloc events enabled in an instance, filtered to another type.
	mkdir $tracefs/instances/bench
	echo 'probe == "no_such_type"' >$tracefs/instances/bench/events/dtmalloc/filter
	echo 1 >$tracefs/instances/bench/events/dtmalloc/enable
	bench 1
	# 2: the dtmalloc events recorded.
	echo 0 >$tracefs/instances/bench/events/dtmalloc/filter
	bench 2
	# 4: per-type probes: another type's probes selected, the events
	# enabled and recording; the benchmark's types are not selected.
	echo 'pipe' >$tracefs/set_dtmalloc_probes || fail "cannot select the probes of pipe"
	bench 4
	# 5: the benchmark's type selected, its events recorded.
	echo 'bench' >$tracefs/set_dtmalloc_probes || fail "cannot select the probes of bench"
	bench 5
	echo >$tracefs/set_dtmalloc_probes
	echo 0 >$tracefs/instances/bench/events/dtmalloc/enable
	# 8: the kernel's own kmem:kmalloc and kmem:kfree events recorded, the
	# dtmalloc events off: what ftrace costs a pair of recorded events, the
	# floor under a recorded dtmalloc event.
	echo 1 >$tracefs/instances/bench/events/kmem/kmalloc/enable || fail "cannot enable kmem:kmalloc"
	echo 1 >$tracefs/instances/bench/events/kmem/kfree/enable || fail "cannot enable kmem:kfree"
	bench 8
	echo 0 >$tracefs/instances/bench/events/kmem/enable
	rmdir $tracefs/instances/bench
	# 9: another type's peak tracked (/proc/malloc_types_peak names pipe):
	# the benchmark's types pay the test of their flag, nothing more.
	echo pipe >/proc/malloc_types_peak || fail "cannot track the peak of pipe"
	bench 9
	# 10: the benchmark's type's peak tracked: what tracking costs.
	echo bench >/proc/malloc_types_peak || fail "cannot track the peak of bench"
	bench 10
	: >/proc/malloc_types_peak
	# 3: allocation profiling enabled at run time (vm.mem_profiling=1).
	echo 1 >/proc/sys/vm/mem_profiling || fail "cannot enable vm.mem_profiling"
	[ "$(cat /proc/sys/vm/mem_profiling)" = 1 ] || fail "vm.mem_profiling is $(cat /proc/sys/vm/mem_profiling)"
	bench 3
	echo 0 >/proc/sys/vm/mem_profiling
fi

# Readers: one read of each /proc file and one memstat update with exactly
# 10, 100 and 1000 types registered: the built-in types (kernel.malloc_count)
# plus those of some of the modules malloc_type_bench_types_N (N = 1, 2, 4,
# ..., 512 types each), chosen by the binary digits of the difference.
# Where the built-in types alone are more than a target, they are measured as
# they are (memstat-bench-reads prints the exact count it read).
base=$(cat /proc/sys/kernel/malloc_count) || fail "no kernel.malloc_count"
echo "BENCH builtin_types=$base"
targets="10 100 1000"
{ [ $streams = yes ] || [ $loads = yes ]; } && targets=1000
echo "BENCH possible_cpus=$(cat /sys/devices/system/cpu/possible)"
for target in $targets; do
	need=$((target - base))
	loaded=
	for n in 512 256 128 64 32 16 8 4 2 1; do
		[ "$need" -ge $n ] || continue
		insmod $mods/malloc_type_bench_types_$n.ko || fail "insmod malloc_type_bench_types_$n"
		loaded="$loaded malloc_type_bench_types_$n"
		need=$((need - n))
	done
	total=$(cat /proc/sys/kernel/malloc_count)
	[ "$total" = "$target" ] || [ "$base" -gt "$target" ] ||
		fail "$total types registered, not $target"
	# Loads and unloads of a module of one type, 50 without readers and 50
	# while two readers poll the stream, twice over (host time varies from
	# one moment to the next). The module of one type may be among
	# those loaded above: it is unloaded first (999 types, 1000 while it is
	# loaded again).
	if [ $loads = yes ]; then
		mod=malloc_type_bench_types_1
		rest=
		for m in $loaded; do
			if [ "$m" = $mod ]; then
				rmmod $mod || fail "rmmod $mod"
			else
				rest="$rest $m"
			fi
		done
		loaded=$rest
		memstat-bench-load $mods/$mod.ko 50 0 2 0 2 || fail "memstat-bench-load at $total types"
	else
		memstat-bench-reads || fail "memstat-bench-reads at $total types"
	fi
	for m in $loaded; do
		rmmod "$m" || fail "rmmod $m"
	done
done
[ "$(cat /proc/sys/kernel/malloc_count)" = "$base" ] || fail "types left after the modules' unload"
echo "BENCH end rc=$rc"
exit $rc
