#!/bin/sh
# Per-type dtmalloc probes (mm/malloc_type_probes.c), as dtmalloc(4) has
# them: the probe list as "dtrace -l -P dtmalloc" prints it; a selection of
# one type's probes gives exact events of that type and none of any other
# (pipes, the default types), also for a type that appears (module load)
# and goes (unload) after the selection; a selection of one probe; an empty
# selection fires for every type again; bad specs are refused; dtmalloc -l
# and dtmalloc -t; the documentation's commands, run verbatim.
name=52-dtmalloc-probes
fail() { echo "$name: FAIL: $*"; exit 1; }
. /tests/lib.sh
t=/sys/kernel/tracing
mod=/lib/modules/malloc_type_trace_test.ko
cleanup() {
	echo >$t/set_dtmalloc_probes
	echo 0 >$t/events/dtmalloc/enable
	echo >$t/trace
}
trap cleanup EXIT

# The events of the global buffer as "EVENT PROBE SIZE", one per line.
events() { grep -v '^#' $t/trace | sed -E 's/^.*: (malloc|free): probe=([^ ]+) size=([0-9]+) .*$/\1 \2 \3/'; }

[ -f $t/dtmalloc_probes ] || fail "no $t/dtmalloc_probes"
[ -f $t/set_dtmalloc_probes ] || fail "no $t/set_dtmalloc_probes"
[ -z "$(cat $t/set_dtmalloc_probes)" ] || fail "a selection at boot: $(cat $t/set_dtmalloc_probes)"

# --- the list ----------------------------------------------------------------
hdr=$(printf '%5s %10s %20s %32s %s' ID PROVIDER MODULE FUNCTION NAME)
[ "$(head -n 1 $t/dtmalloc_probes)" = "$hdr" ] || fail "header: '$(head -n 1 $t/dtmalloc_probes)'"
n=$(cat /proc/sys/kernel/malloc_count)
[ "$(tail -n +2 $t/dtmalloc_probes | wc -l)" = $((2 * n)) ] || fail "not two probes for each of $n types"
# Each type's malloc and free probes have consecutive ids.
set -- $(awk '$3 == "rust_kmalloc" { print $1, $2, $4 }' $t/dtmalloc_probes)
[ "$2 $3 $5 $6" = "dtmalloc malloc dtmalloc free" ] && [ "$4" = $(($1 + 1)) ] ||
	fail "rust kmalloc probes: '$*'"
insmod $mod || fail "insmod"
grep -qE ' tab_and_space malloc$' $t/dtmalloc_probes || fail "no probe of the module's type 'tab<TAB>and space'"
rmmod malloc_type_trace_test || fail "rmmod"
grep -q ' trace_test ' $t/dtmalloc_probes && fail "the module's probes are listed after its unload"
[ "$(dtmalloc -l | head -n 1)" = "$hdr" ] || fail "dtmalloc -l: '$(dtmalloc -l | head -n 1)'"

# --- one type selected before its module loads ---------------------------
echo trace_test >$t/set_dtmalloc_probes || fail "select trace_test"
[ "$(cat $t/set_dtmalloc_probes | tr '\n' ' ')" = "trace_test:malloc trace_test:free " ] ||
	fail "selection: '$(cat $t/set_dtmalloc_probes)'"
echo >$t/trace
echo 1 >$t/events/dtmalloc/enable
insmod $mod || fail "insmod"
echo x | cat >/dev/null
rmmod malloc_type_trace_test || fail "rmmod"
echo 0 >$t/events/dtmalloc/enable
got=$(events | tr '\n' ' ')
[ "$got" = "malloc trace_test 128 malloc trace_test 8192 malloc trace_test 32768 free trace_test 128 free trace_test 8192 free trace_test 32768 " ] ||
	fail "events with trace_test selected: '$got'"
# The unloaded module took its probes' state with it; the spec stays, and
# applies again at the next load.
[ "$(cat $t/set_dtmalloc_probes | wc -l)" = 2 ] || fail "the selection changed at unload"

# --- one probe, replacing the selection -----------------------------------
echo 'tab_and_space:malloc' >$t/set_dtmalloc_probes || fail "select tab_and_space:malloc"
echo >$t/trace
echo 1 >$t/events/dtmalloc/enable
insmod $mod && rmmod malloc_type_trace_test || fail "insmod/rmmod"
echo 0 >$t/events/dtmalloc/enable
[ "$(events | tr '\n' ' ')" = "malloc tab_and_space 8 " ] || fail "events of tab_and_space:malloc: '$(events | tr '\n' ' ')'"

# --- an empty selection: every type again ---------------------------------
echo '!tab_and_space:malloc' >>$t/set_dtmalloc_probes || fail "deselect"
[ -z "$(cat $t/set_dtmalloc_probes)" ] || fail "selection not empty: $(cat $t/set_dtmalloc_probes)"
echo >$t/trace
echo 1 >$t/events/dtmalloc/enable
insmod $mod && rmmod malloc_type_trace_test || fail "insmod/rmmod"
echo 0 >$t/events/dtmalloc/enable
[ "$(events | grep -cE ' (trace_test|tab_and_space) ')" = 8 ] || fail "not the 8 events of the module without a selection"

