#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# libmemstat for C programs, as a C programmer gets it: `make install`, then
# the installed <memstat.h> and memstat.pc.
#  - install with PREFIX, and with DESTDIR (then uninstall);
#  - the example of libmemstat(3)'s EXAMPLES section (examples/skbuffs.c),
#    built with `cc $(pkg-config --cflags --libs memstat)`, dynamically and
#    statically, run against a saved slabinfo file, and with a missing one;
#  - the test program tests/c/memstat_test.c (every function, accessor and
#    error path) against saved streams, sysfs and sysctl trees and a vmcore:
#    linked with libmemstat.so under AddressSanitizer and
#    UndefinedBehaviorSanitizer, and with libmemstat.a under valgrind;
#  - vmstat -m in C (examples/vmstat_m.c) against saved streams, its output
#    compared with memstat's.
# Prints a line per test and, last, "capi: N passed, M failed"; exits 1 when
# one failed.
# Usage: tests/run.sh WORKDIR  (emptied first; CARGO_TARGET_DIR and CARGO are
# honoured)
set -uo pipefail
capi=$(cd "$(dirname "$0")/.." && pwd)
memstat=$(dirname "$capi")
work=${1:?usage: run.sh WORKDIR}
CC=${CC:-cc}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$memstat/target}
rm -rf "$work"
mkdir -p "$work"
passed=0
failed=0
pass() { echo "ok - $*"; passed=$((passed + 1)); }
fail() { echo "FAILED - $*"; failed=$((failed + 1)); }
check() { # check DESCRIPTION COMMAND...: the command's success
	local what=$1
	shift
	if "$@" >"$work/last.log" 2>&1; then pass "$what"; else
		fail "$what"
		sed 's/^/    /' "$work/last.log" | tail -n 20
	fi
}
finish() {
	echo "capi: $passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit
}

prefix=$work/prefix
if ! make -C "$capi" install PREFIX="$prefix" >"$work/make.log" 2>&1; then
	fail "make install PREFIX=$prefix"
	tail -n 30 "$work/make.log"
	finish
fi
pass "make install PREFIX=..."

# DESTDIR stages what PREFIX names; uninstall takes it all back.
dest=$work/dest
installed_files() {
	(cd "$dest" && find . \( -type f -o -type l \) | sort | tr '\n' ' ')
}
want="./usr/include/memstat.h ./usr/lib/libmemstat.a ./usr/lib/libmemstat.so ./usr/lib/libmemstat.so.1 ./usr/lib/libmemstat.so.1.0.0 ./usr/lib/pkgconfig/memstat.pc "
make -C "$capi" install DESTDIR="$dest" PREFIX=/usr >>"$work/make.log" 2>&1
check "make install DESTDIR=... PREFIX=/usr puts the files under DESTDIR" \
	test "$(installed_files)" = "$want"
check "memstat.pc names PREFIX, not DESTDIR" \
	grep -qx 'libdir=/usr/lib' "$dest/usr/lib/pkgconfig/memstat.pc"
make -C "$capi" uninstall DESTDIR="$dest" PREFIX=/usr >>"$work/make.log" 2>&1
check "make uninstall removes them" test -z "$(installed_files)"

lib=$prefix/lib
export PKG_CONFIG_PATH=$lib/pkgconfig
check "libmemstat.so.1 is the soname" \
	sh -c "readelf -d '$lib/libmemstat.so.1.0.0' | grep -q 'SONAME.*\[libmemstat.so.1\]'"
check "libmemstat.so's functions are at version MEMSTAT_1.0" \
	test "$(objdump -T "$lib/libmemstat.so.1.0.0" | grep -c ' MEMSTAT_1.0 *memstat_')" -ge 60
check "libmemstat.so exports the memstat_* functions and nothing else" \
	sh -c "nm -D --defined-only '$lib/libmemstat.so' | awk '\$2 != \"A\" {print \$3}' | grep -v '^memstat_' | grep -q . && exit 1;
		test \$(nm -D --defined-only '$lib/libmemstat.so' | grep -c ' memstat_') -ge 60"
check "the header compiles alone, as C11 and C++" sh -c "
	echo '#include <memstat.h>' | $CC -std=c11 -Wall -Wextra -Werror -pedantic -fsyntax-only \$(pkg-config --cflags memstat) -x c - &&
	echo '#include <memstat.h>' | c++ -Wall -Werror -fsyntax-only \$(pkg-config --cflags memstat) -x c++ -"

# The manual's example.
fx=$work/fixtures
mkdir -p "$fx"
cp "$capi/tests/fixtures/slabinfo" "$fx/slabinfo"
ex=$capi/examples/skbuffs.c
check "the example builds with \$(pkg-config --cflags --libs memstat)" \
	sh -c "$CC -Wall -Wextra -Werror -o '$work/skbuffs' '$ex' \$(pkg-config --cflags --libs memstat)"
