#!/bin/sh
# The dtmalloc:malloc and dtmalloc:free tracepoints, read through a tracefs
# instance of our own: a known sequence from the trace test module (count,
# order, names, probe names, sizes, zindx), the underscored probe name of a
# type named with a tab and a space, a filter on the probe name, the kernel
# stack of each allocation of one type (a stacktrace trigger), nothing
# recorded while the events are disabled; then the dtmalloc tool's event
# view, type view, top view and stacks on the same sequence.
name=50-dtmalloc-trace
fail() { echo "$name: FAIL: $*"; exit 1; }
ko=/lib/modules/malloc_type_trace_test.ko
tracefs=/sys/kernel/tracing
inst=$tracefs/instances/mt50

[ -d $tracefs/events/dtmalloc/malloc ] || fail "no dtmalloc:malloc event in $tracefs"
[ -d $tracefs/events/dtmalloc/free ] || fail "no dtmalloc:free event"
grep -qF "print fmt: \"probe=%s size=%lu zindx=%d name='%s'\", __get_str(probe), REC->size, REC->zindx, __get_str(name)" \
	$tracefs/events/dtmalloc/malloc/format ||
	fail "unexpected format: $(grep 'print fmt' $tracefs/events/dtmalloc/malloc/format)"

mkdir $inst || fail "mkdir $inst"
trap 'echo 0 >$inst/tracing_on; rmdir $inst 2>/dev/null' EXIT
ours='probe == "trace_test" || probe == "tab_and_space"'

# zindx SIZE, from the helpers the guest tests share.
. /tests/lib.sh

# The events of one load and unload of the test module, without the
# per-line prefix (task, CPU, flags, timestamp).
run_sequence() {
	echo >$inst/trace
	insmod $ko || fail "insmod $ko"
	rmmod malloc_type_trace_test || fail "rmmod"
	grep -v '^#' $inst/trace | sed -E 's/^.*: (malloc|free): /\1: /'
}

echo "$ours" >$inst/events/dtmalloc/filter || fail "setting the filter '$ours'"
echo 1 >$inst/events/dtmalloc/enable
got=$(run_sequence)
expected=$(printf '%s\n' \
	"malloc: probe=trace_test size=128 zindx=$(zindx 128) name='trace test'" \
	"malloc: probe=trace_test size=8192 zindx=$(zindx 8192) name='trace test'" \
	"malloc: probe=trace_test size=32768 zindx=$(zindx 32768) name='trace test'" \
	"free: probe=trace_test size=128 zindx=0 name='trace test'" \
	"malloc: probe=tab_and_space size=8 zindx=0 name='tab\\011and space'" \
	"free: probe=tab_and_space size=8 zindx=0 name='tab\\011and space'" \
	"free: probe=trace_test size=8192 zindx=0 name='trace test'" \
	"free: probe=trace_test size=32768 zindx=0 name='trace test'")
[ "$got" = "$expected" ] || { printf 'got:\n%s\nexpected:\n%s\n' "$got" "$expected"; fail "wrong events"; }

# A filter on the probe name.
echo 'probe == "tab_and_space"' >$inst/events/dtmalloc/filter
got=$(run_sequence | sed 's/ .*//' | tr '\n' ' ')
[ "$got" = "malloc: free: " ] || fail "filtered on tab_and_space: '$got'"

