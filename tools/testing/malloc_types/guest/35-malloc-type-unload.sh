#!/bin/sh
# The lifetime of a type's statistics at unload: malloc_type_unload_test's
# exit allocates a block of the module's type and schedules an async function
# that waits for the going notifier chain to end, then allocates and frees
# memory of the type and frees the block. The module core waits for async
# functions after the going notifier, and unregisters the module's types
# only from free_module(): every pair must see the type registered, the
# block's free must be counted, and the unload must warn of no leak. Loaded
# and unloaded in a loop under KASAN and lockdep: the kernel must stay
# silent (judged from the console log), and the type must come and go with
# the module.
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

# One line per round: "churn: N pairs, R while the type was registered; held
# block freed while registered: yes".
dmesg >/tmp/mt35.dmesg
sed -n 's/.*malloc_type_unload_test: churn: \([0-9]*\) pairs, \([0-9]*\) while the type was registered; held block freed while registered: \([a-z]*\)$/\1 \2 \3/p' \
	/tmp/mt35.dmesg >/tmp/mt35.churns
n=$(wc -l </tmp/mt35.churns)
[ "$n" = $rounds ] || fail "$n churn reports for $rounds rounds: $(grep churn /tmp/mt35.dmesg | head -n 3)"
bad=$(awk '$1 != 1000 || $2 != $1 || $3 != "yes"' /tmp/mt35.churns)
[ -z "$bad" ] || fail "the type was unregistered under the module's async function: $(echo "$bad" | tr '\n' ';')"
grep 'memory type unload test leaked' /tmp/mt35.dmesg &&
	fail "a leak warning for the memory the async function freed"
echo "$name: $rounds rounds, every allocation and free of the async function counted, no leak warning"
echo "$name: ok"
