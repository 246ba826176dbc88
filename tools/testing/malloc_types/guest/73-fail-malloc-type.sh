#!/bin/sh
# Failure injection per malloc type (CONFIG_FAIL_MALLOC_TYPE): debugfs's
# fail_malloc_type/ with the kernel's fault attributes and the selection file
# "types".
# - The selection: empty at boot; a bad pattern fails the write and changes
#   nothing; a pattern names a type of a module loaded later.
# - rnull, deterministic: with "rnull_queue" selected and one failure to give
#   (probability 100, times 1), powering a device on fails with ENOMEM, the
#   kernel log names the type, "rnull queue" counts one failure and neither
#   rnull type keeps anything; the next power-on succeeds (no failure left).
#   With ignore-gfp-wait set, the GFP_KERNEL allocations of a power-on do
#   not fail.
# - Rust Binder under a failure rate (3% of the allocations of the types
#   selected, three selections): binderload's run ends with an error (a
#   failed call, a helper exiting, or its --timeout when a helper that got
#   an error waits for a call that will not come: binderload then kills its
#   processes), the driver releases every process, the selected types count
#   failures, and nothing is left in use; no kernel warning (panic_on_warn);
#   with the selection emptied the workload passes again.
name=73-fail-malloc-type
fail() { echo "$name: FAIL: $*"; exit 1; }
. /tests/lib.sh
types=/proc/malloc_types
fi=/sys/kernel/debug/fail_malloc_type
cfs=/sys/kernel/config
dev=$cfs/rnull/rnullb0
binderfs=/dev/binderfs

# "InUse Requests" of the type called $1 in /proc/malloc_types.
row() { sed -nE "s/^ *$1 +([0-9]+) +[0-9]+K +([0-9]+) .*$/\1 \2/p" $types; }
# The failures of the type called $1 (the Fails column of memstat -m -l -a).
fails() { memstat -m -l -a | sed -nE "s/^ *$1 +[0-9]+ +[0-9]+K +[0-9]+ +([0-9]+) .*$/\1/p"; }
# The allocations in use of the type called $1.
in_use() { type_in_use "$1"; }
cleanup() {
	echo 0 >$fi/probability
	: >$fi/types
	[ -d $dev ] && { echo 0 >$dev/power; rmdir $dev; }
	grep -q " $binderfs " /proc/mounts && umount $binderfs
	grep -q '^rnull_mod ' /proc/modules && rmmod rnull_mod
}
trap cleanup EXIT

[ -d $fi ] || fail "no $fi (CONFIG_FAIL_MALLOC_TYPE and CONFIG_FAULT_INJECTION_DEBUG_FS?)"
for f in probability interval times space verbose task-filter types ignore-gfp-wait; do
	[ -e $fi/$f ] || fail "no $fi/$f"
done
[ -z "$(cat $fi/types)" ] || fail "$fi/types not empty at boot: $(cat $fi/types)"
[ "$(cat $fi/ignore-gfp-wait)" = N ] || fail "ignore-gfp-wait is $(cat $fi/ignore-gfp-wait) at boot, not N"
# A bad word fails the write; the good one before it is not applied.
echo 'rnull_queue rnull\9' >$fi/types 2>/dev/null && fail "a bad pattern was accepted"
[ -z "$(cat $fi/types)" ] || fail "a failed write left '$(cat $fi/types)'"

