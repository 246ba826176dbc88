#!/usr/bin/env python3
"""The vmcore test of make check: QEMU writes a test guest's memory as an ELF
vmcore, and memstat -M must read from it a stream that lies between the two
the guest read just before and just after, with drgn as a second,
independent reader of the same vmcore.

  vmcore.py watch LOG QMP DIR
      Runs beside a boot (run-qemu.sh with MT_QMP=QMP): follows the console
      LOG; on the guest's "MT-VMCORE: dump N" (guest test 78), stops the
      guest through QEMU's QMP socket, has QEMU write DIR/vmcore-N
      (dump-guest-memory, ELF, physical addresses, with the vmcoreinfo note
      that the guest handed QEMU through fw_cfg) and lets the guest go on.
      Ends when the guest is done or QEMU has gone.

  vmcore.py check --dir DIR --log LOG --vmlinux VMLINUX --memstat BIN
                  [--drgn PYTHON] [--other-kernel VMLINUX]
                  [--nomt-kernel BZIMAGE --nomt-vmlinux VMLINUX]
      Judges the last dump of LOG: `memstat -M vmcore -N VMLINUX --save`
      and `memstat -M vmcore` (the vmcoreinfo alone) must write the same
      stream, which must lie between the streams the guest read just before
      and just after the dump (base64 in LOG, SHA-256 checked): the same
      types, and every per-CPU counter between its two values, as the
      counters only grow (every kmalloc of the guest is charged, so they
      move); drgn's reading (vmcore-drgn.py, run by PYTHON) must give the
      same types, ids and counters as memstat -M's. Then bad input, each one clear line on stderr and
      exit status 1: the vmcore cut short, a file that is no core, another
      kernel as -N, and with --nomt-kernel the vmcore of a kernel without
      malloc types (booted here, without an initramfs, to the panic of a
      missing root file system, then dumped through QMP). Prints one line
      per check and "vmcore: P passed, F failed" last; removes the vmcores
      it judged.
"""
import argparse
import base64
import hashlib
import json
import os
import re
import socket
import struct
import subprocess
import sys
import tempfile
import time

MARK = re.compile(r"MT-VMCORE: (dump|b64|sha256|after|sha256a) (\d+)(?: (\S+))?\s*$")


def qmp_connect(path, deadline):
    while True:
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(path)
            break
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.5)
    f = s.makefile("rw")
    json.loads(f.readline())  # the greeting
    qmp(f, "qmp_capabilities")
    return s, f


def qmp(f, cmd, **args):
    """Runs one QMP command and returns its result; events are skipped."""
    msg = {"execute": cmd}
    if args:
        msg["arguments"] = args
    f.write(json.dumps(msg) + "\n")
    f.flush()
    while True:
        line = f.readline()
        if not line:
            raise EOFError("QEMU closed its QMP socket")
        r = json.loads(line)
        if "return" in r:
            return r["return"]
        if "error" in r:
            raise RuntimeError(f"{cmd}: {r['error'].get('desc')}")


def qemu_gone(s):
    """Whether QEMU closed its end of the QMP socket (the guest ended)."""
    try:
        return s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def watch(args):
    os.makedirs(args.dir, exist_ok=True)
    deadline = time.time() + 600
    while not os.path.exists(args.log) and time.time() < deadline:
        time.sleep(0.5)
    try:
        s, f = qmp_connect(args.qmp, deadline)
    except OSError as e:
        print(f"vmcore: no QMP socket {args.qmp}: {e}", file=sys.stderr)
        return 1
    with open(args.log, errors="replace") as log:
        buf = ""
        while True:
            chunk = log.read()
            if not chunk:
                if qemu_gone(s):
                    return 0
                time.sleep(0.1)
                continue
            buf += chunk
            *lines, buf = buf.split("\n")
            for line in lines:
                if "MT-GUEST: done" in line:
                    return 0
                m = MARK.search(line)
                if not m or m.group(1) != "dump":
                    continue
                n = m.group(2)
                out = os.path.join(args.dir, f"vmcore-{n}")
                t0 = time.time()
                try:
                    qmp(f, "stop")
                    if os.path.exists(out):
                        os.unlink(out)
                    qmp(f, "dump-guest-memory", paging=False, protocol=f"file:{out}")
                    qmp(f, "cont")
                except (OSError, EOFError, RuntimeError) as e:
                    print(f"vmcore: dump {n}: {e}", file=sys.stderr)
                    return 1
                print(f"vmcore: dump {n}: {out}, {os.path.getsize(out) >> 20} MiB in "
                      f"{time.time() - t0:.1f} s", file=sys.stderr)


