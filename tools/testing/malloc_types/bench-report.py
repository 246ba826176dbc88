#!/usr/bin/env python3
"""Turns the BENCH lines of the bench guests' console logs into a table.

Allocation figures are nanoseconds per allocate+free pair of guest time
(under -icount shift=0: instructions), the median of the module's rounds
(each measurement is taken several times, interleaved), with the minimum and
maximum beside it in the JSON; ratios are medians to the median of plain
kmalloc/kfree of the same size, with tracing and profiling off, in the same
kernel; with the bench-nomt kernel's log (--nomt), also to plain kmalloc/kfree of
the kernel without malloc types (ratio_to_nomt), the base that stays one when
kmalloc itself is charged. Reader figures are nanoseconds per read or update.

The first log is the bench kernel (the C helpers of rust/helpers/ called out
of line); --inline LOG adds the bench-inline kernel (CONFIG_RUST_INLINE_HELPERS)
side by side, --inline-error TEXT says why it has no figures; --debug LOG sets
the bench-debug kernel (failure injection and memguard per type built in)
beside bench-inline. Writes the same as JSON with --json.
"""
import argparse
import json
import re
import statistics
import sys

SCENARIOS = {
    "0": "off",
    "1": "events on, filtered out",
    "2": "events recorded",
    "3": "alloc profiling on",
    "4": "another type's probes selected, recording",
    "5": "this type's probes selected, recorded",
    "6": "malloc_types.default_types=0",
    "7": "kernel without malloc types",
    "8": "kmem:kmalloc and kmem:kfree recorded",
    "9": "another type's peak tracked",
    "10": "this type's peak tracked",
    "11": "this type's stacks read by dtmalloc stacks",
    "12": "this type's call chains recorded by perf record -g",
    "13": "this type's stacks recorded (stacktrace option), no reader",
    "14": "another type's stacks read by dtmalloc stacks",
    "15": "this type's malloc events recorded, no stacks, no reader",
    "16": "another type made to fail",
    "17": "another type guarded",
    "18": "another type made to fail and guarded",
}
# The boot of the bench-debug kernel (mt.bench=debug): failure injection and memguard per type
# built in; the pairs of a type neither made to fail nor guarded.
DEBUG = [
    ("0", "no type selected"),
    ("16", "another type made to fail"),
    ("17", "another type guarded"),
    ("18", "another type failing and guarded"),
]
DEBUG_VARIANTS = [
    ("kmalloc", "kmalloc/kfree (no typed path)"),
    ("kbox", "KBox (rust kmalloc)"),
    ("typed", "typed malloc/free"),
    ("typed_c", "typed C kmalloc_mt/kfree_mt"),
    ("typed_box", "typed Box"),
]
# The boot of mt.bench=stacks (guest/bench.sh, bench_stacks): what a type's kernel stacks
# cost per event, the typed pair allocating one event's worth (dtmalloc:malloc only).
STACKS = [
    ("0", "tracing off"),
    ("15", "malloc events recorded, no stacks"),
    ("13", "stacks recorded (stacktrace option)"),
    ("11", "dtmalloc stacks reading them"),
    ("12", "perf record -g"),
    ("14", "another type's stacks read"),
]
VARIANTS = [
    ("kmalloc", "0", "kmalloc/kfree (default type)"),
    ("floor", "0", "floor: kmalloc/kfree + counters"),
    ("attribution_floor", "0", "floor + per-object record"),
    ("krealloc", "0", "krealloc(NULL)/kfree"),
    ("kbox", "0", "KBox (rust kmalloc)"),
    ("kbox", "6", "KBox, default_types=0"),
    ("kbox", "7", "KBox, no malloc types"),
    ("typed", "0", "typed malloc/free"),
    ("typed_c", "0", "typed C kmalloc_mt/kfree_mt"),
    ("typed_box", "0", "typed Box"),
    ("typed", "1", "typed, events filtered out"),
    ("typed_box", "1", "typed Box, events filtered out"),
    ("typed", "2", "typed, events recorded"),
    ("typed", "4", "typed, another type traced"),
    ("typed", "5", "typed, this type traced"),
    ("typed", "9", "typed, another type's peak tracked"),
    ("typed", "10", "typed, this type's peak tracked"),
    ("kmalloc", "8", "kmalloc, kmem events recorded"),
    ("kmalloc", "3", "kmalloc, alloc profiling on"),
    ("kbox", "3", "KBox, alloc profiling on"),
    ("typed", "3", "typed, alloc profiling on"),
]
# The charged paths of the bench-inline kernel, by the names bench.json gives them so that
# releases compare: (name, variant, scenario, largest ratio to bench-nomt's kmalloc/kfree
# or None, what). "default" is plain kmalloc/kfree, which malloc types charge to the default
# type of its call site; the attribution floor is what charging a block with a record costs
# at the least, the figure the C paths are judged against.
CHARGED = [
    ("default", "kmalloc", "0", 1.25, "kmalloc/kfree charged to a default type"),
    ("typed_c", "typed_c", "0", 1.25, "kmalloc_mt/kfree_mt"),
    ("attribution_floor", "attribution_floor", "0", None, "kmalloc/kfree + record + counters"),
    ("floor", "floor", "0", None, "kmalloc/kfree + counters"),
    ("typed", "typed", "0", 1.10, "Rust raw typed malloc/free"),
    ("typed_box", "typed_box", "0", 1.10, "Rust typed Box"),
    ("kbox", "kbox", "0", 1.10, "KBox (rust kmalloc)"),
    ("profiling", "kmalloc", "3", None, "kmalloc/kfree, alloc profiling on"),
]
# The C paths that charge with a record are judged against the attribution floor.
FLOOR_LIMIT = 1.05
KERNELS = [("bench", "helpers"), ("bench-inline", "inline")]
ALLOC = re.compile(
    r"BENCH scenario=(\d+) variant=(\w+) size=(\d+) pairs=(\d+) ns=(\d+)(?: round=(\d+))?")
