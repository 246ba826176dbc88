#!/usr/bin/env bash
# `make bench`: the cost of typed accounting, side by side with plain
# kmalloc and allocation profiling, in two kernels: "bench" (production
# fragment + MEM_ALLOC_PROFILING + the benchmark modules, the C helpers of
# rust/helpers/ called out of line) and "bench-inline" (the same with
# CONFIG_RUST_INLINE_HELPERS, built with clang $LLVM_INLINE_VERSION, rustc's
# LLVM). Boots each under -icount shift=0 (guest time counts instructions, so
# ratios repeat from run to run), runs guest/bench.sh, and prints a table of
# absolute figures and of ratios to plain kmalloc of the same kernel, the
# two kernels side by side; the same goes to $MT_CACHE/bench.json. The
# module takes each measurement 3 times, interleaved; the report shows the
# median and the spread, the JSON the median, minimum and maximum. The
# bench-inline kernel boots five times more: with 8 CPUs for the readers,
# with 64 CPUs for the stream's cost per type and CPU, without -icount for
# module loads beside the stream's readers, with
# malloc_types.default_types=0 for KBox with the off switch, which a third
# kernel, bench-nomt (the bench-inline configuration without malloc types),
# gives the baseline of, and for the cost of one type's kernel stacks
# (dtmalloc stacks beside perf record -g). A fourth kernel, bench-debug (the
# bench-inline configuration with failure injection and memguard per type),
# boots once for what these options cost a type neither selected nor
# guarded. Both bench-inline and bench-nomt boot twice more for the main
# job's workloads (mt.bench=macro), with allocation profiling never supported
# and on: their guest instructions and the bytes of the per-object records.
# When the bench-inline kernel cannot be built or run, the table has the
# bench kernel's figures and says why.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

# mt_prepare installs the LLVM of the inline-helper kernels (not make check).
mt_prepare bench
# A subshell: mt_prepare exits on failure, having said why on stderr (the
# last line), which is kept for the report.
inline_err=
errf=$(mktemp)
trap 'rm -f "$errf"' EXIT
if ! (mt_prepare bench-inline) 2>"$errf"; then
	inline_err=$(grep -v '^[[:space:]]*$' "$errf" | tail -n 1)
fi
cat "$errf" >&2
[ -z "$inline_err" ] || echo "bench: the bench-inline kernel is not available: $inline_err" >&2

boot() { # boot FLAVOUR LOG [KERNEL-ARGS...]
	local flavour=$1 log=$2
	shift 2
	local icount=${MT_ICOUNT-0}
	echo "bench: booting the $flavour kernel ${icount:+with -icount shift=$icount }(console log: $log)"
	# Profiling is off at boot but may be turned on at run time: without the
	# parameter, MEM_ALLOC_PROFILING_ENABLED_BY_DEFAULT=n means "never".
	MT_ICOUNT=$icount MT_TIMEOUT=${MT_TIMEOUT:-1800} bash "$MT_DIR/run-qemu.sh" "$flavour" bench "$log" \
		sysctl.vm.mem_profiling=0 "$@"
}
# boot_other FLAVOUR REPORT-OPTION [KERNEL-ARGS...]: builds or reuses another
# kernel, boots it and gives its console log to the report; says why not
# when the kernel cannot be had.
boot_other() {
	local flavour=$1 opt=$2 olog="$MT_CACHE/logs/$1-console.log"
	shift 2
	if (mt_prepare "$flavour") 2>"$errf"; then
		boot "$flavour" "$olog" "$@" && report+=("$opt" "$olog")
	else
		cat "$errf" >&2
		echo "bench: the $flavour kernel is not available: $(grep -v '^[[:space:]]*$' "$errf" | tail -n 1)" >&2
	fi
}
log="$MT_CACHE/logs/bench-console.log"
ilog="$MT_CACHE/logs/bench-inline-console.log"
boot bench "$log" || exit 1
report=(python3 "$MT_DIR/bench-report.py" "$log" --json "$MT_CACHE/bench.json")
if [ -z "$inline_err" ]; then
	if boot bench-inline "$ilog"; then
		report+=(--inline "$ilog")
	else
		report+=(--inline-error "the bench-inline kernel did not boot (log: $ilog)")
	fi
	# The readers again with 8 CPUs: their cost per CPU record.
	rlog="$MT_CACHE/logs/bench-readers-8cpus-console.log"
	MT_SMP=8 boot bench-inline "$rlog" mt.bench=readers && report+=(--readers-cpus "$rlog")
	# The stream's readers at 1000 types with 64 CPUs. Present CPUs: QEMU
	# lists the CPUs of -smp N,maxcpus=M beyond N as disabled in its MADT,
	# and Linux counts those as possible only under a hypervisor it
	# detects (acpi_is_processor_usable()), which TCG does not announce.
	slog="$MT_CACHE/logs/bench-streams-64cpus-console.log"
	MT_SMP=64 boot bench-inline "$slog" mt.bench=streams && report+=(--streams "$slog")
	# Module loads at 1000 types, without readers and while two readers
	# poll the stream, side by side in one boot: without -icount and with
	# one host thread per vCPU (the times are host time), since under
	# -icount QEMU 7.2's round-robin vCPU scheduling can stop running a
	# vCPU that spins with interrupts off while the other one reads.
	llog="$MT_CACHE/logs/bench-loads-console.log"
	MT_ICOUNT= MT_ACCEL=tcg,thread=multi boot bench-inline "$llog" mt.bench=loads &&
		report+=(--loads "$llog")
	# KBox with untyped allocations uncharged (malloc_types.default_types=0).
	dlog="$MT_CACHE/logs/bench-default-off-console.log"
	boot bench-inline "$dlog" malloc_types.default_types=0 mt.bench=default-off &&
		report+=(--default-off "$dlog")
	# The cost of one type's kernel stacks, recorded by the stacktrace option
	# (dtmalloc stacks) and by perf_event_open()'s call chains (perf record -g).
	stlog="$MT_CACHE/logs/bench-stacks-console.log"
	boot bench-inline "$stlog" mt.bench=stacks && report+=(--stacks "$stlog")
	# The debugging options of malloc(9) built in, in the bench-debug kernel:
	# what a type neither made to fail nor guarded pays for them.
	boot_other bench-debug --debug mt.bench=debug
	# KBox with the off switch, in the kernel without malloc types.
	boot_other bench-nomt --nomt mt.bench=nomt
	# The main job's workloads (mt.bench=macro) on bench-inline and on
	# bench-nomt, with allocation profiling never supported (no tag in the
	# slabs' extension vectors) and on: bench.json's macro and memory.
	for kernel in bench-inline bench-nomt; do
		# bench-nomt is up to date when its boot above had it (a quick no-op).
		[ $kernel = bench-inline ] || (mt_prepare bench-nomt) >/dev/null 2>&1 || continue
		for prof in never 1; do
			key=${kernel#bench-}
			[ $prof = 1 ] && key=$key-profiling
			mlog="$MT_CACHE/logs/bench-macro-$key-console.log"
			boot $kernel "$mlog" sysctl.vm.mem_profiling=$prof mt.bench=macro &&
				report+=(--macro-$key "$mlog")
		done
	done
else
	report+=(--inline-error "$inline_err")
fi
"${report[@]}"
