#!/bin/sh
# The benchmark job in the bench guest (-icount shift=0): loads the benchmark
# module once per setup, reads the /proc files and updates a memstat list
# with few and with 200 more types. Prints BENCH lines for bench.sh.
set -u
dmesg -n 1
mods=/lib/modules
tracefs=/sys/kernel/tracing
rc=0
fail() { echo "BENCH error $*"; rc=1; }

bench() { # bench SCENARIO: load the module, print its lines
	insmod $mods/malloc_type_bench.ko scenario=$1 2>/dev/null
	dmesg | sed -n "s/^.*malloc_type_bench: \(BENCH scenario=$1 .*\)$/\1/p"
	dmesg | grep -q "BENCH scenario=$1 done" || fail "scenario $1 did not finish"
}

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
echo 0 >$tracefs/instances/bench/events/dtmalloc/enable
rmdir $tracefs/instances/bench
# 3: allocation profiling enabled at run time (vm.mem_profiling=1).
echo 1 >/proc/sys/vm/mem_profiling || fail "cannot enable vm.mem_profiling"
[ "$(cat /proc/sys/vm/mem_profiling)" = 1 ] || fail "vm.mem_profiling is $(cat /proc/sys/vm/mem_profiling)"
bench 3
echo 0 >/proc/sys/vm/mem_profiling

# Readers: one read of each /proc file and one memstat update, with the
# types of this kernel, then with the 200 of the many-types module.
memstat-bench-reads || fail "memstat-bench-reads"
insmod $mods/malloc_type_many_test.ko || fail "insmod malloc_type_many_test"
memstat-bench-reads || fail "memstat-bench-reads"
rmmod malloc_type_many_test
echo "BENCH end rc=$rc"
exit $rc