READER = re.compile(r"BENCH reader=(\S+) types=(\d+) runs=(\d+) ns=(\d+)")
BUILTIN = re.compile(r"BENCH builtin_types=(\d+)")
W = 40


def size_name(n):
    return f"{n >> 20}M" if n >= 1 << 20 else (f"{n >> 10}K" if n >= 1024 else str(n))


def parse(path):
    """The figures of one console log, or (None, why)."""
    try:
        text = open(path, errors="replace").read()
    except OSError as e:
        return None, f"cannot read {path}: {e.strerror}"
    rounds = {}
    for m in ALLOC.finditer(text):
        scen, var, size, pairs, ns, _ = m.groups()
        rounds.setdefault((scen, var, int(size)), []).append(int(ns) / int(pairs))
    per_pair = {k: statistics.median(v) for k, v in rounds.items()}
    spread = {k: (min(v), max(v), len(v)) for k, v in rounds.items()}
    readers = [(p, int(t), int(ns)) for p, t, _, ns in READER.findall(text)]
    errors = re.findall(r"BENCH error (.*)", text)
    if not per_pair or errors or "BENCH end rc=0" not in text:
        why = "; ".join(e.strip() for e in errors) or "the guest did not finish the benchmark"
        return None, f"{why} (log: {path})"
    builtin = BUILTIN.search(text)
    return {
        "text": text,
        "per_pair": per_pair,
        "spread": spread,
        "readers": readers,
        "builtin_types": int(builtin.group(1)) if builtin else None,
    }, None


def parse_finished(path, pattern, what):
    """A guest's console log that finished with matches of pattern: {"text", "found", "cpus"},
    or (None, why)."""
    try:
        text = open(path, errors="replace").read()
    except OSError as e:
        return None, f"cannot read {path}: {e.strerror}"
    errors = re.findall(r"BENCH error (.*)", text)
    found = pattern.findall(text)
    if errors or not found or "BENCH end rc=0" not in text:
        why = "; ".join(e.strip() for e in errors) or f"the guest did not finish the {what}"
        return None, f"{why} (log: {path})"
    cpus = re.search(r"BENCH cpus=(\d+)", text)
    return {"text": text, "found": found, "cpus": int(cpus.group(1)) if cpus else None}, None


def parse_readers(path):
    """The reader figures of a readers-only console log (mt.bench=readers), or (None, why)."""
    log, err = parse_finished(path, READER, "readers")
    if log is None:
        return None, err
    return {"readers": [(p, int(t), int(ns)) for p, t, _, ns in log["found"]],
            "cpus": log["cpus"]}, None


LOAD = re.compile(r"BENCH load readers=(\d+) runs=(\d+) median_ns=(\d+) max_ns=(\d+) "
                  r"reads=(\d+) read_ns=(\d+)")


def parse_streams(path):
    """The readers of a boot with many CPUs (mt.bench=streams), or (None, why)."""
    log, err = parse_finished(path, READER, "readers")
    if log is None:
        return None, err
    possible = re.search(r"BENCH possible_cpus=(\S+)", log["text"])
    return {"readers": [(p, int(t), int(ns)) for p, t, _, ns in log["found"]],
            "cpus": log["cpus"], "possible": possible.group(1) if possible else None}, None


def parse_loads(path):
    """The module loads of a boot without -icount (mt.bench=loads), or (None, why)."""
    log, err = parse_finished(path, LOAD, "loads")
    if log is None:
        return None, err
    return {"loads": [dict(zip(("readers", "runs", "median_ns", "max_ns", "reads", "read_ns"),
                               map(int, m))) for m in log["found"]],
            "cpus": log["cpus"]}, None