# rnull: one failure of the selected type, before its module is loaded.
echo rnull_queue >$fi/types || fail "select rnull_queue"
[ "$(cat $fi/types)" = rnull_queue ] || fail "$fi/types is '$(cat $fi/types)'"
echo 100 >$fi/probability
echo 1 >$fi/interval
echo 0 >$fi/space
echo 1 >$fi/verbose
echo 1 >$fi/times
grep -q " $cfs configfs " /proc/mounts || mount -t configfs configfs $cfs || fail "mount configfs"
insmod /lib/modules/rnull_mod.ko || fail "insmod rnull_mod"
[ "$(fails "rnull queue")" = 0 ] || fail "rnull queue failures before any device: $(fails "rnull queue")"
mkdir $dev || fail "mkdir $dev"
echo 16 >$dev/size || fail "set size"
# ignore-gfp-wait: a power-on's GFP_KERNEL allocations do not fail.
echo Y >$fi/ignore-gfp-wait
echo 1 >$dev/power || fail "power on failed with ignore-gfp-wait set"
echo 0 >$dev/power || fail "power off"
[ "$(fails "rnull queue")" = 0 ] || fail "ignore-gfp-wait: rnull queue failed $(fails "rnull queue") times"
[ "$(cat $fi/times)" = 1 ] || fail "ignore-gfp-wait: times is $(cat $fi/times), not 1"
echo N >$fi/ignore-gfp-wait
dmesg -c >/dev/null
err=$( (echo 1 >$dev/power) 2>&1) && fail "power on succeeded with a failure to give"
echo "  power on: $err"
echo "$err" | grep -q "Cannot allocate memory" || fail "power on: '$err', not ENOMEM"
[ -b /dev/rnullb0 ] && fail "/dev/rnullb0 exists after the failed power-on"
[ "$(fails "rnull queue")" = 1 ] || fail "rnull queue counts $(fails "rnull queue") failures, not 1"
[ "$(fails "rnull tagset")" = 0 ] || fail "rnull tagset counts $(fails "rnull tagset") failures, not 0"
for t in "rnull tagset" "rnull queue"; do
	[ "$(in_use "$t")" = 0 ] || fail "$t has $(in_use "$t") in use after the failed power-on"
done
dmesg | grep -q 'FAULT_INJECTION: forcing a failure' || fail "no fault injection report in the kernel log"
dmesg | grep -q 'failing an allocation of [0-9]* bytes of malloc type "rnull queue"' ||
	fail "the kernel log does not name the type: $(dmesg | grep -i fail | tail -n 3)"
dmesg | grep 'malloc type "rnull queue"' | sed 's/^/  /'
[ "$(cat $fi/times)" = 0 ] || fail "times is $(cat $fi/times) after the failure, not 0"
echo 1 >$dev/power || fail "power on after the failure"
[ -b /dev/rnullb0 ] || fail "no /dev/rnullb0"
[ "$(in_use "rnull queue")" = 1 ] || fail "rnull queue: $(in_use "rnull queue") in use with a device"
echo 0 >$dev/power || fail "power off"
rmdir $dev || fail "rmdir $dev"
rmmod rnull_mod || fail "rmmod rnull_mod"
# The pattern stays, for the next load.
[ "$(cat $fi/types)" = rnull_queue ] || fail "$fi/types after rmmod: '$(cat $fi/types)'"

# Rust Binder under a failure rate.
echo 0 >$fi/verbose
echo 3 >$fi/probability
echo -1 >$fi/times
mkdir -p $binderfs || fail "mkdir $binderfs"
mount -t binder -o stats=global binder $binderfs || fail "mount binderfs"
failed=0
for sel in binder_work 'binder_txn binder_thread binder_ref' 'binder_*'; do
	echo "$sel" >$fi/types || fail "select $sel"
	before=0
	for t in proc range pages txn thread ref work; do
		before=$((before + $(fails "binder $t")))
	done
	out=/tmp/binderload.out
	binderload --device $binderfs/binder --timeout 20 --clients 2 --calls 60 >$out 2>&1
	rc=$?
	echo "  binderload with $sel failing: exit $rc, $(grep -E 'ok:|error:' $out | head -n 1)"
	pidof binderload >/dev/null && fail "binderload processes left behind: $(pidof binderload)"
	# The driver releases the processes (deferred) and their memory.
	i=0
	while [ -n "$(binder_in_use)" ]; do
		i=$((i + 1))
		[ $i -le 100 ] || fail "10 s after the workload with $sel failing: $(binder_in_use)$(grep '^proc ' $binderfs/binder_logs/state)"
		sleep 0.1
	done
	after=0
	for t in proc range pages txn thread ref work; do
		after=$((after + $(fails "binder $t")))
	done
	echo "  failures counted: $((after - before))"
	failed=$((failed + after - before))
done
[ "$failed" -gt 0 ] || fail "no Binder allocation failed in three runs at 3%"
: >$fi/types
echo 0 >$fi/probability
binderload --device $binderfs/binder --timeout 50 --clients 1 --calls 12 >/tmp/binderload.out 2>&1 ||
	fail "binderload after the failures: $(cat /tmp/binderload.out)"
umount $binderfs || fail "umount $binderfs"
echo "$name: ok"
