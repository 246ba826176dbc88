#!/usr/bin/env python3
"""Judges a guest's serial console log.

Reads the KTAP that KUnit printed (built-in suites at boot, module suites
when their module loads) and the MT-GUEST lines of the guest's test runner,
and fails on:
  - any `not ok` test case or suite;
  - a suite listed in the expected-suites file that never reported;
  - a kernel oops, BUG, WARNING, KASAN, UBSAN or lockdep report, or a
    panic, anywhere in the log, but for the reports a KUnit suite or a
    guest test makes on purpose (EXPECTED_REPORTS): within that suite's
    KTAP, or from a guest test's line "MT-GUEST: expect NAME" to its
    result;
  - a guest that never reported that it was done.

Prints one line per failure, a summary line, and `PASS N FAIL N` counts on
the last line for the caller to add up. Exit status 0 when all is well.
"""
import argparse
import re
import sys

TIMESTAMP = re.compile(r"^\[\s*\d+\.\d+\]\s?")
RESULT = re.compile(r"^(?P<indent>\s*)(?P<not>not )?ok (?P<num>\d+) (?P<name>[^#\s]+)(?P<rest>.*)$")
SUBTEST = re.compile(r"^(?P<indent>\s*)# Subtest: (?P<name>\S+)")
GUEST = re.compile(r"^MT-GUEST: (?P<not>not )?ok (?P<num>\d+) (?P<name>\S+)")
GUEST_DONE = re.compile(r"^MT-GUEST: done\b")
GUEST_PLAN = re.compile(r"^MT-GUEST: 1\.\.(?P<n>\d+)$")
# The kselftest's KTAP (guest test 80-kselftest), prefixed: top-level results.
KSFT = re.compile(r"^MT-KSELFTEST: (?P<not>not )?ok (?P<num>\d+) (?P<desc>.*)$")
KSFT_PLAN = re.compile(r"^MT-KSELFTEST: 1\.\.(?P<n>\d+)")
# Reports the kernel prints when something went wrong. Each is a failure
# wherever it appears, whichever code caused it.
KERNEL_BAD = [
    (re.compile(r"\bBUG: "), "BUG"),
    (re.compile(r"^WARNING: "), "WARNING"),
    (re.compile(r"\bKASAN\b.*\b(?:BUG|out-of-bounds|use-after-free|double-free|invalid-free)"), "KASAN report"),
    (re.compile(r"\bUBSAN: "), "UBSAN report"),
    (re.compile(r"Oops[: ]"), "Oops"),
    (re.compile(r"general protection fault"), "general protection fault"),
    (re.compile(r"Kernel panic - not syncing"), "kernel panic"),
    (re.compile(r"possible (?:circular|recursive) locking|inconsistent lock state|"
                r"lock held when returning|suspicious RCU usage|"
                r"Invalid wait context|bad unlock balance"), "lockdep report"),
    (re.compile(r"^rust_kernel: panicked at"), "Rust panic"),
]
# The reports a suite makes on purpose and checks itself: memguard's KUnit
# suite overflows, uses after free and frees twice a guarded block, and
# expects memguard's report of each (mm/malloc_type_selection_test.c).
EXPECTED_REPORTS = {
    "malloc_type_memguard": re.compile(r"\bBUG: memguard: "),
}
# The same for guest tests: guest test 74 loads a module that makes a
# memory bug of a guarded type, and checks memguard's report itself.
GUEST_EXPECT = re.compile(r"^MT-GUEST: expect (?P<name>.+)$")
GUEST_EXPECTED_REPORTS = {
    "memguard reports": re.compile(r"\bBUG: memguard: "),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log")
    ap.add_argument("--suites", help="file listing the KUnit suites that must report")
    ap.add_argument("--mode", default="check", choices=["check", "run"])
    args = ap.parse_args()

    try:
        with open(args.log, errors="replace") as f:
            lines = [TIMESTAMP.sub("", l.rstrip("\r\n")) for l in f]
    except OSError as e:
        print(f"judge: cannot read {args.log}: {e.strerror}")
        print("PASS 0 FAIL 1")
        return 1

    failures = []
    passed = failed = skipped = 0
    suites = {}  # name -> True (ok) / False (not ok)
    suite_stack = []  # names of the suites open at each depth
    guest_pass = guest_fail = 0
    guest_done = False
    guest_plan = None
    ksft_plan = None
    ksft_pass = ksft_fail = ksft_skip = 0
    bad_seen = set()

    guest_expected = None
    for line in lines:
        expected = EXPECTED_REPORTS.get(suite_stack[0] if suite_stack else None)
        if expected and expected.search(line):
            continue
        if guest_expected and guest_expected.search(line):
            continue
        m = GUEST_EXPECT.match(line)
        if m:
            guest_expected = GUEST_EXPECTED_REPORTS.get(m.group("name"))
            if not guest_expected:
                failures.append(f"guest: unknown expectation '{m.group('name')}'")
            continue
        for pat, what in KERNEL_BAD:
            if pat.search(line):
                if what not in bad_seen:
                    failures.append(f"kernel: {what}: {line.strip()}")
                bad_seen.add(what)
        m = SUBTEST.match(line)
        if m:
            depth = len(m.group("indent")) // 4
            del suite_stack[depth:]
            suite_stack.append(m.group("name"))
            continue
        m = RESULT.match(line)
        if m:
            depth = len(m.group("indent")) // 4
            ok = not m.group("not")
            name = m.group("name")
            skip = "# SKIP" in m.group("rest")
            if depth == 0:
                # A suite's own result line.
                suites[name] = ok and suites.get(name, True)
                if not ok:
                    failures.append(f"kunit: suite {name} not ok")
                del suite_stack[0:]
            elif depth == 1:
                # A test case; deeper levels are parameters of a case.
                suite = suite_stack[0] if suite_stack else "?"
                if skip:
                    skipped += 1
                elif ok:
                    passed += 1
                else:
                    failed += 1
                    failures.append(f"kunit: {suite}: not ok {name}")
            continue
        m = GUEST.match(line)
        if m:
            guest_expected = None
            if m.group("not"):
                guest_fail += 1
                failures.append(f"guest: not ok {m.group('name')}")
            else:
                guest_pass += 1
            continue
        if GUEST_DONE.match(line):
            guest_done = True
            continue
        m = GUEST_PLAN.match(line)
        if m:
            guest_plan = int(m.group("n"))
            continue
        m = KSFT_PLAN.match(line)
        if m:
            ksft_plan = int(m.group("n"))
            continue
        m = KSFT.match(line)
        if m:
            desc = m.group("desc")
            if re.search(r"#\s*SKIP", desc, re.I):
                ksft_skip += 1
            elif m.group("not"):
                ksft_fail += 1
                failures.append(f"kselftest: not ok {m.group('num')} {desc}")
            else:
                ksft_pass += 1

    if args.suites:
        try:
            with open(args.suites) as f:
                expected = [s.strip() for s in f if s.strip() and not s.startswith("#")]
        except OSError:
            expected = []
        for s in expected:
            if s not in suites:
                failures.append(f"kunit: suite {s} never reported")
                failed += 1
    if not guest_done:
        last = next((l for l in reversed(lines) if l.strip()), "(empty log)")
        failures.append(f"guest: never reported that it was done; last line: {last.strip()}")
        failed += 1

    if guest_plan is not None and guest_done and guest_plan != guest_pass + guest_fail:
        failures.append(f"guest: planned {guest_plan} tests, {guest_pass + guest_fail} reported")
        failed += 1
    ksft_ran = ksft_pass + ksft_fail + ksft_skip
    if ksft_plan is not None and ksft_plan != ksft_ran:
        failures.append(f"kselftest: planned {ksft_plan} tests, {ksft_ran} reported")
        failed += 1

    for f in failures:
        print(f"  FAIL {f}")
    total_pass = passed + guest_pass + ksft_pass
    total_fail = failed + guest_fail + ksft_fail + (1 if bad_seen else 0)
    print(f"kunit: {len(suites)} suites, {passed} passed, {failed} failed, {skipped} skipped; "
          f"guest tests: {guest_pass} passed, {guest_fail} failed"
          + (f"; kselftest: {ksft_pass} passed, {ksft_fail} failed, {ksft_skip} skipped"
             if ksft_plan is not None or ksft_ran else ""))
    print(f"PASS {total_pass} FAIL {total_fail}")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