MACRO = re.compile(r"BENCH macro ns=(\d+) profiling=(\S+)")
MEMORY = re.compile(r"BENCH memory objext_bytes=(\d+) slab_bytes=(\d+)")
# The boots of the main job's workloads (mt.bench=macro): (key, kernel, profiling, label).
MACRO_BOOTS = [
    ("nomt", "bench-nomt", "never", "without malloc types"),
    ("inline", "bench-inline", "never", "malloc types"),
    ("nomt_profiling", "bench-nomt", "1", "allocation profiling alone"),
    ("inline_profiling", "bench-inline", "1", "malloc types and allocation profiling"),
]
MACRO_LIMIT = 1.02


def parse_macro(path):
    """The workloads' guest ns and the extension vectors' bytes of a mt.bench=macro boot,
    or (None, why)."""
    log, err = parse_finished(path, MACRO, "workloads")
    if log is None:
        return None, err
    mem = MEMORY.search(log["text"])
    if mem is None:
        return None, f"no BENCH memory line (log: {path})"
    ns, _ = log["found"][-1]
    return {"ns": int(ns), "objext_bytes": int(mem.group(1)),
            "slab_bytes": int(mem.group(2))}, None


def macro_table(paths):
    """The main job's workloads on each kernel (paths: {key: log}): the "macro" and "memory"
    objects of bench.json, printed as a table; (None, None) without the base boot."""
    boots, errs = {}, []
    for key, _, _, _ in MACRO_BOOTS:
        if key in paths:
            b, err = parse_macro(paths[key])
            if b is None:
                errs.append(f"{key}: {err}")
            else:
                boots[key] = b
    for e in errs:
        print(f"bench: no workload figures of {e}")
    if "nomt" not in boots:
        return None, None
    base = boots["nomt"]["ns"]
    print("\nThe main job's workloads (200 pipelines; rnull loaded, 8 MiB written and read, unloaded,\n"
          "three times; no Binder in the bench kernels), guest instructions under -icount shift=0, and the\n"
          "per-object records' bytes after them (the kmalloc-no-objext-* caches' bytes in use,\n"
          "where the slab extension vectors that do not fit in a slab's tail are):")
    print(f"  {'':<40}{'instructions':>14}{'/ nomt':>9}{'records':>12}{'of slab':>9}")
    macro = {"unit": "guest ns (-icount shift=0: instructions) of the workloads",
             "limit_ratio_to_nomt": MACRO_LIMIT, "boots": {}}
    memory = {"unit": "bytes of the kmalloc-no-objext-* caches in use after the workloads",
              "boots": {}}
    for key, kernel, prof, label in MACRO_BOOTS:
        b = boots.get(key)
        if b is None:
            continue
        ratio = b["ns"] / base if base else None
        share = b["objext_bytes"] / b["slab_bytes"] if b["slab_bytes"] else None
        print(f"  {label:<40}{b['ns']:>14}{cell(ratio, '.3f'):>9}"
              f"{b['objext_bytes']:>12}{cell(share and share * 100, '.2f'):>8}%")
        macro["boots"][key] = {"kernel": kernel, "profiling": prof, "label": label,
                               "ns": b["ns"], "ratio_to_nomt": ratio}
        memory["boots"][key] = {"kernel": kernel, "profiling": prof, "label": label,
                                "bytes": b["objext_bytes"], "slab_bytes": b["slab_bytes"],
                                "share_of_slab": share}
    r = macro["boots"].get("inline", {}).get("ratio_to_nomt")
    macro["ratio_to_nomt"] = r
    macro["within_limit"] = None if r is None else r <= MACRO_LIMIT
    if r is not None:
        print(f"  malloc types / nomt: {r:.3f} (limit {MACRO_LIMIT}): "
              + ("within" if r <= MACRO_LIMIT else "OVER"))
    mt = memory["boots"].get("inline", {}).get("bytes")
    pr = memory["boots"].get("nomt_profiling", {}).get("bytes")
    memory["malloc_types_bytes"] = mt
    memory["profiling_bytes"] = pr
    memory["no_more_than_profiling"] = None if mt is None or pr is None else mt <= pr
    if mt is not None and pr is not None:
        print(f"  records of malloc types: {mt} bytes, of allocation profiling alone: {pr} bytes")
    return macro, memory


def per_type_cpu(few, many, few_cpus, many_cpus, types=1000):
    """ns per type and CPU of a /proc/malloc_stats read: the difference between two boots."""
    a = {t: ns for p, t, ns in few if p == "/proc/malloc_stats"}.get(types)
    b = {t: ns for p, t, ns in many if p == "/proc/malloc_stats"}.get(types)
    if a is None or b is None or not few_cpus or not many_cpus or many_cpus <= few_cpus:
        return None
    return (b - a) / (types * (many_cpus - few_cpus))


