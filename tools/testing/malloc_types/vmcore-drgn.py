#!/usr/bin/env python3
"""The malloc types of a vmcore, read by drgn: the cross-check of memstat -M.

drgn (https://github.com/osandov/drgn, pinned by setup.sh) opens the core,
translates the kernel's addresses with its own page table walker and finds
the symbols through the kernel's kallsyms (the vmcoreinfo names its tables,
so no debugging information is needed). The layout of struct malloc_type
is written here from include/linux/malloc_type.h, not taken from the
vmcoreinfo lines that memstat -M follows: the two readers share nothing but
the memory they read.

Prints one JSON object: {"maxcpus": N, "types": [{"name", "id", "zone",
"flags", "peak", "owner", "stats": [[memalloced, memfreed, numallocs,
numfrees, size, numfailures] per CPU id]}]} in list order, with the same
rules as the kernel's stream (zeros for CPU ids that are not possible, the
peak only when tracked, MALLOC_TYPE_F_PEAK then set).

Usage: vmcore-drgn.py VMCORE
"""
import json
import sys

import drgn
from drgn.helpers.linux.kallsyms import load_vmlinux_kallsyms

# include/linux/malloc_type.h, LP64 (x86_64 and arm64): struct malloc_type_internal is
# u64 mti_probes[2], u32 mti_zone, u32 mti_flags, the counters (a per-CPU struct
# malloc_type_counters: its six u64 in the order the stream has them), u64 mti_id, the list
# head, char mti_probename[32], the two texts, mti_events, mti_owner, mti_in_use, mti_peak.
KS_SHORTDESC = 0
KS_MTI = 16
MTI_ZONE = KS_MTI + 16
MTI_FLAGS = KS_MTI + 20
MTI_STATS = KS_MTI + 24
MTI_ID = KS_MTI + 32
MTI_LIST = KS_MTI + 40
MTI_EVENTS = KS_MTI + 104
MTI_OWNER = KS_MTI + 112
MTI_PEAK = KS_MTI + 128
MALLOC_TYPE_EV_PEAK = 2
MALLOC_TYPE_F_MODULE = 1
MALLOC_TYPE_F_PEAK = 2
MALLOC_TYPE_F_UNLOADED = 8
# The bits of mti_flags that the stream shows; the others are the kernel's own.
MTI_STREAM_FLAGS = MALLOC_TYPE_F_MODULE | MALLOC_TYPE_F_UNLOADED
U64 = (1 << 64) - 1


def c_string(prog, addr, maxlen):
    out = b""
    while len(out) < maxlen - 1:
        c = prog.read(addr + len(out), 1)
        if c == b"\0":
            break
        out += c
    return out.decode("utf-8", "replace")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    prog = drgn.Program()
    prog.set_core_dump(sys.argv[1])
    prog.register_symbol_finder("vmlinux_kallsyms", load_vmlinux_kallsyms(prog), enable_index=0)
    sym = lambda name: prog.symbol(name).address
    ncpus = prog.read_u32(sym("nr_cpu_ids"))
    offsets = [prog.read_u64(sym("__per_cpu_offset") + 8 * c) for c in range(ncpus)]
    mask = prog.read(sym("__cpu_possible_mask"), (ncpus + 63) // 64 * 8)
    possible = [bool(mask[c // 8] & (1 << (c % 8))) for c in range(ncpus)]
    head = sym("malloc_type_list")
    types = []
    node = prog.read_u64(head)
    while node != head:
        mtp = node - MTI_LIST
        flags = prog.read_u32(mtp + MTI_FLAGS) & MTI_STREAM_FLAGS
        peak = 0
        if prog.read_u64(mtp + MTI_EVENTS) & MALLOC_TYPE_EV_PEAK:
            flags |= MALLOC_TYPE_F_PEAK
            peak = max(0, int.from_bytes(prog.read(mtp + MTI_PEAK, 8), "little", signed=True))
        owner = prog.read_u64(mtp + MTI_OWNER)
        pcpu = prog.read_u64(mtp + MTI_STATS)
        stats = []
        for c in range(ncpus):
            if not possible[c]:
                stats.append([0] * 6)
                continue
            # per_cpu_ptr(): the offset wraps around, as in C.
            at = (pcpu + offsets[c]) & U64
            stats.append([prog.read_u64(at + 8 * i) for i in range(6)])
        types.append({
            "name": c_string(prog, prog.read_u64(mtp + KS_SHORTDESC), 32),
            "id": prog.read_u64(mtp + MTI_ID),
            "zone": prog.read_u32(mtp + MTI_ZONE),
            "flags": flags,
            "peak": peak,
            "owner": c_string(prog, owner, 64) if owner else "",
            "stats": stats,
        })
        node = prog.read_u64(node)
    json.dump({"maxcpus": ncpus, "types": types}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