# --- bad specs --------------------------------------------------------------
# A pattern is at most 124 bytes: the text form of a 31-byte name.
long=$(printf '%0125d' 0)
for bad in 'x:bogus' ':malloc' "$long" 'bad\escape' '!!x' 'a:b:malloc'; do
	printf '%s\n' "$bad" >>$t/set_dtmalloc_probes 2>/dev/null && fail "spec '$bad' accepted"
done
echo "${long%0}" >>$t/set_dtmalloc_probes || fail "a pattern of 124 bytes refused"
echo "!${long%0}" >>$t/set_dtmalloc_probes || fail "the pattern of 124 bytes not removed"
[ -z "$(cat $t/set_dtmalloc_probes)" ] || fail "a bad spec changed the selection"

# --- dtmalloc -t selects, and deselects when it ends -----------------------
# The documentation's example, "dtmalloc -Z -t trace_test --min 0 -c 6 -d 30", in an
# instance of a known name, with the load run once the watch has enabled its
# events.
dtmalloc --instance dt52 -Z -t trace_test --min 0 -c 6 -d 30 >/tmp/dt52.out 2>/tmp/dt52.err &
pid=$!
dtmalloc_wait dt52
[ "$(cat $t/set_dtmalloc_probes | tr '\n' ' ')" = "trace_test:malloc trace_test:free " ] ||
	fail "dtmalloc -t did not select trace_test: '$(cat $t/set_dtmalloc_probes)'"
# A watch of every type beside it selects every type ('*'): the -t watch's
# selection does not hide the other types' events (a pipe's) from it.
dtmalloc --instance dt52all --min 0 >/tmp/dt52all.out 2>/tmp/dt52all.err &
apid=$!
dtmalloc_wait dt52all
[ "$(cat $t/set_dtmalloc_probes | tr '\n' ' ')" = "trace_test:malloc trace_test:free *:malloc *:free " ] ||
	fail "a watch of every type did not select every type: '$(cat $t/set_dtmalloc_probes)'"
insmod $mod && rmmod malloc_type_trace_test || fail "insmod/rmmod"
echo through a pipe | cat >/dev/null
wait $pid || fail "dtmalloc -t: $(cat /tmp/dt52.err)"
[ "$(wc -l </tmp/dt52.out)" = 6 ] || fail "dtmalloc -t: $(cat /tmp/dt52.out)"
kill -INT $apid
wait $apid || fail "dtmalloc of every type: $(cat /tmp/dt52all.err)"
grep -q ': malloc(9) type pipe ' /tmp/dt52all.out ||
	fail "the watch of every type missed the pipe beside dtmalloc -t: $(head -c 400 /tmp/dt52all.out)"
grep -q ': malloc(9) type trace_test ' /tmp/dt52all.out ||
	fail "the watch of every type missed trace_test: $(head -c 400 /tmp/dt52all.out)"
[ -z "$(cat $t/set_dtmalloc_probes)" ] || fail "dtmalloc -t left a selection: $(cat $t/set_dtmalloc_probes)"

# --- the documentation's examples, verbatim ---------------------------------
work=/tmp/t52
rm -rf $work && mkdir -p $work && cp $mod $work/ && cd $work || fail "work directory"
echo >$t/trace
echo trace_test > /sys/kernel/tracing/set_dtmalloc_probes
echo 1 > /sys/kernel/tracing/events/dtmalloc/enable
insmod malloc_type_trace_test.ko; rmmod malloc_type_trace_test
echo 0 > /sys/kernel/tracing/events/dtmalloc/enable
echo > /sys/kernel/tracing/set_dtmalloc_probes
[ "$(events | wc -l)" = 6 ] || fail "documented shell example: $(events | tr '\n' ' ')"
# perf: the selection keeps out the pipe perf starts the command with. (The
# arm64 image has no perf: the host's is an x86_64 binary.)
if command -v perf >/dev/null; then
	echo 'trace_test tab_and_space' > /sys/kernel/tracing/set_dtmalloc_probes
	perf record -e dtmalloc:malloc -e dtmalloc:free -- sh -c 'insmod malloc_type_trace_test.ko; rmmod malloc_type_trace_test' \
		>perf.record 2>&1 || { cat perf.record; fail "perf record"; }
	echo > /sys/kernel/tracing/set_dtmalloc_probes
	grep -q 'perf.data (8 samples)' perf.record || { cat perf.record; fail "perf record with a selection: not 8 samples"; }
else
	echo "$name: no perf in this image ($(uname -m)): its example skipped"
fi
cd / && rm -rf $work
echo "$name: ok"