def stacks_table(st, sizes):
    """Prints the cost of a type's kernel stacks (the mt.bench=stacks boot) and returns it for
    the JSON: ns per typed pair in each setup, and per event the cost of recording it, of its
    stack and of each way of reading the stacks."""
    pp = st["per_pair"]

    def ns(scen, s):
        return pp.get((scen, "typed", s))

    print("\nkernel stacks of one type's allocations (bench-inline, a boot of its own; typed "
          "malloc/free, one dtmalloc:malloc event a pair)")
    print(f"{'ns per pair':{W}}" + "".join(f"{size_name(s):>10}" for s in sizes))
    for scen, label in STACKS:
        print(f"{label:{W}.{W}}" + "".join(cell(ns(scen, s), "10.0f") for s in sizes))
    costs = [("event", "15", "0", "the event recorded"),
             ("stack", "13", "15", "its stack recorded"),
             ("dtmalloc_stacks", "11", "0", "event + stack + dtmalloc stacks"),
             ("perf_record", "12", "0", "event + call chain + perf record -g"),
             ("other_type_watched", "14", "0", "another type's stacks read")]
    print(f"{'ns per event':{W}}" + "".join(f"{size_name(s):>10}" for s in sizes))
    out = {"kernel": "bench-inline", "variant": "typed",
           "ns": {SCENARIOS[scen]: {str(s): ns(scen, s) for s in sizes if ns(scen, s) is not None}
                  for scen, _ in STACKS},
           "per_event": {}}
    for key, a, b, label in costs:
        d = [ns(a, s) - ns(b, s) if ns(a, s) is not None and ns(b, s) is not None else None
             for s in sizes]
        print(f"{label:{W}.{W}}" + "".join(cell(v, "10.0f") for v in d))
        out["per_event"][key] = {str(s): v for s, v in zip(sizes, d) if v is not None}
    ts = [s for s in sizes if ns("11", s) and ns("12", s)]
    if ts:
        s = 64 if 64 in ts else ts[0]
        dt, pf = ns("11", s) - ns("0", s), ns("12", s) - ns("0", s)
        cheaper = "dtmalloc stacks (tracefs)" if dt < pf else "perf record -g"
        print(f"per event at {size_name(s)} B: dtmalloc stacks {dt:.0f} ns, perf record -g "
              f"{pf:.0f} ns: {cheaper} is cheaper ({max(dt, pf) / min(dt, pf):.2f}x)")
        out["cheaper"] = cheaper
    # What each reader got of the events: a reader that falls behind loses events (dtmalloc
    # counts them), and its figure then holds less of the reading.
    out["tool_output"] = re.findall(r"BENCH (stacks1[12] .*)", st["text"])
    for line in out["tool_output"]:
        print(f"  {line}")
    return out


def debug_table(dbg, inl, sizes):
    """Prints the bench-debug kernel's pairs beside the bench-inline kernel's (scenario 0) and
    returns them for the JSON: per variant, size and scenario, the median, the ratio to
    bench-inline's median, and whether the two kernels' rounds overlap (each figure within the
    other's range of rounds, widened by the larger of the two spreads)."""
    print("\nfailure injection and memguard per type built in (the bench-debug kernel) against "
          "the bench-inline kernel:\nns per allocate+free pair of a type neither made to fail "
          "nor guarded, and in parentheses the ratio to bench-inline's")
    print(f"{'':{W}}" + "".join(f"{size_name(s):>17}" for s in sizes))
    out = []
    worst = None
    for var, vlabel in DEBUG_VARIANTS:
        base = [inl["per_pair"].get(("0", var, s)) for s in sizes]
        if not any(base):
            continue
        print(f"{vlabel:{W}.{W}}")
        print(f"{'  bench-inline':{W}}" + "".join(
            f"{b:>17.0f}" if b else f"{'-':>17}" for b in base))
        for scen, label in DEBUG:
            cells = []
            for s, b in zip(sizes, base):
                d = dbg["per_pair"].get((scen, var, s))
                if d is None or not b:
                    cells.append(f"{'-':>17}")
                    continue
                lo_b, hi_b, _ = inl["spread"][("0", var, s)]
                lo_d, hi_d, _ = dbg["spread"][(scen, var, s)]
                slack = max(hi_b - lo_b, hi_d - lo_d)
                within = abs(d - b) <= slack
                out.append({"variant": var, "size": s, "scenario": label,
                            "bench_inline_ns": b, "bench_debug_ns": d, "ratio": d / b,
                            "bench_inline_spread_ns": hi_b - lo_b,
                            "bench_debug_spread_ns": hi_d - lo_d, "within_spread": within})
                if var != "kmalloc" and (worst is None or d / b > worst[0]):
                    worst = (d / b, var, s, label)
                cells.append(f"{d:>8.0f} ({d / b:5.3f})" + ("" if within else "*"))
            print(f"{'  ' + label:{W}.{W}}" + "".join(f"{c:>17}" for c in cells))
    print("(* outside the spread of the rounds; kmalloc/kfree has no typed path: its ratio is "
          "what the two kernels differ by otherwise)")
    if worst:
        print(f"largest ratio of a typed pair: {worst[0]:.3f} ({worst[1]} at "
              f"{size_name(worst[2])} B, {worst[3]})")
    return out