class Checks:
    def __init__(self, label):
        self.label = label
        self.passed = 0
        self.failed = 0

    def ok(self, what):
        self.passed += 1
        print(f"{self.label}ok: {what}")

    def fail(self, what):
        self.failed += 1
        print(f"{self.label}FAIL: {what}")

    def judge(self, cond, what, why=""):
        if cond:
            self.ok(what)
        else:
            self.fail(f"{what}{': ' + why if why else ''}")
        return cond


def guest_stream(log):
    """The streams the guest read just before and just after its last dump:
    (n, before, after), or (None, why, None)."""
    parts = {"b64": {}, "after": {}}
    sha = {"b64": {}, "after": {}}
    last = None
    with open(log, errors="replace") as f:
        for line in f:
            m = MARK.search(line)
            if not m:
                continue
            kind, n, rest = m.groups()
            if kind in parts:
                parts[kind].setdefault(n, []).append(rest or "")
            elif kind == "sha256":
                sha["b64"][n] = rest
            elif kind == "sha256a":
                sha["after"][n] = rest
                last = n
    if last is None:
        return None, "the guest reported no dump with its streams (guest test 78)", None
    n, out = last, []
    for kind in ("b64", "after"):
        try:
            data = base64.b64decode("".join(parts[kind].get(n, [])), validate=True)
        except ValueError as e:
            return None, f"dump {n}: the stream's base64 is damaged: {e}", None
        if hashlib.sha256(data).hexdigest() != sha[kind].get(n):
            return None, f"dump {n}: the stream's SHA-256 does not match (console output mixed in?)", None
        out.append(data)
    return n, out[0], out[1]


def between(before, core, after):
    """Why the stream CORE does not lie between BEFORE and AFTER, or None.

    The three have the same types (names, ids, zones, owners) in the same
    order, and each per-CPU counter of CORE lies between the two others:
    the byte and allocation counters and the failures only grow, and the
    size classes used (mts_size) only gain bits."""
    b, c, a = parse_stream(before), parse_stream(core), parse_stream(after)
    key = lambda t: (t["name"], t["id"], t["zone"], t["owner"])
    if [key(t) for t in b["types"]] != [key(t) for t in a["types"]]:
        return "the types changed between the two reads of the guest"
    if b["maxcpus"] != c["maxcpus"] or [key(t) for t in c["types"]] != [key(t) for t in b["types"]]:
        return (f"{len(c['types'])} types ({c['maxcpus']} CPUs) against "
                f"{len(b['types'])} ({b['maxcpus']} CPUs) read by the guest")
    for tb, tc, ta in zip(b["types"], c["types"], a["types"]):
        for cpu, (sb, sc, sa) in enumerate(zip(tb["stats"], tc["stats"], ta["stats"])):
            for i in (0, 1, 2, 3, 5):
                if not sb[i] <= sc[i] <= sa[i]:
                    return (f"type {tc['name']!r}, CPU {cpu}: counter {i} is {sc[i]}, "
                            f"not between {sb[i]} and {sa[i]}")
            if sb[4] & ~sc[4] or sc[4] & ~sa[4]:
                return f"type {tc['name']!r}, CPU {cpu}: mts_size {sc[4]:#x} not between {sb[4]:#x} and {sa[4]:#x}"
    return None


