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
