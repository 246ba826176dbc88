#!/usr/bin/env bash
# `make bench`: the cost of typed accounting, side by side with plain
# kmalloc and allocation profiling. Builds the bench kernel (production
# fragment + MEM_ALLOC_PROFILING + the benchmark module), boots it under
# -icount shift=0 (guest time counts instructions, so ratios repeat from run
# to run), runs guest/bench.sh, and prints a table of absolute figures and
# of ratios to plain kmalloc; the same goes to $MT_CACHE/bench.json.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

mt_prepare bench

log="$MT_CACHE/logs/bench-console.log"
echo "bench: booting the bench kernel with -icount shift=0 (console log: $log)"
# Profiling is off at boot but may be turned on at run time: without the
# parameter, MEM_ALLOC_PROFILING_ENABLED_BY_DEFAULT=n means "never".
MT_ICOUNT=0 MT_TIMEOUT=${MT_TIMEOUT:-1800} bash "$MT_DIR/run-qemu.sh" bench bench "$log" \
	sysctl.vm.mem_profiling=0 || exit 1
python3 "$MT_DIR/bench-report.py" "$log" --json "$MT_CACHE/bench.json"
