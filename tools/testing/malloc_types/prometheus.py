#!/usr/bin/env python3
"""A real Prometheus server scrapes the guest's exporter (make check).

  prometheus.py start DIR   starts Debian's prometheus bound to 127.0.0.1, its
                            configuration and data under DIR, scraping a free
                            loopback port every 10 s; prints the QEMU hostfwd
                            rule (tcp:127.0.0.1:PORT-:9100) that forwards that
                            port to the guest's exporter. The server stops by
                            itself after --lifetime seconds (default 1800).
  prometheus.py check DIR LOG
                            reads the guest's view of the Binder types from
                            the console LOG (guest test 75's "MT-FLEET:"
                            lines), asks the server with PromQL over its HTTP
                            API, compares, prints one line per check and a
                            "prometheus: N passed, N failed" summary; exits 1
                            on a failure.
  prometheus.py stop DIR    stops the server.

Standard library only (urllib, json, subprocess).
"""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

GUEST_PORT = 9100
# A scrape of the TCG guest through QEMU's user network takes 1 to 2 s (its
# answer is some 70 KB), 3 to 5 s while the Binder workload keeps both vCPUs
# busy and the host builds kernels beside it: 10 s (Prometheus' default
# timeout) leave room, and the timeout cannot exceed the interval.
SCRAPE_INTERVAL = "10s"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def api(base, query):
    url = base + "/api/v1/query?" + urllib.parse.urlencode({"query": query})
    with urllib.request.urlopen(url, timeout=10) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise RuntimeError(f"{query}: {body}")
    return body["data"]["result"]