def parse_stream(data):
    """The stream as vmcore-drgn.py prints it (version 2)."""
    version, maxcpus, count, _ = struct.unpack_from("<4I", data, 0)
    off, types = 16, []
    for _ in range(count):
        name, tid, zone, flags, peak, _, owner = struct.unpack_from("<32sQIIQQ64s", data, off)
        off += 128
        stats = []
        for _ in range(maxcpus):
            stats.append(list(struct.unpack_from("<6Q", data, off)))
            off += 64
        types.append({
            "name": name.split(b"\0")[0].decode("utf-8", "replace"),
            "id": tid, "zone": zone, "flags": flags, "peak": peak,
            "owner": owner.split(b"\0")[0].decode("utf-8", "replace"),
            "stats": stats,
        })
    return {"maxcpus": maxcpus, "types": types}


def dump_nomt(bzimage, out, timeout=300):
    """Boots BZIMAGE (x86_64, no initramfs) until it panics, has QEMU write
    its memory to OUT and ends it. Returns None, or why it could not."""
    sock = out + ".qmp"
    if os.path.exists(sock):
        os.unlink(sock)
    qemu = subprocess.Popen(
        ["qemu-system-x86_64", "-cpu", "max", "-accel", "tcg", "-m", "256M", "-nographic",
         "-no-reboot", "-kernel", bzimage, "-append", "console=ttyS0 panic=0",
         "-qmp", f"unix:{sock},server=on,wait=off", "-device", "vmcoreinfo"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + timeout
        seen = ""
        while "Kernel panic - not syncing" not in seen:
            line = qemu.stdout.readline().decode(errors="replace")
            if not line or time.time() > deadline:
                return f"no panic within {timeout} s: {seen[-300:]!r}"
            seen = (seen + line)[-4000:]
        s, f = qmp_connect(sock, deadline)
        qmp(f, "stop")
        qmp(f, "dump-guest-memory", paging=False, protocol=f"file:{out}")
        qmp(f, "quit")
        s.close()
        return None
    except (OSError, EOFError, RuntimeError) as e:
        return str(e)
    finally:
        qemu.kill()
        qemu.wait()
        if os.path.exists(sock):
            os.unlink(sock)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, timeout=600, **kw)


def table(memstat, path):
    r = run([memstat, "-f", path, "-a", "-l", "-H"])
    return r.stdout.decode(errors="replace")


def check(args):
    c = Checks(args.label)
    n, data, after = guest_stream(args.log)
    if n is None:
        c.fail(data)
        return c
    c.ok(f"the guest read a {len(data)}-byte stream just before dump {n} and a {len(after)}-byte one after it")
    vmcore = os.path.join(args.dir, f"vmcore-{n}")
    if not c.judge(os.path.exists(vmcore), f"QEMU wrote {vmcore}",
                   "no such file (see the watcher's log)"):
        return c
    mib = os.path.getsize(vmcore) >> 20
    with tempfile.TemporaryDirectory() as tmp:
        guest = os.path.join(tmp, "guest.stream")
        with open(guest, "wb") as f:
            f.write(data)
        core = None
        for kernel in ([args.vmlinux], []):
            out = os.path.join(tmp, "core.stream")
            cmd = [args.memstat, "-M", vmcore] + (["-N"] + kernel if kernel else []) + ["--save", out]
            r = run(cmd)
            what = f"memstat -M {os.path.basename(vmcore)} ({mib} MiB){' -N vmlinux' if kernel else ''}"
            if r.returncode != 0:
                c.fail(f"{what}: exit {r.returncode}: {r.stderr.decode(errors='replace').strip()}")
                continue
            with open(out, "rb") as f:
                got = f.read()
            if kernel:
                core = got
            elif core is not None and not c.judge(
                    got == core, f"{what}: the same stream as with -N vmlinux",
                    f"{len(got)} bytes against {len(core)}"):
                continue
            why = between(data, got, after)
            if not c.judge(why is None, f"{what}: {len(parse_stream(got)['types'])} types, "
                           "every counter between the guest's two reads", why):
                print("the guest's /proc/malloc_stats:\n" + table(args.memstat, guest))
                print("memstat -M:\n" + table(args.memstat, out))
        r = run([args.memstat, "-M", vmcore, "-N", args.vmlinux, "-m", "-l", "-H", "--name", "binder*"])
        print(r.stdout.decode(errors="replace"), end="")

        if args.drgn:
            r = run([args.drgn, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                             "vmcore-drgn.py"), vmcore])
            if r.returncode != 0:
                c.fail(f"drgn: exit {r.returncode}: {r.stderr.decode(errors='replace').strip()[-400:]}")
            else:
                drgn = json.loads(r.stdout)
                want = parse_stream(core if core is not None else data)
                same = drgn == want
                why = ""
                if not same:
                    names = {t["name"] for t in want["types"]} ^ {t["name"] for t in drgn["types"]}
                    why = f"{len(drgn['types'])} types against {len(want['types'])}; differing: {sorted(names)[:5]}"
                c.judge(same, f"drgn {run([args.drgn, '-c', 'import drgn; print(drgn.__version__)']).stdout.decode().strip()}"
                        f" reads the same {len(want['types'])} types, ids and per-CPU counters"
                        " from the vmcore as memstat -M", why)

        # Bad input: one line on stderr, exit status 1, nothing on stdout.
        cut = os.path.join(tmp, "vmcore-cut")
        with open(vmcore, "rb") as src, open(cut, "wb") as dst:
            dst.write(src.read(1 << 20))
        junk = os.path.join(tmp, "junk")
        with open(junk, "wb") as f:
            f.write(b"not a core\n" * 100)
        # memstat checks the program headers against the file first: a cut core is refused
        # by the first segment that ends past its end.
        bad = [("the vmcore cut at 1 MiB", [cut, "-N", args.vmlinux], "end past the end of the file"),
               ("a file that is no core", [junk], "not an ELF file"),
               ("the kernel image as the core", [args.vmlinux], "not a core file")]
        if args.other_kernel:
            bad.append(("another kernel as -N", [vmcore, "-N", args.other_kernel], "KVM error"))
        if args.nomt_kernel:
            nomt = os.path.join(tmp, "vmcore-nomt")
            why = dump_nomt(args.nomt_kernel, nomt)
            if c.judge(why is None, "QEMU wrote the vmcore of the kernel without malloc types", why):
                want = "KVM unable to find symbol malloc_type_list"
                bad.append(("the vmcore of a kernel without malloc types", [nomt], want))
                if args.nomt_vmlinux:
                    bad.append(("the same with its vmlinux as -N",
                                [nomt, "-N", args.nomt_vmlinux], want))
        for what, a, want in bad:
            r = run([args.memstat, "-M"] + a)
            err = r.stderr.decode(errors="replace")
            good = (r.returncode == 1 and len(err.splitlines()) == 1 and not r.stdout
                    and want in err and "panicked" not in err)
            c.judge(good, f"{what}: {err.strip()}", f"exit {r.returncode}, stderr {err!r}")
    for f in os.listdir(args.dir):
        if f.startswith("vmcore-"):
            os.unlink(os.path.join(args.dir, f))
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("watch")
    w.add_argument("log")
    w.add_argument("qmp")
    w.add_argument("dir")
    k = sub.add_parser("check")
    k.add_argument("--dir", required=True)
    k.add_argument("--log", required=True)
    k.add_argument("--vmlinux", required=True)
    k.add_argument("--memstat", required=True)
    k.add_argument("--drgn")
    k.add_argument("--other-kernel")
    k.add_argument("--nomt-kernel")
    k.add_argument("--nomt-vmlinux")
    k.add_argument("--label", default="")
    args = ap.parse_args()
    if args.cmd == "watch":
        return watch(args)
    c = check(args)
    print(f"{args.label}vmcore: {c.passed} passed, {c.failed} failed")
    return 0 if c.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
