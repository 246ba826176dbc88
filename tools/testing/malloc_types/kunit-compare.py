#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Compares a kunit.py run with the KUnit results of a test boot.

    kunit-compare.py KUNIT-JSON CONSOLE-LOG KUNITCONFIG-SUITES...

KUNIT-JSON is what `kunit.py run --json` wrote; CONSOLE-LOG the serial log of
make check's first boot of the test kernel. For each suite named, kunit.py
must have run it, every case must have passed (or been skipped where the boot
skipped it too), and its cases must be exactly those the boot reported for
the suite. One line per suite, and `PASS N FAIL N` (cases of kunit.py passed,
and failures) on the last line.
"""
import json
import sys

# The KTAP lines of KUnit, as judge.py reads them.
from judge import RESULT, SUBTEST, TIMESTAMP


def kunit_py_cases(path):
    """{suite: {case: status}} of a kunit.py JSON result (PASS, SKIP, FAIL, ERROR)."""
    with open(path) as f:
        root = json.load(f)
    suites = {}
    for group in root.get("sub_groups", []):
        cases = {c["name"]: c["status"] for c in group.get("test_cases", [])}
        for sub in group.get("sub_groups", []):
            # A parameterized case: its own status is the worst of its parameters'.
            st = [c["status"] for c in sub.get("test_cases", [])]
            cases[sub["name"]] = next((s for s in ("ERROR", "FAIL") if s in st),
                                      "SKIP" if st and all(s == "SKIP" for s in st) else "PASS")
        suites[group["name"]] = cases
    return suites


def boot_cases(path):
    """{suite: {case: status}} of the KUnit KTAP in a console log."""
    suites, stack = {}, []
    with open(path, errors="replace") as f:
        for line in f:
            line = TIMESTAMP.sub("", line.rstrip("\r\n"))
            m = SUBTEST.match(line)
            if m:
                depth = len(m.group("indent")) // 4
                del stack[depth:]
                stack.append(m.group("name"))
                continue
            m = RESULT.match(line)
            if m and len(m.group("indent")) // 4 == 0:
                # A suite's own result: the suite is over.
                stack.clear()
            elif m and len(m.group("indent")) // 4 == 1 and stack:
                status = "SKIP" if "# SKIP" in m.group("rest") else ("FAIL" if m.group("not") else "PASS")
                suites.setdefault(stack[0], {})[m.group("name")] = status
    return suites


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    try:
        ran = kunit_py_cases(sys.argv[1])
    except (OSError, ValueError, KeyError) as e:
        print(f"kunit.py: no result ({e})")
        print("PASS 0 FAIL 1")
        return 1
    boot = boot_cases(sys.argv[2])
    passed = failed = 0
    for suite in sys.argv[3:]:
        cases = ran.get(suite)
        if cases is None:
            print(f"kunit.py: FAILED: suite {suite} did not run")
            failed += 1
            continue
        bad = sorted(c for c, s in cases.items()
                     if s in ("FAIL", "ERROR") or (s == "SKIP" and boot.get(suite, {}).get(c) != "SKIP"))
        passed += sum(1 for c in cases if c not in bad)
        failed += len(bad)
        theirs = set(boot.get(suite, {}))
        if set(cases) != theirs:
            only_here = sorted(set(cases) - theirs)
            only_boot = sorted(theirs - set(cases))
            print(f"kunit.py: FAILED: {suite}: cases differ from make check's boot: "
                  f"only in kunit.py {only_here[:5]}, only in the boot {only_boot[:5]}")
            failed += 1
        elif bad:
            print(f"kunit.py: FAILED: {suite}: {', '.join(bad[:5])}")
        else:
            print(f"kunit.py: {suite}: {len(cases)} passed, the cases of the boot")
    print(f"PASS {passed} FAIL {failed}")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
