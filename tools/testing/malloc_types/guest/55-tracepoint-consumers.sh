#!/bin/sh
# The tracepoint consumers of the documentation's examples
# (Documentation/core-api/malloc_types.rst, "Tracepoints"), run exactly as
# written there, each around one load and unload of the trace test module
# (its known sequence: see 50-dtmalloc-trace.sh): perf record with a filter
# on the probe names of the module's two types (perf's own handshake pipe
# with the command is freed in the command, and charged to "pipe"), perf
# script and perf report by probe name; trace-cmd record with a filter on the probe
# name and trace-cmd report; bpftrace counting allocations by type (as
# dtrace_dtmalloc(4)'s example does) and summing one type's sizes.
# perf, trace-cmd and bpftrace come from the host (initramfs-tracers.sh).
name=55-tracepoint-consumers
fail() { echo "$name: FAIL: $*"; exit 1; }
# zindx SIZE, from the helpers the guest tests share.
. /tests/lib.sh
tracefs=/sys/kernel/tracing
work=/tmp/t55

for tool in perf trace-cmd bpftrace; do
	command -v $tool >/dev/null ||
		fail "$tool is not in the initramfs (setup.sh installs it, initramfs-tracers.sh copies it in)"
done
[ -d $tracefs/events/dtmalloc/malloc ] || fail "no dtmalloc:malloc event in $tracefs"
rm -rf $work
mkdir -p $work || fail "mkdir $work"
trap 'cd /; rm -rf $work' EXIT
cd $work || fail "cd $work"
# The examples load the module from the current directory.
ln -s /lib/modules/malloc_type_trace_test.ko . || fail "no trace test module"

# libtraceevent (perf's and trace-cmd's) parses the event's print fmt; it
# cannot parse a format string with a double quote inside, and then prints
# "[FAILED TO PARSE]" and the raw fields instead of the kernel's text.
parsed() { # parsed FILE WHAT
	if grep -q 'FAILED TO PARSE' "$1"; then
		cat "$1"
		fail "$2 could not parse the dtmalloc events' print fmt" \
			"($(grep 'print fmt' $tracefs/events/dtmalloc/malloc/format));" \
			"libtraceevent does not take a '\"' inside the format string"
	fi
}
# The events of a perf script or trace-cmd report listing as
# "EVENT: probe=P size=S zindx=Z", one a line (the task, CPU, time stamp
# and name field left out).
events() {
	grep -E '(malloc|free): ' "$1" |
		sed -E 's/^.* (dtmalloc:)?(malloc|free): +/\2: /; s/ name=.*//'
}
# expect_events FILE WHAT: the events of FILE are the lines on stdin.
expect_events() {
	got=$(events "$1")
	expected=$(cat)
	[ "$got" = "$expected" ] ||
		{ cat "$1"; printf 'got:\n%s\nexpected:\n%s\n' "$got" "$expected"; fail "$2: wrong events"; }
}

# --- perf ------------------------------------------------------------------
perf record -e dtmalloc:malloc --filter 'probe ~ "t*"' -e dtmalloc:free --filter 'probe ~ "t*"' -- sh -c 'insmod malloc_type_trace_test.ko; rmmod malloc_type_trace_test' \
	>perf.record 2>&1 || { rc=$?; cat perf.record; fail "perf record exited with $rc"; }
grep -q 'perf.data (8 samples)' perf.record || { cat perf.record; fail "perf record: not 8 samples"; }
perf script >perf.script 2>&1 || { rc=$?; cat perf.script; fail "perf script exited with $rc"; }
parsed perf.script "perf script"
expect_events perf.script "perf script" <<EOF
malloc: probe=trace_test size=128 zindx=$(zindx 128)
malloc: probe=trace_test size=8192 zindx=$(zindx 8192)
malloc: probe=trace_test size=32768 zindx=$(zindx 32768)
free: probe=trace_test size=128 zindx=0
malloc: probe=tab_and_space size=8 zindx=0
free: probe=tab_and_space size=8 zindx=0
free: probe=trace_test size=8192 zindx=0
free: probe=trace_test size=32768 zindx=0
EOF
# The tasks: the module's init runs in insmod, its exit in rmmod.
got=$(awk '/dtmalloc:/ { print $1 }' perf.script | tr '\n' ' ')
[ "$got" = "insmod insmod insmod insmod insmod insmod rmmod rmmod " ] || fail "perf script: tasks '$got'"
[ "$(grep -c "name=.trace test.\$" perf.script)" = 6 ] || { cat perf.script; fail "perf script: the name field"; }
# perf report: the number of events of each event by probe name.
perf report --stdio -n -s probe >perf.report 2>&1 || { rc=$?; cat perf.report; fail "perf report exited with $rc"; }
got=$(awk '/^# Samples: .* of event/ { ev = $NF } /^ +[0-9.]+%/ { print ev, $2, $3 }' perf.report | tr '\n' ' ')
expected="'dtmalloc:malloc' 3 trace_test 'dtmalloc:malloc' 1 tab_and_space 'dtmalloc:free' 3 trace_test 'dtmalloc:free' 1 tab_and_space "
[ "$got" = "$expected" ] || { cat perf.report; fail "perf report by probe: '$got'"; }
grep -q 'Cannot load tips.txt' perf.report && fail "perf report: no tips.txt in the initramfs"