check "the dynamic example needs libmemstat.so.1" \
	sh -c "readelf -d '$work/skbuffs' | grep -q 'NEEDED.*\[libmemstat.so.1\]'"
check "the example builds statically with \$(pkg-config --static --libs memstat)" \
	sh -c "$CC -static -Wall -Wextra -Werror -o '$work/skbuffs-static' '$ex' \$(pkg-config --cflags --static --libs memstat) 2>'$work/static.log' ||
		{ cat '$work/static.log'; exit 1; }"
check "the static example is static" sh -c "! readelf -d '$work/skbuffs-static' 2>/dev/null | grep -q NEEDED"
for bin in skbuffs skbuffs-static; do
	out=$(LD_LIBRARY_PATH=$lib MEMSTAT_SLABINFO=$fx/slabinfo "$work/$bin" 2>&1)
	check "$bin prints the skbuff_head_cache objects in use of the saved slabinfo ($out)" \
		test "$out" = "skbuffs: 234"
	out=$(LD_LIBRARY_PATH=$lib MEMSTAT_SLABINFO=$fx/missing "$work/$bin" 2>&1)
	rc=$?
	check "$bin with no slabinfo exits non-zero with err(3)'s message ($out)" \
		sh -c "[ $rc -ne 0 ] && echo '$out' | grep -q 'memstat_sysctl_uma: No such file or directory'"
done

# The test program.
if ! (cd "$memstat" && ${CARGO:-cargo} run --quiet --release --locked -p memstat-capi --example capi_fixtures -- "$fx") \
	>"$work/fixtures.log" 2>&1; then
	fail "writing the streams of the test program"
	cat "$work/fixtures.log"
	finish
fi
gzip -dc "$memstat/tests/fixtures/kvm/x86_64-5level-kaslr.core.gz" >"$fx/x86_64.core"
# vmstat -m in C (examples/vmstat_m.c) prints what `memstat -m -H` prints.
if (cd "$memstat" && ${CARGO:-cargo} build --quiet --release --locked --bin memstat) >"$work/memstat.log" 2>&1; then
	check "vmstat_m builds" sh -c "$CC -Wall -Wextra -Werror -o '$work/vmstat_m' '$capi/examples/vmstat_m.c' \$(pkg-config --cflags --libs memstat)"
	for s in first second; do
		LD_LIBRARY_PATH=$lib MEMSTAT_MALLOC_STATS=$fx/$s.stream MEMSTAT_SYSCTL_DIR=$memstat/tests/fixtures/sysctl \
			"$work/vmstat_m" >"$work/vmstat_m.$s" 2>&1
		"$CARGO_TARGET_DIR/release/memstat" -f "$fx/$s.stream" --sysctl "$memstat/tests/fixtures/sysctl" -m -H \
			>"$work/memstat.$s" 2>&1
		check "vmstat_m of $s.stream is memstat -m -H's table ($(wc -l <"$work/vmstat_m.$s") lines)" \
			cmp "$work/vmstat_m.$s" "$work/memstat.$s"
	done
else
	fail "building memstat"
	cat "$work/memstat.log"
fi

args=("$fx" "$memstat/tests/fixtures/slab" "$memstat/tests/fixtures/sysctl" "$fx/x86_64.core")
src=$capi/tests/c/memstat_test.c
if $CC -std=c11 -D_DEFAULT_SOURCE -g -O1 -Wall -Wextra -Werror -fsanitize=address,undefined \
	-fno-omit-frame-pointer -fno-sanitize-recover=all -o "$work/memstat_test-asan" "$src" \
	$(pkg-config --cflags --libs memstat) >"$work/cc.log" 2>&1; then
	LD_LIBRARY_PATH=$lib ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
		"$work/memstat_test-asan" "${args[@]}" >"$work/asan.log" 2>&1
	rc=$?
	p=$(grep -c '^ok ' "$work/asan.log")
	f=$(grep -c '^not ok ' "$work/asan.log")
	echo "memstat_test (ASan, UBSan, libmemstat.so): $p checks passed, $f failed"
	grep '^not ok ' "$work/asan.log" | head -n 20
	passed=$((passed + p))
	failed=$((failed + f))
	if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then
		fail "memstat_test under ASan exited $rc"
		tail -n 30 "$work/asan.log"
	fi
else
	fail "memstat_test builds with -fsanitize=address,undefined"
	cat "$work/cc.log"
fi
if $CC -std=c11 -D_DEFAULT_SOURCE -g -Wall -Wextra -Werror -o "$work/memstat_test-static" "$src" \
	$(pkg-config --cflags memstat) "$lib/libmemstat.a" $(pkg-config --libs-only-l --static memstat | sed 's/-lmemstat//') \
	>"$work/cc.log" 2>&1; then
	check "memstat_test (libmemstat.a) under valgrind: every check passes, no error, no leak" \
		valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
		"$work/memstat_test-static" "${args[@]}"
else
	fail "memstat_test builds with libmemstat.a"
	cat "$work/cc.log"
fi
finish
