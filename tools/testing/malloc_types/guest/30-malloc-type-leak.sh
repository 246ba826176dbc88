#!/bin/sh
# A malloc type of a module that is unloaded with live allocations: the
# unload logs FreeBSD's leak warning and the type disappears. The module's
# init checks that its type is registered, from a module, exactly once; the
# second load proves that the first instance was removed.
ko=/lib/modules/malloc_type_leak_test.ko
msg='Warning: memory type malloc leak test leaked memory on destroy (3 allocations, 8328 bytes leaked).'
fail() { echo "30-malloc-type-leak: FAIL: $*"; exit 1; }

[ -f "$ko" ] || fail "$ko is missing"
for round in 1 2; do
	insmod "$ko" || fail "insmod failed in round $round (see the module's log above)"
	dmesg | grep -q "malloc_type_leak_test: registered" ||
		fail "the module did not report its type as registered"
	rmmod malloc_type_leak_test || fail "rmmod failed in round $round"
	n=$(dmesg | grep -cF "$msg")
	[ "$n" -eq "$round" ] || fail "expected $round leak warning(s), found $n: '$msg'"
done
echo "30-malloc-type-leak: ok"
