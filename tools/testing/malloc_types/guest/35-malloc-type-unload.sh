#!/bin/sh
# The lifetime of a type's statistics at unload: malloc_type_unload_test's
# exit schedules an async function that allocates and frees memory of the
# module's type until it sees the type unregistered, while the going
# notifier unregisters it and frees its per-CPU statistics (the module core
# waits for async functions only after the notifier). Loaded and unloaded
# in a loop under KASAN and lockdep: the kernel must stay silent (judged from
# the console log), the type must come and go with the module, and in at
# least one round the function must have been allocating while the type was
# unregistered under it.
name=35-malloc-type-unload
fail() { echo "$name: FAIL: $*"; exit 1; }
ko=/lib/modules/malloc_type_unload_test.ko
types=/proc/malloc_types
rounds=20

count=$(cat /proc/sys/kernel/malloc_count)
dmesg -c >/dev/null
i=0
while [ $i -lt $rounds ]; do
	insmod $ko || fail "insmod (round $i)"
	grep -q '^ *unload test ' $types || fail "the type is not listed (round $i)"
	rmmod malloc_type_unload_test || fail "rmmod (round $i)"
	i=$((i + 1))
done
grep -q '^ *unload test ' $types && fail "the type is still listed after rmmod"
[ "$(cat /proc/sys/kernel/malloc_count)" = "$count" ] ||
	fail "kernel.malloc_count is $(cat /proc/sys/kernel/malloc_count), expected $count"

# One line per round: "churn: N pairs, R while the type was registered".
dmesg | sed -n 's/.*malloc_type_unload_test: churn: \([0-9]*\) pairs, \([0-9]*\) while.*/\1 \2/p' >/tmp/mt35.churns
n=$(wc -l </tmp/mt35.churns)
[ "$n" = $rounds ] || fail "$n churn reports for $rounds rounds"
raced=$(awk '$2 > 0 && $2 < $1 { k++ } END { print k + 0 }' /tmp/mt35.churns)
[ "$raced" -gt 0 ] || fail "no round allocated across the unregistration: $(tr '\n' ';' </tmp/mt35.churns)"
echo "$name: $raced of $rounds rounds allocated while the type was unregistered under them"
echo "$name: ok"
