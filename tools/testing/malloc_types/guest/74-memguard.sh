#!/bin/sh
# memguard per malloc type (CONFIG_MALLOC_TYPE_MEMGUARD): debugfs's memguard/.
# - The files; the selection, empty at boot unless the command line has
#   memguard.desc= (make check's second boot: pipe); a bad pattern fails the
#   write and changes nothing.
# - The bugs, caught: with its type "memguard test" guarded, the test
#   module's one-byte overflow and use after free are reported with the
#   type named (and the load goes on); unguarded, it makes no bug.
#   memguard's reports honour panic_on_warn, which is lifted for them, and
#   judge.py accepts them after the line "MT-GUEST: expect memguard
#   reports", up to this test's result.
# - Rust Binder with its transaction, thread, reference and work types
#   guarded: the workload passes, memguard serves allocations of them
#   (stats: allocs), nothing is reported, and once the driver has released
#   the processes the Binder types and memguard hold nothing.
# - With memguard.desc=pipe: the shell's pipes were guarded from boot on,
#   and a pipeline moves its data.
# The KUnit suite malloc_type_memguard, at boot, checks the same and a
# double free, and that the same bugs in another type are not caught.
name=74-memguard
fail() { echo "$name: FAIL: $*"; exit 1; }
. /tests/lib.sh
mg=/sys/kernel/debug/memguard
binderfs=/dev/binderfs

# The selection, its patterns separated by spaces.
selection() { tr '\n' ' ' <$mg/types | sed 's/ *$//'; }
# The value of line $1 of memguard/stats.
stat() { sed -n "s/^$1 //p" $mg/stats; }
pow=$(cat /proc/sys/kernel/panic_on_warn)
cleanup() {
	echo "$pow" >/proc/sys/kernel/panic_on_warn
	printf '!memguard_test !binder_txn !binder_thread !binder_ref !binder_work\n' >>$mg/types
	grep -q '^malloc_type_memguard_test ' /proc/modules && rmmod malloc_type_memguard_test
	grep -q " $binderfs " /proc/mounts && umount $binderfs
}
trap cleanup EXIT

[ -d $mg ] || fail "no $mg (CONFIG_MALLOC_TYPE_MEMGUARD?)"
for f in types minsize stats; do
	[ -e $mg/$f ] || fail "no $mg/$f"
done
sed 's/^/  stats at start: /' $mg/stats
[ "$(stat slots)" -gt 0 ] || fail "no slots: $(cat $mg/stats)"
[ "$(stat reports)" = 0 ] || [ "$(stat reports)" = 3 ] ||
	fail "$(stat reports) reports before the test (KUnit's make 3)"
reports=$(stat reports)
desc=$(sed -n 's/.*memguard\.desc=\([^ ]*\).*/\1/p' /proc/cmdline | tr , ' ')
[ "$(selection)" = "$desc" ] || fail "$mg/types is '$(selection)', the command line says '$desc'"
echo 'binder_txn binder\9' >>$mg/types 2>/dev/null && fail "a bad pattern was accepted"
[ "$(selection)" = "$desc" ] || fail "a failed write left '$(selection)'"

if [ "$desc" = pipe ]; then
	[ "$(stat allocs)" -gt 0 ] || fail "memguard.desc=pipe: no guarded allocation since boot"
	got=$(yes memguard | head -n 20000 | cat | wc -l)
	[ "$got" -eq 20000 ] || fail "a pipeline under memguard gave '$got' lines"
fi

# The bugs of the test module.
mod=/lib/modules/malloc_type_memguard_test.ko
[ -e $mod ] || fail "no $mod (CONFIG_MALLOC_TYPE_MEMGUARD_TEST=m?)"
insmod $mod bug=overflow 2>/dev/null && fail "the test module loaded with its type not guarded"
echo memguard_test >>$mg/types || fail "select memguard_test"
echo "MT-GUEST: expect memguard reports"
echo 0 >/proc/sys/kernel/panic_on_warn
for b in overflow uaf; do
	n=$(stat reports)
	dmesg -c >/dev/null
	insmod $mod bug=$b || fail "insmod malloc_type_memguard_test bug=$b"
	rmmod malloc_type_memguard_test || fail "rmmod malloc_type_memguard_test after bug=$b"
	[ "$(stat reports)" = $((n + 1)) ] || fail "bug=$b: $(($(stat reports) - n)) reports, not 1"
	# The access is in the module's init (named init_module by kallsyms).
	case $b in
	overflow) want='BUG: memguard: out-of-bounds write in .* \[malloc_type_memguard_test\]' ;;
	uaf) want='BUG: memguard: use-after-free read in .* \[malloc_type_memguard_test\]' ;;
	esac
	dmesg | grep -q "$want" || fail "bug=$b: no '$want' in the kernel log"
	dmesg | grep -q 'The block: 64 bytes at .* of malloc type "memguard test"' ||
		fail "bug=$b: the report does not name the type: $(dmesg | grep 'The block')"
	echo "  bug=$b: $(dmesg | grep 'BUG: memguard')"
done
echo "$pow" >/proc/sys/kernel/panic_on_warn
printf '!memguard_test\n' >>$mg/types

# Rust Binder with four of its types guarded.
reports=$(stat reports)
echo 'binder_txn binder_thread binder_ref binder_work' >>$mg/types || fail "select binder types"
allocs=$(stat allocs)
mkdir -p $binderfs || fail "mkdir $binderfs"
mount -t binder -o stats=global binder $binderfs || fail "mount binderfs"
out=/tmp/binderload.out
binderload --device $binderfs/binder --timeout 50 --clients 2 --calls 60 >$out 2>&1
rc=$?
sed 's/^/  /' $out
[ $rc = 0 ] || fail "binderload under memguard exited with $rc"
i=0
while [ -n "$(binder_in_use)" ]; do
	i=$((i + 1))
	[ $i -le 100 ] || fail "10 s after the workload: $(binder_in_use)"
	sleep 0.1
done
sed 's/^/  stats after Binder: /' $mg/stats
[ "$(stat allocs)" -gt "$allocs" ] || fail "memguard served no Binder allocation"
[ "$(stat reports)" = "$reports" ] || fail "memguard reported $(($(stat reports) - reports)) bugs in Binder"
umount $binderfs || fail "umount $binderfs"
printf '!binder_txn !binder_thread !binder_ref !binder_work\n' >>$mg/types
[ "$(selection)" = "$desc" ] || fail "$mg/types after the test: '$(selection)'"
# Without pipes guarded, every guarded block was freed; with them, the
# shell's pipes may hold some.
[ -n "$desc" ] || [ "$(stat in_use)" = 0 ] || fail "memguard holds $(stat in_use) blocks"
echo "$name: ok"
