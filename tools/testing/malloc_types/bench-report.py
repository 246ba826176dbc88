#!/usr/bin/env python3
"""Turns the BENCH lines of a bench guest's console log into a table.

Allocation figures are nanoseconds per allocate+free pair of guest time
(under -icount shift=0: instructions); ratios are to plain kmalloc/kfree of
the same size with tracing and profiling off. Reader figures are
nanoseconds per read or update. Writes the same as JSON with --json.
"""
import argparse
import json
import re
import sys

SCENARIOS = {
    "0": "off",
    "1": "events on, filtered out",
    "2": "events recorded",
    "3": "alloc profiling on",
}
VARIANTS = [
    ("kmalloc", "0", "kmalloc/kfree"),
    ("krealloc", "0", "krealloc(NULL)/kfree"),
    ("kbox", "0", "KBox (rust kmalloc)"),
    ("typed", "0", "typed malloc/free"),
    ("typed_box", "0", "typed Box"),
    ("typed", "1", "typed, events filtered out"),
    ("typed_box", "1", "typed Box, events filtered out"),
    ("typed", "2", "typed, events recorded"),
    ("kmalloc", "3", "kmalloc, alloc profiling on"),
    ("kbox", "3", "KBox, alloc profiling on"),
    ("typed", "3", "typed, alloc profiling on"),
]
ALLOC = re.compile(r"BENCH scenario=(\d+) variant=(\w+) size=(\d+) pairs=(\d+) ns=(\d+)")
READER = re.compile(r"BENCH reader=(\S+) types=(\d+) runs=(\d+) ns=(\d+)")


def size_name(n):
    return f"{n >> 20}M" if n >= 1 << 20 else (f"{n >> 10}K" if n >= 1024 else str(n))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log")
    ap.add_argument("--json")
    args = ap.parse_args()
    try:
        text = open(args.log, errors="replace").read()
    except OSError as e:
        print(f"bench: cannot read {args.log}: {e.strerror}")
        return 1
    per_pair = {}
    for m in ALLOC.finditer(text):
        scen, var, size, pairs, ns = m.groups()
        per_pair[(scen, var, int(size))] = int(ns) / int(pairs)
    readers = [(p, int(t), int(ns)) for p, t, _, ns in READER.findall(text)]
    errors = re.findall(r"BENCH error (.*)", text)
    sizes = sorted({k[2] for k in per_pair})
    if not per_pair or errors or "BENCH end rc=0" not in text:
        for e in errors:
            print(f"bench: {e}")
        print(f"bench: FAILED: the guest did not finish the benchmark (log: {args.log})")
        return 1

    w = 32
    head = "".join(f"{size_name(s):>10}" for s in sizes)
    print("\nns per allocate+free pair (guest time under -icount shift=0)")
    print(f"{'':{w}}{head}")
    rows = []
    for var, scen, label in VARIANTS:
        vals = [per_pair.get((scen, var, s)) for s in sizes]
        if all(v is None for v in vals):
            continue
        rows.append((label, var, scen, vals))
        print(f"{label:{w}}" + "".join(f"{v:10.0f}" if v is not None else f"{'-':>10}" for v in vals))
    print("\nratio to kmalloc/kfree")
    print(f"{'':{w}}{head}")
    base = [per_pair.get(("0", "kmalloc", s)) for s in sizes]
    for label, var, scen, vals in rows:
        cells = []
        for v, b in zip(vals, base):
            cells.append(f"{v / b:10.3f}" if v is not None and b else f"{'-':>10}")
        print(f"{label:{w}}" + "".join(cells))
    if readers:
        print("\nns per read or update (a stream of N types, 2 CPUs)")
        for path, types, ns in readers:
            print(f"{path:{w}}{types:>6} types {ns:>12}")
    if args.json:
        out = {
            "unit": "ns of guest time per allocate+free pair (-icount shift=0)",
            "sizes": sizes,
            "pairs": [
                {"variant": var, "scenario": SCENARIOS.get(scen, scen), "label": label,
                 "ns": {str(s): v for s, v in zip(sizes, vals) if v is not None},
                 "ratio_to_kmalloc": {str(s): v / b for s, v, b in zip(sizes, vals, base)
                                      if v is not None and b}}
                for label, var, scen, vals in rows
            ],
            "readers": [{"reader": p, "types": t, "ns": ns} for p, t, ns in readers],
        }
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
        print(f"\nbench: JSON in {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
