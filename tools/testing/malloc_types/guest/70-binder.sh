#!/bin/sh
# Binder IPC through the Rust Binder driver. binderfs is mounted with its
# binder_logs (stats=global) and its control node and binder, hwbinder and
# vndbinder devices are checked; then the binderload workload
# (tools/binderload) runs a service manager, an AIDL service and client
# processes that call it with 48-byte, 4 KiB, 16 KiB and 64 KiB payloads, pass
# binder objects both ways, pass pipes and files as fds and take nested calls
# back: every reply checked, every process exiting with status 0, the driver
# releasing every one of them (none left in binder_logs/state). A second run on the same device proves
# that the first service manager's context was released, a run on hwbinder
# that each device has its own; binderfs is unmounted at the end.
# Around the first run, the malloc types Rust Binder charges (binder proc,
# context, range, pages (the page arrays and the buffer pages), txn,
# thread, ref, work) show traffic and return to
# their idle balance: no process, range, page or transaction array, thread,
# reference or todo-list item in use once the driver released the processes,
# one context per device and the driver's array of devices while binderfs is
# mounted, the (empty) array alone after. Rust Binder
# charges everything it allocates to its own types: the run adds no request
# to the default types "rust kmalloc" and "rust kvmalloc".
name=70-binder
fail() { echo "$name: FAIL: $*"; exit 1; }
binderfs=/dev/binderfs
types=/proc/malloc_types