# Who allocates a type: a stacktrace trigger filtered on its probe name
# records the kernel stack after each of its malloc events. The module's
# three allocations are made by its init (Module::init of the crate
# malloc_type_trace_test), which do_init_module() calls. The trace is read
# while the module is loaded: afterwards its addresses no longer resolve.
echo 'probe == "trace_test"' >$inst/events/dtmalloc/filter
trigger='stacktrace if probe == "trace_test"'
echo "$trigger" >$inst/events/dtmalloc/malloc/trigger || fail "setting the trigger '$trigger'"
echo >$inst/trace
insmod $ko || fail "insmod $ko"
grep -v '^#' $inst/trace >/tmp/mt50.stacks
rmmod malloc_type_trace_test || fail "rmmod"
echo '!stacktrace' >$inst/events/dtmalloc/malloc/trigger || fail "removing the stacktrace trigger"
got=$(awk '/<stack trace>/ { n++; next }
	n && / => .*22malloc_type_trace_test.*Module4init/ { m[n] = 1 }
	n && / => do_init_module/ { d[n] = 1 }
	END { for (i = 1; i <= n; i++) k += m[i] && d[i]; print n + 0, k + 0 }' /tmp/mt50.stacks)
[ "$got" = "3 3" ] || {
	cat /tmp/mt50.stacks
	fail "stacktrace trigger: $got (stacks, stacks through the module's init and do_init_module), expected 3 3"
}
# The first stack, in the console log (the documentation's example).
sed -n '1,/=> entry_SYSCALL/p' /tmp/mt50.stacks | sed "s/^/$name: stack: /"

# Disabled: nothing is recorded.
echo 0 >$inst/events/dtmalloc/enable
got=$(run_sequence)
[ -z "$got" ] || fail "events recorded while disabled: $got"

# The dtmalloc tool: every event of the sequence (--min 0), one type only,
# the default threshold (64 KiB: nothing of this sequence), and top.
dt() { # dt OUT ARGS...: run dtmalloc for 6 seconds around one sequence
	out=$1
	shift
	dtmalloc --duration 6 "$@" >$out 2>$out.err &
	pid=$!
	sleep 2
	insmod $ko && rmmod malloc_type_trace_test
	wait $pid
	rc=$?
	[ $rc = 0 ] || fail "dtmalloc $* exited with $rc: $(cat $out.err)"
	ls $tracefs/instances | grep -q '^dtmalloc\.' && fail "dtmalloc $* left its instance behind"
	return 0
}
dt /tmp/dt.all --min 0 -Z --type trace_test
n=$(grep -c 'type trace_test ' /tmp/dt.all)
[ "$n" = 6 ] || { cat /tmp/dt.all; fail "dtmalloc --type trace_test: $n events, expected 6"; }
grep -q 'malloc(9) type trace_test 32768 bytes$' /tmp/dt.all || { cat /tmp/dt.all; fail "no 32768-byte malloc line"; }
grep -q 'tab_and_space' /tmp/dt.all && fail "dtmalloc --type trace_test showed another type"
dt /tmp/dt.tab --min 0 -Z --type tab_and_space
[ "$(grep -c 'type tab_and_space 8 bytes$' /tmp/dt.tab)" = 2 ] || { cat /tmp/dt.tab; fail "dtmalloc --type tab_and_space"; }
dt /tmp/dt.min
grep -q 'type ' /tmp/dt.min && { cat /tmp/dt.min; fail "events under the default 65536-byte threshold were shown"; }
dt /tmp/dt.top top --once
# Net 0 bytes and balance 0 for both types after load and unload.
grep -Eq '^ +0 +0 trace_test$' /tmp/dt.top || { cat /tmp/dt.top; fail "dtmalloc top: trace_test"; }
grep -Eq '^ +0 +0 tab_and_space$' /tmp/dt.top || { cat /tmp/dt.top; fail "dtmalloc top: tab_and_space"; }
# dtmalloc stacks: the stacks of trace_test's three allocations (128 +
# 8192 + 32768 bytes), all through the module's init, in the report, the
# folded stacks, the flame graph and the pprof profile. The module stays
# loaded until dtmalloc has read its stacks (their frames name it). -Z: the
# type registers after the watch starts.
dtmalloc --instance mt50s --duration 8 -Z --type trace_test stacks --folded /tmp/dt.folded \
	--svg /tmp/dt.svg --pprof /tmp/dt.pprof >/tmp/dt.stacks 2>/tmp/dt.stacks.err &
pid=$!
dtmalloc_wait mt50s malloc
insmod $ko || fail "insmod $ko"
sleep 2
rmmod malloc_type_trace_test || fail "rmmod"
wait $pid || fail "dtmalloc stacks exited with $?: $(cat /tmp/dt.stacks.err)"
[ -d $tracefs/instances/mt50s ] && fail "dtmalloc stacks left its instance behind"
grep -q '^[0-9]* stacks, 3 events, 41088 bytes' /tmp/dt.stacks ||
	{ cat /tmp/dt.stacks /tmp/dt.stacks.err; fail "dtmalloc stacks: not 3 events of 41088 bytes"; }
[ "$(grep -c '^trace_test:malloc  ' /tmp/dt.stacks)" -ge 1 ] || { cat /tmp/dt.stacks; fail "dtmalloc stacks: no stack of trace_test"; }
grep -q '22malloc_type_trace_test.*Module4init' /tmp/dt.stacks || { cat /tmp/dt.stacks; fail "dtmalloc stacks: no frame of the module's init"; }
got=$(awk '$0 !~ /^trace_test:malloc;/ || $0 !~ /Module4init/ { bad++ } { sum += $NF }
	END { print bad + 0, sum + 0 }' /tmp/dt.folded)
[ "$got" = "0 41088" ] || { cat /tmp/dt.folded; fail "dtmalloc stacks --folded: $got (lines not through the init, bytes), expected 0 41088"; }
grep -q '<title>trace_test:malloc (41088 bytes, 100.00%)</title>' /tmp/dt.svg || fail "dtmalloc stacks --svg: no trace_test frame of 41088 bytes"
[ "$(od -An -tx1 -N2 /tmp/dt.pprof | tr -d ' ')" = 1f8b ] || fail "dtmalloc stacks --pprof: not a gzipped profile"
sed "s/^/$name: dtmalloc stacks: /" /tmp/dt.stacks | head -n 12

# Without -Z, -t wants a registered type, and a watched type that goes away
# ends the watch with status 1, its output written.
dtmalloc --instance mt50n -t trace_test -d 5 stacks >/tmp/dt.none 2>&1 && fail "dtmalloc -t of no type succeeded"
grep -q "^dtmalloc: --type 'trace_test': no such type (.*dtmalloc_probes has no probe trace_test; -Z waits for one)$" /tmp/dt.none ||
	fail "dtmalloc -t of no type: $(cat /tmp/dt.none)"
[ -d $tracefs/instances/mt50n ] && fail "dtmalloc -t of no type made its instance"
insmod $ko || fail "insmod $ko"
dtmalloc --instance mt50g -t trace_test -d 30 stacks >/tmp/dt.gone 2>/tmp/dt.gone.err &
pid=$!
dtmalloc_wait mt50g malloc
start=$(cut -d. -f1 /proc/uptime)
rmmod malloc_type_trace_test || fail "rmmod"
wait $pid
rc=$?
took=$(($(cut -d. -f1 /proc/uptime) - start))
[ $rc = 1 ] || fail "dtmalloc -t of a type that went away exited with $rc: $(cat /tmp/dt.gone.err)"
[ $took -le 10 ] || fail "dtmalloc -t noticed the type's departure after $took s"
grep -q "^dtmalloc: --type 'trace_test': the type went away (.*); stopped after [0-9]* events (-Z keeps watching)$" /tmp/dt.gone.err ||
	fail "dtmalloc -t of a type that went away: $(cat /tmp/dt.gone.err)"
grep -q '^[0-9]* stacks, [0-9]* events, [0-9]* bytes' /tmp/dt.gone || fail "no report when the type went away: $(cat /tmp/dt.gone)"
[ -d $tracefs/instances/mt50g ] && fail "dtmalloc left its instance behind when the type went away"

# Interrupted (Ctrl-C): the instance is removed all the same.
dtmalloc --min 0 >/tmp/dt.int 2>&1 &
pid=$!
sleep 2
ls $tracefs/instances | grep -q "^dtmalloc\.$pid\$" || fail "dtmalloc made no instance dtmalloc.$pid"
kill -INT $pid
wait $pid
ls $tracefs/instances | grep -q '^dtmalloc\.' && fail "dtmalloc left its instance behind after SIGINT"
DWATCH_MALLOC_MIN=lots dtmalloc 2>/tmp/dt.err && fail "DWATCH_MALLOC_MIN=lots was accepted"
grep -q 'DWATCH_MALLOC_MIN must be a number' /tmp/dt.err || fail "bad DWATCH_MALLOC_MIN message: $(cat /tmp/dt.err)"
echo "$name: ok"
