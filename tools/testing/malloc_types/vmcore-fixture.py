#!/usr/bin/env python3
"""Reduces a vmcore to the pages memstat -M reads from it, for a test fixture.

Runs `memstat -M VMCORE --save STREAM` under strace, keeps the notes and
the 4 KiB pages of the PT_LOAD segments that it read (page tables, the
malloc types' vmcoreinfo text, the registry, names, owners, per-CPU
records), and writes them as an ELF core of the same machine with one
PT_LOAD per run of pages, gzip-compressed, beside the stream (also
gzipped). The reduced core reads as the full one did: tools/memstat's
tests read it and require the stream (tests/kvm.rs, real_kernel_cores).

Usage: vmcore-fixture.py MEMSTAT VMCORE OUT-PREFIX
"""
import gzip
import os
import re
import struct
import subprocess
import sys
import tempfile

PAGE = 4096


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.strip().splitlines()[-1])
    memstat, vmcore, prefix = sys.argv[1:]
    with tempfile.TemporaryDirectory() as tmp:
        trace, stream = os.path.join(tmp, "trace"), os.path.join(tmp, "stream")
        subprocess.run(["strace", "-e", "trace=pread64", "-o", trace, memstat, "-M", vmcore,
                        "--save", stream], check=True)
        pages = set()
        with open(trace) as f:
            for line in f:
                m = re.search(r"pread64\(\d+, .*, (\d+), (\d+)\) = \d+", line)
                if m:
                    n, off = map(int, m.groups())
                    pages.update(range(off // PAGE, (off + n - 1) // PAGE + 1))
        with open(stream, "rb") as f:
            data = f.read()
    with open(vmcore, "rb") as f:
        ehdr = f.read(64)
        machine, = struct.unpack_from("<H", ehdr, 18)
        phoff, = struct.unpack_from("<Q", ehdr, 32)
        phnum, = struct.unpack_from("<H", ehdr, 56)
        f.seek(phoff)
        phdrs = [struct.unpack_from("<IIQQQQQQ", f.read(56)) for _ in range(phnum)]
        notes, loads = b"", []
        for ptype, _, off, va, pa, filesz, _, _ in phdrs:
            if ptype == 4:
                f.seek(off)
                notes += f.read(filesz)
            elif ptype == 1:
                run = None
                for p in sorted(x for x in pages if off <= x * PAGE < off + filesz):
                    if run and run[1] == p:
                        run[1] = p + 1
                    else:
                        run = [p, p + 1]
                        loads.append((run, off, va, pa))
        segs = []
        for (first, end), off, va, pa in loads:
            f.seek(first * PAGE)
            body = f.read((end - first) * PAGE)
            delta = first * PAGE - off
            segs.append((va + delta if va else 0, pa + delta, body))
    out = bytearray(64)
    out[:16] = ehdr[:16]
    phnum = 1 + len(segs)
    struct.pack_into("<HHIQQQIHHHHHH", out, 16, 4, machine, 1, 0, 64, 0, 0, 64, 56, phnum, 0, 0, 0)
    at = 64 + 56 * phnum
    ph = struct.pack("<IIQQQQQQ", 4, 0, at, 0, 0, len(notes), len(notes), 4)
    at += len(notes)
    for va, pa, body in segs:
        ph += struct.pack("<IIQQQQQQ", 1, 7, at, va, pa, len(body), len(body), PAGE)
        at += len(body)
    out += ph + notes + b"".join(b for _, _, b in segs)
    for suffix, body in ((".core.gz", bytes(out)), (".stream.gz", data)):
        with open(prefix + suffix, "wb") as f:
            f.write(gzip.compress(body, mtime=0))
    print(f"{prefix}: {len(pages)} pages in {len(segs)} segments, {len(out)} bytes, "
          f"{os.path.getsize(prefix + '.core.gz')} gzipped; stream {len(data)} bytes")


if __name__ == "__main__":
    main()
