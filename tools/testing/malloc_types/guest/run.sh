#!/bin/sh
# The main job in the production guest: shows what kernel is running and the
# typed allocation accounting it offers, read with the project's tools.
set -u
banner() { printf '\n==== %s ====\n' "$*"; }

banner "malloc types for Linux: production kernel in QEMU"
uname -a
echo "cpus: $(grep -c ^processor /proc/cpuinfo)   memory: $(sed -n 's/^MemTotal: *//p' /proc/meminfo)"
echo "command line: $(cat /proc/cmdline)"

rc=0
if [ -r /proc/malloc_types ]; then
	banner "/proc/malloc_types"
	cat /proc/malloc_types || rc=1
fi
if command -v memstat >/dev/null; then
	if [ -r /proc/malloc_stats ]; then
		banner "memstat -m (malloc types)"
		memstat -m || rc=1
	fi
	banner "memstat -z (slab caches, the largest 15 by memory)"
	memstat -z -s memuse | head -n 16 || rc=1
else
	echo "memstat: not built (tools/memstat missing)"
	rc=1
fi
exit $rc