def charged_paths(pp, sizes):
    """Prints the charged paths of the bench-inline kernel (CHARGED) as ratios to kmalloc/kfree
    of the kernel without malloc types, and to the attribution floor, with their limits; returns
    them for the JSON, or None without bench-nomt's figures."""
    nomt = {s: pp.get(("7", "kmalloc", s)) for s in sizes}
    floor = {s: pp.get(("0", "attribution_floor", s)) for s in sizes}
    if not any(nomt.values()):
        return None
    print("\ncharged paths (bench-inline): ratio to kmalloc/kfree of bench-nomt; in parentheses "
          f"to the attribution floor (limit {FLOOR_LIMIT} for default and typed_c)")
    print(f"{'':{W}}{'limit':>6}" + "".join(f"{size_name(s):>16}" for s in sizes))
    out = {"kernel": "bench-inline", "base": "kmalloc/kfree of bench-nomt", "paths": []}
    ok = True
    for name, var, scen, limit, label in CHARGED:
        ns = {s: pp.get((scen, var, s)) for s in sizes}
        if not any(ns.values()):
            continue
        r_nomt = {s: ns[s] / nomt[s] for s in sizes if ns[s] and nomt[s]}
        r_floor = {s: ns[s] / floor[s] for s in sizes if ns[s] and floor[s]}
        judged = name in ("default", "typed_c")
        within = all(v <= limit for v in r_nomt.values()) if limit else None
        within_floor = all(v <= FLOOR_LIMIT for v in r_floor.values()) if judged else None
        ok = ok and within is not False and within_floor is not False
        cells = "".join(
            f"{r_nomt[s]:>8.3f} ({r_floor[s]:5.3f})" if s in r_nomt and s in r_floor else
            (f"{r_nomt[s]:>16.3f}" if s in r_nomt else f"{'-':>16}") for s in sizes)
        print(f"{name:{W}.{W}}{limit if limit else '':>6}{cells}")
        out["paths"].append({
            "name": name, "variant": var, "scenario": SCENARIOS.get(scen, scen), "label": label,
            "ns": {str(s): v for s, v in ns.items() if v is not None},
            "ratio_to_nomt": {str(s): v for s, v in r_nomt.items()},
            "ratio_to_attribution_floor": {str(s): v for s, v in r_floor.items()},
            "limit_to_nomt": limit, "within_limit": within,
            "limit_to_attribution_floor": FLOOR_LIMIT if judged else None,
            "within_attribution_floor": within_floor})
    if not out["paths"]:
        print("(no figures of the charged paths)")
        return None
    d = {s: pp.get(("0", "kmalloc", s)) for s in sizes}
    t = {s: pp.get(("0", "typed_c", s)) for s in sizes}
    gap = {str(s): t[s] / d[s] for s in sizes if t[s] and d[s]}
    out["typed_c_to_default"] = gap
    print("typed_c / default: " + ", ".join(f"{k}: {v:.3f}" for k, v in gap.items())
          + " (limit 1.03)")
    out["all_within_limits"] = ok and all(v <= 1.03 for v in gap.values())
    print("all charged paths within their limits" if out["all_within_limits"] else
          "some charged paths are over their limits")
    return out


