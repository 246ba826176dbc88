#!/bin/sh
# Names that would break a text format (malloc_type_names_test: a newline
# and the rest of a forged row, escape sequences, a backslash, a
# bidirectional override, glob and spec characters) are written in their
# text form by every text output: /proc/malloc_types has one row per type,
# the dtmalloc events one line each, dtmalloc_probes and the tools' tables
# no byte but printable ASCII; the stream keeps the names' bytes; and the
# exact pattern of a probe name selects that type alone.
name=45-names
fail() { echo "$name: FAIL: $*"; exit 1; }
. /tests/lib.sh
t=/sys/kernel/tracing
inst=$t/instances/mt45
mod=/lib/modules/malloc_type_names_test.ko
cleanup() {
	echo >$t/set_dtmalloc_probes
	rmmod malloc_type_names_test 2>/dev/null
	rmdir $inst 2>/dev/null
}
trap cleanup EXIT

# Fails when $2 (a file) holds a byte that is not printable ASCII or a newline.
printable() {
	bad=$(tr -d '\n\040-\176' <"$2" | wc -c)
	[ "$bad" = 0 ] || fail "$1: $bad bytes that are not printable ASCII"
}

mkdir $inst || fail "mkdir $inst"
echo 1 >$inst/events/dtmalloc/enable
insmod $mod || fail "insmod malloc_type_names_test"
echo 0 >$inst/events/dtmalloc/enable

# /proc/malloc_types: the header's two lines and one row per type.
cat /proc/malloc_types >/tmp/t45.types
n=$(cat /proc/sys/kernel/malloc_count)
[ "$(wc -l </tmp/t45.types)" = $((n + 2)) ] || fail "$(wc -l </tmp/t45.types) lines for $n types"
printable /proc/malloc_types /tmp/t45.types
grep -qxF 'nl\012row 0 0 0     1     1K        2    0     0       - malloc_type_names_test  64' /tmp/t45.types ||
	fail "no row of 'nl\\nrow 0 0 0': $(grep -F 'nl\' /tmp/t45.types)"
for text in 'esc\033[31mred\033]0;t\007' 'a\134n' 'a\012' 'rlo\342\200\256live' 'glob*?[x]:malloc !'; do
	grep -qF "$text " /tmp/t45.types || fail "no row of '$text'"
done

# The events: one line each, the name and the probe name in text form.
grep -v '^#' $inst/trace >/tmp/t45.trace
printable trace /tmp/t45.trace
[ "$(grep -cE ': (malloc|free): probe=' /tmp/t45.trace)" = "$(wc -l </tmp/t45.trace)" ] ||
	fail "a trace line that is not a whole event"
# White space is '_' in a probe name (the newline too), escaped in a name.
grep -qF "malloc: probe=nl_row_0_0_0 size=64 zindx=$(zindx 64) name='nl\\012row 0 0 0'" /tmp/t45.trace ||
	fail "no event of 'nl\\nrow 0 0 0': $(grep -F 'nl_' /tmp/t45.trace | head -n 2)"
[ "$(grep -cF "probe=esc\\033[31mred\\033]0;t\\007 " /tmp/t45.trace)" = 2 ] || fail "not 2 events of the escapes"
[ "$(grep -cF "probe=a_ size=64 zindx=$(zindx 64) name='a\\012'" /tmp/t45.trace)" = 1 ] ||
	fail "no malloc event of 'a\\n'"
[ "$(grep -cF "probe=a\\134n " /tmp/t45.trace)" = 2 ] || fail "not 2 events of 'a\\\\n'"

# dtmalloc_probes: the probe names' text forms.
cat $t/dtmalloc_probes >/tmp/t45.probes
printable dtmalloc_probes /tmp/t45.probes
[ "$(tail -n +2 /tmp/t45.probes | wc -l)" = $((2 * n)) ] || fail "not two probes for each of $n types"
grep -qE ' rlo\\342\\200\\256live malloc$' /tmp/t45.probes || fail "no probe of the override"
grep -qF ' glob*?[x]:malloc_! free' /tmp/t45.probes || fail "no probe of the glob characters"

# The exact pattern of a probe name selects that type, and no other: its
# text form, with * ? [ : ! written as \NNN too.
echo >$inst/trace
printf '%s\n' 'glob\052\077\133x]\072malloc_\041 rlo\342\200\256live' >$t/set_dtmalloc_probes ||
	fail "exact patterns refused"
echo 1 >$inst/events/dtmalloc/enable
rmmod malloc_type_names_test || fail "rmmod"
insmod $mod || fail "insmod again"
echo 0 >$inst/events/dtmalloc/enable
echo >$t/set_dtmalloc_probes
got=$(grep -v '^#' $inst/trace | sed -E 's/^.*: (malloc|free): probe=([^ ]+) .*$/\1 \2/' | sort | uniq -c | tr -s ' ' | tr '\n' ';')
[ "$got" = " 1 free glob*?[x]:malloc_!; 1 free rlo\\342\\200\\256live; 1 malloc glob*?[x]:malloc_!; 1 malloc rlo\\342\\200\\256live;" ] ||
	fail "events of the exact patterns: '$got'"

# The stream keeps the bytes: the names come back whole from it.
memstat -m -a -H >/tmp/t45.memstat || fail "memstat -m"
printable "memstat -m" /tmp/t45.memstat
grep -qF 'nl\012row 0 0 0' /tmp/t45.memstat || fail "memstat -m: no 'nl\\012row 0 0 0'"
grep -qF 'rlo\342\200\256live' /tmp/t45.memstat || fail "memstat -m: the override not escaped"
memstat -m -a --json >/tmp/t45.json || fail "memstat --json"
printable "memstat --json" /tmp/t45.json
memstat --save /tmp/t45.bin || fail "memstat --save"
# (busybox grep stops a line at a NUL: the stream's are dropped first.)
tr -d '\000' </tmp/t45.bin | tr '\n' '#' | grep -qF 'nl#row 0 0 0' || fail "the stream lost the name's bytes"
memstat -f /tmp/t45.bin -a -H >/tmp/t45.saved || fail "memstat -f"
grep -qF 'a\134n' /tmp/t45.saved || fail "memstat -f: no 'a\\134n'"

# dtmalloc: its event lines name the probe, in its text form; -t takes the
# probe name as dtmalloc_probes shows it. The override's type allocates and
# frees once at load.
dtmalloc --instance dt45 -Z -t 'rlo\342\200\256live' --min 0 -c 2 -d 30 >/tmp/t45.dt 2>/tmp/t45.dterr &
pid=$!
dtmalloc_wait dt45
rmmod malloc_type_names_test && insmod $mod || fail "rmmod/insmod under dtmalloc"
wait $pid || fail "dtmalloc -t: $(cat /tmp/t45.dterr)"
printable dtmalloc /tmp/t45.dt
printable "dtmalloc's errors" /tmp/t45.dterr
[ "$(grep -cF 'type rlo\342\200\256live 64 bytes' /tmp/t45.dt)" = 2 ] ||
	fail "dtmalloc: not the 2 events of the override: $(head -n 3 /tmp/t45.dt)"
rm -f /tmp/t45.*
echo "$name: ok"
