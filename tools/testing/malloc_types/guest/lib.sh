# Helpers the guest tests share, sourced as /tests/lib.sh (mkinitramfs.sh
# installs it beside them; it is not a test itself).
# shellcheck shell=sh

# The zindx of a size class: its place in vm.malloc_zone_sizes (the running
# kernel's classes: 32768 is one with 16 KiB pages, not with 4 KiB), else -1.
zindx() {
	i=0
	for s in $(cat /proc/sys/vm/malloc_zone_sizes); do
		[ "$s" = "$1" ] && { echo $i; return; }
		i=$((i + 1))
	done
	echo -1
}

# Waits (up to 10 s) until a dtmalloc run in the background, in the tracefs
# instance $1, has enabled its events (the event $2, free by default, is
# enabled last; dtmalloc stacks enables malloc only): it selects its type
# first, and an allocation made in between would not be seen.
dtmalloc_wait() {
	i=0
	while [ "$(cat /sys/kernel/tracing/instances/$1/events/dtmalloc/${2:-free}/enable 2>/dev/null)" != 1 ] &&
		[ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}

# The allocations in use of the malloc type called $1 (/proc/malloc_types).
type_in_use() { sed -nE "s/^ *$1 +([0-9]+) +[0-9]+K .*$/\1/p" /proc/malloc_types; }

# "InUse MemUse Requests" of each malloc type called $1 (/proc/malloc_types),
# one line per type of that name.
type_row() { sed -nE "s/^ *$1 +([0-9]+) +([0-9]+K) +([0-9]+) .*$/\1 \2 \3/p" /proc/malloc_types; }

# The Binder types that still hold memory, with how much; nothing once the
# driver has released every process.
binder_in_use() {
	for t in proc range pages txn thread ref work; do
		n=$(type_in_use "binder $t")
		[ "$n" = 0 ] || echo "binder $t: $n in use; "
	done
}