def cell(v, fmt):
    return f"{v:{fmt}}" if v is not None else f"{'-':>{fmt.split('.')[0]}}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log")
    ap.add_argument("--inline", help="console log of the bench-inline kernel")
    ap.add_argument("--inline-error", help="why the bench-inline kernel has no log")
    ap.add_argument("--readers-cpus", help="console log of a readers-only boot with more CPUs")
    ap.add_argument("--streams", help="console log of a boot with many CPUs "
                    "(mt.bench=streams)")
    ap.add_argument("--loads", help="console log of a boot without -icount "
                    "(mt.bench=loads)")
    ap.add_argument("--default-off", help="console log of a bench-inline boot with "
                    "malloc_types.default_types=0 (scenario 6)")
    ap.add_argument("--nomt", help="console log of the bench-nomt kernel, the bench-inline "
                    "configuration without malloc types (scenario 7)")
    ap.add_argument("--stacks", help="console log of a bench-inline boot measuring the cost "
                    "of a type's kernel stacks (mt.bench=stacks)")
    ap.add_argument("--debug", help="console log of the bench-debug kernel, the bench-inline "
                    "configuration with failure injection and memguard per type "
                    "(mt.bench=debug)")
    for key, kernel, prof, label in MACRO_BOOTS:
        ap.add_argument(f"--macro-{key.replace('_', '-')}", dest=f"macro_{key}",
                        help=f"console log of a mt.bench=macro boot of {kernel}, "
                        f"sysctl.vm.mem_profiling={prof} ({label})")
    ap.add_argument("--json")
    args = ap.parse_args()

    runs = {}
    why = {}
    base, err = parse(args.log)
    if base is None:
        print(f"bench: {err}")
        print(f"bench: FAILED: the bench kernel did not finish the benchmark (log: {args.log})")
        return 1
    runs["bench"] = base
    if args.inline:
        inl, err = parse(args.inline)
        if inl is None:
            why["bench-inline"] = err
        else:
            runs["bench-inline"] = inl
    elif args.inline_error:
        why["bench-inline"] = args.inline_error
    kernels = [(k, short) for k, short in KERNELS if k in runs]
    off_err = []
    for path, scen in ((args.default_off, "6"), (args.nomt, "7")):
        if not path or "bench-inline" not in runs:
            continue
        off, err = parse(path)
        if off is None:
            off_err.append(err)
            continue
        for key in ("per_pair", "spread"):
            runs["bench-inline"][key].update({k: v for k, v in off[key].items() if k[0] == scen})

    sizes = sorted({k[2] for r in runs.values() for k in r["per_pair"]})
    head = "".join(f"{size_name(s):>10}" for s in sizes)
    label_w = W - 8

    def vals(kernel, var, scen):
        return [runs[kernel]["per_pair"].get((scen, var, s)) for s in sizes]

    def ratios(kernel, var, scen):
        # Scenarios 6 and 7 are other boots (7 of another kernel): their own kmalloc is the base.
        base = vals(kernel, "kmalloc", scen if scen in ("6", "7") else "0")
        return [v / b if v is not None and b else None for v, b in zip(vals(kernel, var, scen), base)]

    # kmalloc/kfree in the kernel without malloc types (bench-nomt, scenario 7, kept with the
    # bench-inline kernel's figures): the base of ratio_to_nomt, which stays a base when
    # kmalloc itself is charged.
    nomt_base = [runs.get("bench-inline", {}).get("per_pair", {}).get(("7", "kmalloc", s))
                 for s in sizes]

    def ratios_nomt(kernel, var, scen):
        return [v / b if v is not None and b else None
                for v, b in zip(vals(kernel, var, scen), nomt_base)]

    rows = [(var, scen, label) for var, scen, label in VARIANTS
            if any(v is not None for k, _ in kernels for v in vals(k, var, scen))]

    def table(title, values, fmt):
        """Prints one row per variant and kernel of values(kernel, variant, scenario)."""
        print(title)
        print(f"{'':{W}}{head}")
        for var, scen, label in rows:
            # A kernel without figures for the row (scenarios 6 and 7 exist for bench-inline
            # only) gets no line.
            shown = [(k, short) for k, short in kernels
                     if any(v is not None for v in vals(k, var, scen))]
            for i, (k, short) in enumerate(shown):
                name = label if i == 0 else ""
                print(f"{name:{label_w}.{label_w}}{short:>8}" + "".join(cell(v, fmt) for v in values(k, var, scen)))

    table("\nns per allocate+free pair (guest time under -icount shift=0)\n"
          "helpers: the bench kernel, C helpers called; inline: bench-inline, CONFIG_RUST_INLINE_HELPERS",
          vals, "10.0f")
    table("\nratio to kmalloc/kfree of the same kernel", ratios, "10.3f")
    if any(nomt_base):
        table("\nratio to kmalloc/kfree of the kernel without malloc types (bench-nomt)",
              ratios_nomt, "10.3f")

    def spread(kernel, var, scen):
        """(max - min) / median of the rounds, in percent."""
        out = []
        for s in sizes:
            lo_hi = runs[kernel]["spread"].get((scen, var, s))
            med = runs[kernel]["per_pair"].get((scen, var, s))
            out.append(None if lo_hi is None or not med else (lo_hi[1] - lo_hi[0]) / med * 100)
        return out

    n_rounds = sorted({n for r in runs.values() for _, _, n in r["spread"].values()})
    # busybox's insmod tries finit_module() and, when the module refuses to
    # load (on purpose, once it has reported), init_module(): every scenario
    # runs twice, so there are twice as many measurements as rounds.
    table(f"\nspread of the measurements, (max - min) / median in % (measurements per "
          f"figure: {', '.join(map(str, n_rounds))}; 3 rounds per module load, which busybox's "
          f"insmod makes twice)", spread, "10.1f")

    stacks, stacks_err = parse(args.stacks) if args.stacks else (None, None)
    stacks_json = None
    if stacks is not None:
        stacks_json = stacks_table(stacks, sizes)
    elif stacks_err:
        print(f"\nbench: no figures of the kernel stacks' cost: {stacks_err}")

    # The boots of the readers with more CPUs, of the stream with many CPUs and of the module
    # loads: for the tables and the JSON.
    many, many_err = parse_readers(args.readers_cpus) if args.readers_cpus else (None, None)
    streams, streams_err = parse_streams(args.streams) if args.streams else (None, None)
    if streams is not None:
        streams["per_type_cpu"] = per_type_cpu(runs.get("bench-inline", {}).get("readers", []),
                                               streams["readers"], 2, streams["cpus"])
    loads, loads_err = parse_loads(args.loads) if args.loads else (None, None)

    readers = {}
    for k, _ in kernels:
        for path, types, ns in runs[k]["readers"]:
            readers.setdefault((path, types), {})[k] = ns
    if readers:
        print("\nns per read or update (a stream of N types, 2 CPUs)")
        print(f"{'':{W}}{'types':>6}" + "".join(f"{short:>13}" for _, short in kernels))
        for (path, types), by in sorted(readers.items(), key=lambda x: (x[0][1], x[0][0])):
            print(f"{path:{W}}{types:>6}" + "".join(f"{by.get(k, '-'):>13}" for k, _ in kernels))
        if many is not None:
            print(f"\nns per read or update, {many['cpus']} CPUs (the bench-inline kernel)")
            print(f"{'':{W}}{'types':>6}{'ns':>13}")
            for path, types, ns in sorted(many["readers"], key=lambda x: (x[1], x[0])):
                print(f"{path:{W}}{types:>6}{ns:>13}")
        elif many_err:
            print(f"\nbench: no readers with more CPUs: {many_err}")
        if streams is not None:
            print(f"\nns per read or update, {streams['cpus']} CPUs (possible: "
                  f"{streams['possible']}; the bench-inline kernel)")
            print(f"{'':{W}}{'types':>6}{'ns':>13}")
            for path, types, ns in sorted(streams["readers"], key=lambda x: (x[1], x[0])):
                print(f"{path:{W}}{types:>6}{ns:>13}")
            if streams["per_type_cpu"] is not None:
                print(f"/proc/malloc_stats per type and CPU: {streams['per_type_cpu']:.1f} ns "
                      f"(1000 types, {streams['cpus']} CPUs against 2)")
        elif streams_err:
            print(f"\nbench: no figures of the stream with many CPUs: {streams_err}")
        if loads is not None:
            print(f"\nmodule load+unload of malloc_type_bench_types_1 at 1000 types, "
                  f"{loads['cpus']} CPUs, host ns (no -icount): median, max")
            base = next((ld["median_ns"] for ld in loads["loads"] if ld["readers"] == 0), None)
            for ld in loads["loads"]:
                ratio = f"  x{ld['median_ns'] / base:.2f}" if base else ""
                print(f"  {ld['readers']} readers: {ld['median_ns']:>12} {ld['max_ns']:>12}{ratio}"
                      + (f"   meanwhile {ld['reads']} stream reads of {ld['read_ns']} ns"
                         if ld["readers"] else ""))
        elif loads_err:
            print(f"\nbench: no figures of module loads beside readers: {loads_err}")
        b = runs["bench"]["builtin_types"]
        if b is not None:
            print(f"({b} types are built in; the rest come from the modules malloc_type_bench_types_N)")

    verdict = []
    if "bench-inline" in runs:
        print()
        for var, label in [("typed", "typed malloc/free"), ("typed_c", "typed C pair"),
                           ("typed_box", "typed Box"), ("kbox", "KBox")]:
            for s in [64] if 64 in sizes else sizes[:1]:
                h = runs["bench"]["per_pair"].get(("0", var, s))
                i = runs["bench-inline"]["per_pair"].get(("0", var, s))
                if not h or not i:
                    continue
                hr = ratios("bench", var, "0")[sizes.index(s)]
                ir = ratios("bench-inline", var, "0")[sizes.index(s)]
                faster = "inline helpers are faster" if i < h else (
                    "called helpers are faster" if i > h else "no difference")
                line = (f"{label} at {size_name(s)} B: {h:.0f} ns with the C helpers called, "
                        f"{i:.0f} with them inlined ({(i - h) / h:+.1%}; ratio to kmalloc "
                        f"{hr:.3f} -> {ir:.3f}): {faster}")
                verdict.append({"variant": var, "size": s, "helpers_ns": h, "inline_ns": i,
                                "helpers_ratio": hr, "inline_ratio": ir, "faster": faster})
                print(line)
    elif "bench-inline" in why:
        print(f"\nbench: no bench-inline figures: {why['bench-inline']}")
    for err in off_err:
        print(f"\nbench: no figures of the off switch or its baseline: {err}")
    off_switch = []
    pp = runs.get("bench-inline", {}).get("per_pair", {})
    for s in sizes:
        off, nomt = pp.get(("6", "kbox", s)), pp.get(("7", "kbox", s))
        k_off, k_nomt = pp.get(("6", "kmalloc", s)), pp.get(("7", "kmalloc", s))
        if off and nomt:
            off_switch.append({"size": s, "kbox_default_types_0": off, "kbox_no_malloc_types": nomt,
                               "ratio": off / nomt, "kmalloc_ratio": (k_off / k_nomt)
                               if k_off and k_nomt else None})
    if off_switch:
        print("\nKBox with malloc_types.default_types=0 / KBox in the kernel without malloc types "
              "(bench-inline configuration):")
        print("  " + ", ".join(f"{size_name(o['size'])}: {o['ratio']:.3f}" for o in off_switch))
        print("  kmalloc/kfree, the same two boots: " + ", ".join(
            f"{size_name(o['size'])}: {o['kmalloc_ratio']:.3f}" for o in off_switch
            if o["kmalloc_ratio"] is not None))

    charged = charged_paths(runs.get("bench-inline", {}).get("per_pair", {}), sizes)

    debug_json = None
    if args.debug:
        dbg, dbg_err = parse(args.debug)
        if dbg is None:
            print(f"\nbench: no figures of the bench-debug kernel: {dbg_err}")
        elif "bench-inline" not in runs:
            print("\nbench: no bench-inline figures to set the bench-debug kernel's beside")
        else:
            debug_json = debug_table(dbg, runs["bench-inline"], sizes)

    macro, memory = macro_table({key: getattr(args, f"macro_{key}") for key, _, _, _ in MACRO_BOOTS
                                 if getattr(args, f"macro_{key}")})

    if args.json:
        def kernel_json(k):
            r = runs[k]
            return {
                "pairs": [
                    {"variant": var, "scenario": SCENARIOS.get(scen, scen), "label": label,
                     "ns": {str(s): v for s, v in zip(sizes, vals(k, var, scen)) if v is not None},
                     "min": {str(s): r["spread"][(scen, var, s)][0] for s in sizes
                             if (scen, var, s) in r["spread"]},
                     "max": {str(s): r["spread"][(scen, var, s)][1] for s in sizes
                             if (scen, var, s) in r["spread"]},
                     "measurements": max((r["spread"][(scen, var, s)][2] for s in sizes
                                    if (scen, var, s) in r["spread"]), default=0),
                     "ratio_to_kmalloc": {str(s): v for s, v in zip(sizes, ratios(k, var, scen))
                                          if v is not None},
                     "ratio_to_nomt": {str(s): v for s, v in zip(sizes, ratios_nomt(k, var, scen))
                                       if v is not None}}
                    for var, scen, label in rows
                ],
                "readers": [{"reader": p, "types": t, "ns": ns} for p, t, ns in r["readers"]],
                "builtin_types": r["builtin_types"],
            }
        out = {
            "unit": "ns of guest time per allocate+free pair (-icount shift=0); ns is the median "
                    "of the rounds, min and max their extremes",
            "readers_more_cpus": None if many is None else {
                "kernel": "bench-inline", "cpus": many["cpus"],
                "readers": [{"reader": p, "types": t, "ns": ns} for p, t, ns in many["readers"]]},
            "streams_many_cpus": None if streams is None else {
                "kernel": "bench-inline", "cpus": streams["cpus"],
                "possible": streams["possible"],
                "readers": [{"reader": p, "types": t, "ns": ns} for p, t, ns in streams["readers"]],
                "stream_ns_per_type_and_cpu": streams["per_type_cpu"]},
            "module_loads": None if loads is None else {
                "kernel": "bench-inline", "cpus": loads["cpus"], "clock": "host, no -icount",
                "module": "malloc_type_bench_types_1", "types": 1000, "loads": loads["loads"]},
            "sizes": sizes,
            "kernels": {k: kernel_json(k) for k, _ in kernels},
            "kernel_errors": why,
            "inline_vs_helpers": verdict,
            "off_switch": off_switch,
            "charged_paths": charged,
            "stacks": stacks_json,
            "debug_options": debug_json,
            "macro": macro,
            "memory": memory,
        }
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
        print(f"\nbench: JSON in {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