# "InUse Requests" of the malloc type called $1 in /proc/malloc_types.
row() { sed -nE "s/^ *$1 +([0-9]+) +[0-9]+K +([0-9]+) .*$/\1 \2/p" $types; }
# check_type TYPE WHEN MIN-IN-USE MAX-IN-USE MIN-NEW-REQUESTS: the type's
# allocations in use and its requests since the last reading (in $req_TYPE).
check_type() {
	set -- "$1" "$2" "$3" "$4" "$5" $(row "$1")
	[ $# = 7 ] || fail "no row for malloc type '$1' in $types"
	var=req_$(echo "$1" | tr ' ' _)
	eval "old=\${$var:-0}"
	[ "$6" -ge "$3" ] && [ "$6" -le "$4" ] ||
		fail "$1 $2: $6 in use, expected $3 to $4"
	[ $(($7 - old)) -ge "$5" ] || fail "$1 $2: $(($7 - old)) new requests, expected at least $5"
	eval "$var=$7"
}

# Mounts binderfs on $binderfs and checks its nodes.
mount_binderfs() {
	grep -qw binder /proc/filesystems ||
		fail "no binder filesystem in /proc/filesystems (CONFIG_ANDROID_BINDER_IPC_RUST?)"
	mkdir -p $binderfs || fail "mkdir $binderfs"
	mount -t binder -o stats=global binder $binderfs ||
		fail "mount -t binder -o stats=global binder $binderfs"
	for node in binder-control binder hwbinder vndbinder; do
		[ -c $binderfs/$node ] || fail "no device $binderfs/$node after the mount"
	done
	[ -f $binderfs/binder_logs/state ] || fail "no $binderfs/binder_logs/state (stats=global)"
}

# The processes the driver still knows (binder_logs/state), on one line.
binder_procs() {
	grep '^proc ' $binderfs/binder_logs/state | tr '\n' ' '
}

# Waits up to 10 s for the driver to release the processes of a finished
# workload (its deferred release takes them off the state's list).
wait_released() {
	i=0
	while [ -n "$(binder_procs)" ]; do
		i=$((i + 1))
		[ $i -le 100 ] || fail "the driver still has $(binder_procs)10 s after the workload"
		sleep 0.1
	done
	[ -z "$(ls $binderfs/binder_logs/proc)" ] ||
		fail "binder_logs/proc still lists $(ls $binderfs/binder_logs/proc | tr '\n' ' ')"
}

# Unmounts binderfs: every binder process has exited, so it is not busy.
umount_binderfs() {
	umount $binderfs || fail "umount $binderfs"
	grep -q " $binderfs " /proc/mounts && fail "$binderfs still mounted"
	return 0
}

# run_workload DEVICE ARGS...: one binderload run on $binderfs/DEVICE with
# ARGS (--clients N, --calls N), its output shown; fails the test unless it
# exits 0 with its ok line, leaves no binderload process behind and the
# driver releases all of its processes.
run_workload() {
	dev=$binderfs/$1
	shift
	out=/tmp/binderload.out
	binderload --device "$dev" --timeout 50 "$@" >$out 2>&1
	rc=$?
	sed 's/^/  /' $out
	[ $rc = 0 ] || fail "binderload --device $dev $* exited with $rc"
	grep -q '^binderload: ok: ' $out || fail "binderload --device $dev $*: no ok line"
	pidof binderload >/dev/null && fail "binderload processes left behind: $(pidof binderload)"
	wait_released
}

command -v binderload >/dev/null || fail "no binderload in the initramfs (tools/binderload not built?)"
for t in proc range pages txn thread ref work; do
	check_type "binder $t" "before binderfs" 0 0 0
done
# The array of devices is allocated at the first mount and kept (empty) after
# an unmount: 1 if binderfs was mounted before in this boot.
check_type "binder context" "before binderfs" 0 1 0
mount_binderfs
[ -z "$(binder_procs)" ] || fail "binder processes before the workload: $(binder_procs)"
# binder, hwbinder and vndbinder, and the array of devices.
check_type "binder context" "with binderfs mounted" 4 4 3
default_before="$(row "rust kmalloc") $(row "rust kvmalloc")"
run_workload binder --clients 2 --calls 60
default_after="$(row "rust kmalloc") $(row "rust kvmalloc")"
[ "$default_after" = "$default_before" ] ||
	fail "the workload changed the default types: rust kmalloc and rust kvmalloc (in use, requests) were $default_before, are $default_after"
# A manager, a service and two clients opened the device: 4 processes.
check_type "binder proc" "after the workload" 0 0 4
check_type "binder range" "after the workload" 0 0 4
# Each process's array of pages, and the pages of its buffer space: every
# process receives a transaction or a reply, in at least one page.
check_type "binder pages" "after the workload" 0 0 8
# Each transaction that carries an fd allocates two arrays (the fds to
# translate and their reservations); no other call of the workload does.
fds=$(sed -n 's/.* and \([0-9]*\) fds passed.*/\1/p' /tmp/binderload.out)
[ -n "$fds" ] && [ "$fds" -gt 0 ] || fail "binderload passed no fds"
old_txn=${req_binder_txn:-0}
check_type "binder txn" "after the workload" 0 0 $((2 * fds))
[ $((req_binder_txn - old_txn)) = $((2 * fds)) ] ||
	fail "binder txn: $((req_binder_txn - old_txn)) new requests for $fds fds, expected $((2 * fds))"
# Each of the 4 processes has at least one thread: a Thread and its node in
# the process's threads tree.
check_type "binder thread" "after the workload" 0 0 8
# The service and the clients hold a handle to the service manager, the
# clients one to the service: at least 5 references, each with its nodes in
# the by_handle and by_node trees.
check_type "binder ref" "after the workload" 0 0 15
# Every transaction binderload counts is one Transaction of the driver.
transactions=$(sed -n 's/.*: ok: \([0-9]*\) transactions.*/\1/p' /tmp/binderload.out)
[ -n "$transactions" ] && [ "$transactions" -gt 0 ] || fail "binderload reported no transactions"
check_type "binder work" "after the workload" 0 0 "$transactions"
check_type "binder context" "after the workload" 4 4 0
run_workload binder --clients 1 --calls 12
run_workload hwbinder --clients 1 --calls 6
# An unusable device: a clear error and a non-zero exit.
binderload --device $binderfs/nonexistent >/tmp/binderload.err 2>&1 &&
	fail "binderload on a missing device exited 0"
grep -q "no binder device $binderfs/nonexistent" /tmp/binderload.err ||
	fail "unexpected message for a missing device: $(cat /tmp/binderload.err)"
umount_binderfs
check_type "binder context" "after umount" 1 1 0
for t in proc thread ref work; do check_type "binder $t" "after umount" 0 0 0; done
echo "$name: ok"
