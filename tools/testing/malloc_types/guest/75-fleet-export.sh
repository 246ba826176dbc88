#!/bin/sh
# The fleet export against a real Prometheus server: make check starts
# Prometheus on the host (tools/testing/malloc_types/prometheus.py), and
# QEMU's user network forwards the port it scrapes to this guest's 9100,
# where memstat --listen serves the metrics, as on any machine of a fleet.
# The exporter serves every scrape from before a Binder workload to after
# it; the guest prints its own view of the Binder types (memstat
# --prometheus, lines "MT-FLEET: before|after ...") before and after the
# workload, each followed by 25 s with Binder idle. The host then asks Prometheus (PromQL over its HTTP
# API) for the Binder types' bytes in use, requests and request rates and
# compares them with these lines.
# Guests without a network device (the arm64 boot) skip it, saying so.
name=75-fleet-export
fail() { echo "$name: FAIL: $*"; exit 1; }
binderfs=/dev/binderfs
port=9100

if [ ! -e /sys/class/net/eth0 ]; then
	echo "$name: no network device in this boot: skipped (make check gives one to the x86_64 test boot)"
	echo "$name: ok"
	exit 0
fi
ip link set lo up || fail "ip link set lo up"
ip link set eth0 up || fail "ip link set eth0 up"
# QEMU's user network: the guest is 10.0.2.15, the host 10.0.2.2.
ip addr add 10.0.2.15/24 dev eth0 || fail "ip addr add 10.0.2.15/24 dev eth0"

# The guest's view of the Binder types, as it exports them.
view() {
	memstat --prometheus >/tmp/fleet.prom || fail "memstat --prometheus"
	grep -E '^malloc_type_(in_use_bytes|requests_total)\{type="binder ' /tmp/fleet.prom |
		sed "s/^/MT-FLEET: $1 /"
	grep -q '^malloc_type_requests_total{type="binder txn"' /tmp/fleet.prom ||
		fail "no binder txn in memstat --prometheus"
}
# settle: long enough for the host's Prometheus (a scrape every 10 s, 1 to
# 5 s each through QEMU's user network) to store at least two scrapes of
# figures that no longer move. Counting requests would not do: QEMU keeps
# the scrapes that came before the exporter listened and delivers them when
# it does, long after Prometheus gave up on them.
settle() { sleep 25; }

mkdir -p $binderfs
mount -t binder binder $binderfs || fail "mount -t binder binder $binderfs"
memstat --listen "0.0.0.0:$port" 2>/tmp/fleet-exporter.err &
exporter=$!
view before
settle
echo "MT-FLEET: workload"
out=/tmp/fleet-binderload.out
binderload --device $binderfs/binder --timeout 100 --clients 2 --calls 600 >$out 2>&1 ||
	fail "binderload exited with $?: $(tail -n 3 $out)"
grep -q '^binderload: ok: ' $out || fail "binderload: no ok line"
# The driver releases the workload's processes asynchronously: wait for
# their binder proc allocations to go, so that the counters stay put.
i=0
while grep -qE '^ *binder proc +[1-9]' /proc/malloc_types && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
view after
settle
kill $exporter
wait $exporter 2>/dev/null
grep -q 'serving http' /tmp/fleet-exporter.err || fail "the exporter did not serve: $(cat /tmp/fleet-exporter.err)"
echo "MT-FLEET: done"
memstat -m -l --name 'binder*'
umount $binderfs || fail "umount $binderfs"
echo "$name: ok"