def start(d, lifetime):
    os.makedirs(d, exist_ok=True)
    stop(d, quiet=True)
    target, web = free_port(), free_port()
    data = os.path.join(d, "data")
    subprocess.run(["rm", "-rf", data], check=True)
    config = os.path.join(d, "prometheus.yml")
    with open(config, "w") as f:
        f.write(
            "# Written by tools/testing/malloc_types/prometheus.py.\n"
            "global:\n"
            f"  scrape_interval: {SCRAPE_INTERVAL}\n"
            f"  scrape_timeout: {SCRAPE_INTERVAL}\n"
            "scrape_configs:\n"
            "  - job_name: malloc_types\n"
            "    static_configs:\n"
            f"      - targets: ['127.0.0.1:{target}']\n"
        )
    log = open(os.path.join(d, "prometheus.log"), "w")
    # Bounded in time: timeout(1) ends a server that nobody stops.
    p = subprocess.Popen(
        [
            "timeout", str(lifetime), "prometheus",
            f"--config.file={config}",
            f"--storage.tsdb.path={data}",
            f"--web.listen-address=127.0.0.1:{web}",
            "--log.level=warn",
        ],
        stdout=log, stderr=log, start_new_session=True,
    )
    with open(os.path.join(d, "state.json"), "w") as f:
        json.dump({"pid": p.pid, "target": target, "web": web}, f)
    base = f"http://127.0.0.1:{web}"
    for _ in range(120):
        if p.poll() is not None:
            sys.exit(f"prometheus exited with {p.returncode} (log: {log.name})")
        try:
            with urllib.request.urlopen(base + "/-/ready", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        time.sleep(0.5)
    else:
        stop(d, quiet=True)
        sys.exit(f"prometheus did not become ready (log: {log.name})")
    print(f"tcp:127.0.0.1:{target}-:{GUEST_PORT}")


def stop(d, quiet=False):
    try:
        with open(os.path.join(d, "state.json")) as f:
            pid = json.load(f)["pid"]
    except (OSError, ValueError, KeyError):
        return
    try:
        os.killpg(pid, signal.SIGTERM)
        for _ in range(40):
            os.killpg(pid, 0)
            time.sleep(0.25)
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.remove(os.path.join(d, "state.json"))
    if not quiet:
        print("prometheus: stopped")


SAMPLE = re.compile(r'^(?P<family>malloc_type_\w+)\{(?P<labels>.*)\} (?P<value>\d+)$')
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def guest_views(log):
    """{"before"|"after": {(family, type, id): value}} from the console log."""
    views = {"before": {}, "after": {}}
    with open(log, errors="replace") as f:
        for line in f:
            m = re.search(r"MT-FLEET: (before|after) (.*)$", line.rstrip("\r\n"))
            if not m:
                continue
            s = SAMPLE.match(m.group(2))
            if not s:
                continue
            labels = dict(LABEL.findall(s.group("labels")))
            key = (s.group("family"), labels.get("type"), labels.get("id"))
            views[m.group(1)][key] = int(s.group("value"))
    return views


def series(result, family):
    """{(family, type, id): value} of an instant vector."""
    out = {}
    for r in result:
        m = r["metric"]
        out[(family, m.get("type"), m.get("id"))] = int(float(r["value"][1]))
    return out


def check(d, log):
    with open(os.path.join(d, "state.json")) as f:
        base = f"http://127.0.0.1:{json.load(f)['web']}"
    views = guest_views(log)
    passed, failed = 0, 0

    def verdict(ok, what):
        nonlocal passed, failed
        if ok:
            passed += 1
            print(f"prometheus: ok: {what}")
        else:
            failed += 1
            print(f"prometheus: FAILED: {what}")

    before, after = views["before"], views["after"]
    verdict(bool(before) and bool(after),
            f"the guest's view of the Binder types ({len(before)} and {len(after)} samples in {log})")
    sel = '{type=~"binder .*",job="malloc_types"}'
    # Bytes in use and requests: the last samples Prometheus stored are the
    # guest's figures after the workload, to the byte and to the request.
    for family in ("malloc_type_in_use_bytes", "malloc_type_requests_total"):
        q = f"last_over_time({family}{sel}[1h])"
        got = series(api(base, q), family)
        want = {k: v for k, v in after.items() if k[0] == family}
        diff = sorted(f"{k[1]} (id {k[2]}): prometheus {got.get(k)}, guest {v}"
                      for k, v in want.items() if got.get(k) != v)
        verdict(want and not diff, f"{q} equals the guest's {len(want)} series"
                + (": " + "; ".join(diff) if diff else ""))
    # The requests of the run: what Prometheus saw rise from the idle
    # scrapes before the workload to those after it is what the guest
    # counted (no rate extrapolation: the first and last samples).
    family = "malloc_type_requests_total"
    q = f"max_over_time({family}{sel}[1h]) - min_over_time({family}{sel}[1h])"
    got = series(api(base, q), family)
    want = {k: after[k] - before.get(k, 0) for k in after if k[0] == family}
    diff = sorted(f"{k[1]}: prometheus {got.get(k)}, guest {v}"
                  for k, v in want.items() if got.get(k) != v)
    verdict(want and not diff, f"requests during the run ({q}) equal the guest's"
            + (": " + "; ".join(diff) if diff else ""))
    busy = sorted(k[1] for k, v in want.items() if v > 0)
    verdict("binder txn" in busy, f"the workload made requests: {', '.join(busy) or 'none'}")
    # Request rates while the workload ran: rate() over the scrapes of the
    # running exporter, positive for every type the run used.
    q = f"max_over_time(rate({family}{sel}[30s])[1h:{SCRAPE_INTERVAL}])"
    got = {t: v for (t, _), v in series_float(api(base, q)).items()}
    bad = [t for t in busy if not got.get(t, 0) > 0]
    verdict(busy and not bad, f"{q} is positive for the busy types"
            + (": not for " + ", ".join(bad) if bad else
               ": " + ", ".join(f"{t} {got[t]:.1f}/s" for t in busy)))
    # How the scrapes went, for the log: a slow exporter shows here first.
    stats = []
    for what, q in (("scrapes", 'count_over_time(up{job="malloc_types"}[1h])'),
                    ("answered", 'sum_over_time(up{job="malloc_types"}[1h])'),
                    ("longest, timeouts included (s)", 'max_over_time(scrape_duration_seconds{job="malloc_types"}[1h])')):
        v = list(series_float(api(base, q)).values())
        stats.append(f"{what} {v[0]:.2f}" if v else f"{what} -")
    print(f"prometheus: {', '.join(stats)}")
    print(f"prometheus: {passed} passed, {failed} failed")
    return failed == 0


def series_float(result):
    return {(r["metric"].get("type"), r["metric"].get("id")): float(r["value"][1]) for r in result}


def main(argv):
    if len(argv) >= 3 and argv[1] == "start":
        start(argv[2], int(os.environ.get("MT_PROMETHEUS_LIFETIME", "1800")))
    elif len(argv) == 4 and argv[1] == "check":
        sys.exit(0 if check(argv[2], argv[3]) else 1)
    elif len(argv) == 3 and argv[1] == "stop":
        stop(argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