# --- trace-cmd -------------------------------------------------------------
trace-cmd record -e dtmalloc -f 'probe == "trace_test"' sh -c 'insmod malloc_type_trace_test.ko; rmmod malloc_type_trace_test' \
	>tc.record 2>&1 || { rc=$?; cat tc.record; fail "trace-cmd record exited with $rc"; }
trace-cmd report >tc.report 2>&1 || { rc=$?; cat tc.report; fail "trace-cmd report exited with $rc"; }
parsed tc.report "trace-cmd report"
expect_events tc.report "trace-cmd report" <<EOF
malloc: probe=trace_test size=128 zindx=$(zindx 128)
malloc: probe=trace_test size=8192 zindx=$(zindx 8192)
malloc: probe=trace_test size=32768 zindx=$(zindx 32768)
free: probe=trace_test size=128 zindx=0
free: probe=trace_test size=8192 zindx=0
free: probe=trace_test size=32768 zindx=0
EOF
# trace-cmd leaves the events as it found them: disabled, without a filter.
[ "$(cat $tracefs/events/dtmalloc/enable)" = 0 ] || fail "trace-cmd left the dtmalloc events enabled"
[ "$(cat $tracefs/events/dtmalloc/malloc/filter)" = none ] ||
	fail "trace-cmd left a filter: $(cat $tracefs/events/dtmalloc/malloc/filter)"

# --- bpftrace --------------------------------------------------------------
# Without BTF, bpftrace compiles the tracepoint's argument struct against
# the kernel's headers: /lib/modules/RELEASE/build, or else those of
# /sys/kernel/kheaders.tar.xz (CONFIG_IKHEADERS), which it unpacks with
# `tar xf` into /tmp/kheaders-RELEASE unless that is there already. The
# guest's shell runs busybox's tar for "tar", which needs -J for xz: unpack
# them here, as bpftrace would.
[ -f /sys/kernel/kheaders.tar.xz ] ||
	fail "bpftrace needs the kernel's headers: no /sys/kernel/kheaders.tar.xz (CONFIG_IKHEADERS=y)"
kheaders=/tmp/kheaders-$(uname -r)
if [ ! -d "$kheaders" ]; then
	mkdir -p "$kheaders.new" || fail "mkdir $kheaders.new"
	tar -xJf /sys/kernel/kheaders.tar.xz -C "$kheaders.new" || fail "unpacking /sys/kernel/kheaders.tar.xz"
	mv "$kheaders.new" "$kheaders" || fail "mv $kheaders.new $kheaders"
fi
trap 'cd /; rm -rf $work "$kheaders"' EXIT
# -c takes a command, split at spaces (no quoting, no shell): the module's
# allocations all happen at load.
bpftrace -e 'tracepoint:dtmalloc:malloc { @[str(args->name)] = count(); }' -c 'insmod malloc_type_trace_test.ko' \
	>bt.count 2>&1 || { rc=$?; cat bt.count; fail "bpftrace (count by type) exited with $rc"; }
rmmod malloc_type_trace_test || fail "rmmod after bpftrace"
grep -qx '@\[trace test\]: 3' bt.count || { cat bt.count; fail "bpftrace: not 3 allocations of type trace test"; }
# The event holds the text form of the name: the tab as \011.
grep -qxF '@[tab\011and space]: 1' bt.count || { cat bt.count; fail "bpftrace: not 1 allocation of type 'tab\\011and space'"; }
bpftrace -e 'tracepoint:dtmalloc:malloc /str(args->probe) == "trace_test"/ { @bytes = sum(args->size); @size = hist(args->size); }' -c 'insmod malloc_type_trace_test.ko' \
	>bt.sum 2>&1 || { rc=$?; cat bt.sum; fail "bpftrace (sum of one type) exited with $rc"; }
rmmod malloc_type_trace_test || fail "rmmod after bpftrace"
# 128 + 8192 + 32768 bytes, one allocation in each of three buckets (and
# none in the buckets between them).
grep -qx '@bytes: 41088' bt.sum || { cat bt.sum; fail "bpftrace: @bytes is not 41088"; }
got=$(grep -E '^\[' bt.sum | awk '$3 != 0 { print $1, $2, $3 }' | tr '\n' ' ')
[ "$got" = "[128, 256) 1 [8K, 16K) 1 [32K, 64K) 1 " ] || { cat bt.sum; fail "bpftrace: @size histogram '$got'"; }
grep -q 'tab_and_space\|tab.and space' bt.sum && { cat bt.sum; fail "bpftrace: the predicate let another type through"; }
echo "$name: ok"
