//! libmemstat's kvm side (`memstat::kvm`, `memstat -M`) on synthetic cores: the registry read
//! through x86_64 (4 and 5 levels, 2 MiB pages) and arm64 (4 and 16 KiB pages) page tables,
//! from physical (QEMU, kdump) and virtual (`/proc/kcore`) segments, with KASLR's offset, and
//! every kind of bad core giving its error, never a panic.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::vmcore::{
    elf_core, elf_image, phdr, phnum, registry_core, set_phdr, Guest, Paging, Phdr, Record,
    TypeSpec, COUNTERS,
};
use common::{cpu, tmpdir};
use memstat::kvm::Core;
use memstat::stream::{parse_stream, CpuStats, StreamType, FLAG_MODULE, FLAG_PEAK, FLAG_UNLOADED};
use memstat::{AllocatorFilter, Error, ErrorKind, MemoryTypeList};

fn failures(s: CpuStats, n: u64) -> CpuStats {
    CpuStats {
        numfailures: n,
        ..s
    }
}

/// Three types on 3 CPU ids of which 0 and 2 are possible: a built-in one, one of a module
/// with a tracked peak, kept after the module unloaded, one with a NULL owner; CPU 1's records
/// hold garbage that must not be read. `mti_flags` holds bits of the kernel's own
/// (`MALLOC_TYPE_F_RECORDS`, `MALLOC_TYPE_F_RECORDED`), which the stream does not show.
fn specs() -> Vec<TypeSpec> {
    let junk = cpu(u64::MAX, 7, 7, 7, 7);
    vec![
        TypeSpec {
            name: "devbuf".into(),
            id: 3,
            zone: 0,
            flags: KERNEL_ONLY_FLAGS,
            owner: Some("vmlinux".into()),
            peak: None,
            stats: vec![
                cpu(4096, 1024, 3, 1, 1 << 9),
                junk,
                failures(cpu(64, 0, 1, 0, 1 << 3), 2),
            ],
            in_module: false,
        },
        TypeSpec {
            name: "binder txn".into(),
            id: 7,
            zone: 2,
            flags: FLAG_MODULE | FLAG_UNLOADED | KERNEL_ONLY_FLAGS,
            owner: Some("rust_binder_with_a_long_module_name_0123456789_0123456789_abcdefg".into()),
            peak: Some(8192),
            stats: vec![cpu(100, 50, 2, 1, 1 << 5), junk, cpu(0, 0, 0, 0, 0)],
            in_module: true,
        },
        TypeSpec {
            name: "a name of exactly 31 bytes long".into(),
            id: 9,
            zone: 1,
            flags: 0,
            owner: None,
            peak: Some(-5),
            stats: vec![cpu(0, 0, 0, 0, 0), junk, cpu(0, 0, 0, 0, 0)],
            in_module: false,
        },
    ]
}

const POSSIBLE: [bool; 3] = [true, false, true];

/// `MALLOC_TYPE_F_RECORDS | MALLOC_TYPE_F_RECORDED` of `include/linux/malloc_type.h`.
const KERNEL_ONLY_FLAGS: u32 = 0xc000_0000;

/// What the kernel's /proc/malloc_stats would have said about `specs()`.
fn expected() -> Vec<StreamType> {
    specs()
        .into_iter()
        .map(|t| StreamType {
            name: t.name.clone().into_bytes(),
            id: t.id,
            zone: t.zone,
            flags: (t.flags & !KERNEL_ONLY_FLAGS) | if t.peak.is_some() { FLAG_PEAK } else { 0 },
            peak: t.peak.map_or(0, |p| p.max(0) as u64),
            // 63 bytes at most, as strscpy() into mth_owner[64].
            owner: t.owner.map_or(Vec::new(), |o| o.bytes().take(63).collect()),
            stats: t
                .stats
                .iter()
                .zip(POSSIBLE)
                .map(|(s, p)| if p { *s } else { CpuStats::default() })
                .collect(),
        })
        .collect()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn read_core(path: &Path, kernel: Option<&Path>) -> memstat::Result<Vec<StreamType>> {
    let core = Core::open(path, kernel)?;
    let k = core.read_malloc()?;
    let s = parse_stream(&k.stream).expect("read_malloc returns a well-formed stream");
    assert_eq!(s.maxcpus, 3);
    Ok(s.types)
}

const PAGINGS: [Paging; 8] = [
    Paging::X86 {
        levels: 4,
        huge: false,
    },
    Paging::X86 {
        levels: 4,
        huge: true,
    },
    Paging::X86 {
        levels: 5,
        huge: true,
    },
    Paging::Arm64 {
        page_shift: 12,
        va_bits: 48,
    },
    Paging::Arm64 {
        page_shift: 14,
        va_bits: 48,
    },
    Paging::Arm64 {
        page_shift: 12,
        va_bits: 39,
    },
    // make check's arm64 kernel on QEMU's -cpu max: FEAT_LPA2.
    Paging::Arm64 {
        page_shift: 14,
        va_bits: 52,
    },
    Paging::Arm64 {
        page_shift: 16,
        va_bits: 48,
    },
];

#[test]
fn physical_core_through_the_page_tables() {
    let d = tmpdir("kvm-phys");
    for paging in PAGINGS {
        let mut g = Guest::kernel(&specs(), 3, &POSSIBLE, paging);
        let p = write(&d, "vmcore", &g.physical_core());
        assert_eq!(read_core(&p, None).unwrap(), expected(), "{paging:?}");
        // The same lines in the note itself.
        g.malloc_text = None;
        let p = write(&d, "vmcore", &g.physical_core());
        assert_eq!(
            read_core(&p, None).unwrap(),
            expected(),
            "{paging:?}, in the note"
        );
    }
}

#[test]
fn virtual_core_as_proc_kcore_without_page_tables() {
    let d = tmpdir("kvm-virt");
    for paging in PAGINGS {
        let mut g = Guest::kernel(&specs(), 3, &POSSIBLE, paging);
        // Nothing to translate with: every address must be found in a virtual segment.
        g.drop_lines("SYMBOL(swapper_pg_dir)");
        let p = write(&d, "kcore", &g.virtual_core());
        assert_eq!(read_core(&p, None).unwrap(), expected(), "{paging:?}");
    }
}

#[test]
fn the_layout_comes_from_the_vmcoreinfo() {
    let d = tmpdir("kvm-layout");
    let paging = PAGINGS[0];
    // A kernel whose struct malloc_type has 32 more bytes before ks_mti.
    let mut shifted = Guest::kernel_with_mti(&specs(), 3, &POSSIBLE, paging, 48);
    let p = write(&d, "vmcore", &shifted.physical_core());
    assert_eq!(read_core(&p, None).unwrap(), expected());
    // The same memory described with the default layout reads other values, or fails.
    shifted.set_line(
        "OFFSET(malloc_type.ks_mti)",
        "OFFSET(malloc_type.ks_mti)=16",
    );
    let p = write(&d, "vmcore-wrong", &shifted.physical_core());
    assert_ne!(read_core(&p, None).ok(), Some(expected()));
}

/// The counters of `struct malloc_type_counters` in the opposite order.
const REVERSED: Record = Record::Counters {
    size: 48,
    offsets: [40, 32, 24, 16, 8, 0],
};

/// A larger `struct malloc_type_counters`, its counters in no order, junk between them.
const PADDED: Record = Record::Counters {
    size: 104,
    offsets: [88, 8, 56, 40, 72, 24],
};

/// The stream `memstat -M` builds from the core at `p`.
fn stream_of(p: &Path) -> Vec<u8> {
    Core::open(p, None).unwrap().read_malloc().unwrap().stream
}

#[test]
fn the_counters_are_where_the_vmcoreinfo_says() {
    let d = tmpdir("kvm-counters");
    for paging in [PAGINGS[0], PAGINGS[4]] {
        let g = Guest::kernel(&specs(), 3, &POSSIBLE, paging);
        // All the lines, those the note points to among them.
        let text = g.vmcoreinfo.join("\n");
        assert!(
            text.contains("\nNUMBER(MALLOC_TYPE_VMCOREINFO_VERSION)=1\n")
                && !text.contains("SIZE(malloc_type_stats)"),
            "{text}"
        );
        let p = write(&d, "vmcore-default", &g.physical_core());
        assert_eq!(read_core(&p, None).unwrap(), expected(), "{paging:?}");
        let want = stream_of(&p);
        for record in [REVERSED, PADDED] {
            let mut g = Guest::kernel_with_record(&specs(), 3, &POSSIBLE, paging, record);
            let p = write(&d, "vmcore", &g.physical_core());
            assert_eq!(
                read_core(&p, None).unwrap(),
                expected(),
                "{paging:?} {record:?}"
            );
            // Byte for byte the stream of the same counters in the default layout.
            assert!(stream_of(&p) == want, "{paging:?} {record:?}");
            // The same memory described with the default offsets reads other counters.
            for (f, o) in COUNTERS.iter().zip([0, 8, 16, 24, 32, 40]) {
                let key = format!("OFFSET(malloc_type_counters.{f})");
                g.set_line(&key, &format!("{key}={o}"));
            }
            let p = write(&d, "vmcore-wrong", &g.physical_core());
            assert_ne!(read_core(&p, None).ok(), Some(expected()), "{record:?}");
        }
    }
    // memstat -M prints the same of either.
    let default = Guest::kernel(&specs(), 3, &POSSIBLE, PAGINGS[0]);
    let default = write(&d, "default", &default.physical_core());
    let padded = Guest::kernel_with_record(&specs(), 3, &POSSIBLE, PAGINGS[0], PADDED);
    let padded = write(&d, "padded", &padded.physical_core());
    for extra in [&["-m", "-l", "-H"][..], &["--json", "-a"]] {
        let run = |core: &Path| {
            let out = memstat().arg("-M").arg(core).args(extra).output().unwrap();
            common::assert_success(&out);
            out.stdout
        };
        assert!(run(&padded) == run(&default), "{extra:?}");
    }
}

/// A core of a kernel before `NUMBER(MALLOC_TYPE_VMCOREINFO_VERSION)`: the per-CPU record is the
/// stream's `struct malloc_type_stats` (`SIZE(malloc_type_stats)=64`), its counters first.
#[test]
fn the_layout_before_the_vmcoreinfo_version_is_still_read() {
    let d = tmpdir("kvm-legacy");
    let g = Guest::kernel(&specs(), 3, &POSSIBLE, PAGINGS[0]);
    let want = stream_of(&write(&d, "vmcore-default", &g.physical_core()));
    for paging in PAGINGS {
        let mut g = Guest::kernel_with_record(&specs(), 3, &POSSIBLE, paging, Record::Legacy);
        let text = g.vmcoreinfo.join("\n");
        assert!(
            text.contains("SIZE(malloc_type_stats)=64")
                && !text.contains("MALLOC_TYPE_VMCOREINFO_VERSION")
                && !text.contains("malloc_type_counters"),
            "{text}"
        );
        let p = write(&d, "vmcore", &g.physical_core());
        assert_eq!(read_core(&p, None).unwrap(), expected(), "{paging:?}");
        assert!(stream_of(&p) == want, "{paging:?}");
        g.malloc_text = None;
        let p = write(&d, "vmcore", &g.physical_core());
        assert_eq!(
            read_core(&p, None).unwrap(),
            expected(),
            "{paging:?}, in the note"
        );
    }
    // Its size is still required and checked.
    let mut g = Guest::kernel_with_record(&specs(), 3, &POSSIBLE, PAGINGS[0], Record::Legacy);
    g.drop_lines("SIZE(malloc_type_stats)");
    let p = write(&d, "vmcore", &g.physical_core());
    let e = read_core(&p, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::KvmNoSymbol, "{e}");
    assert!(e.to_string().contains("SIZE(malloc_type_stats)"), "{e}");
    g.line("SIZE(malloc_type_stats)=40");
    let p = write(&d, "vmcore", &g.physical_core());
    let e = read_core(&p, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Kvm, "{e}");
    assert!(
        e.to_string()
            .contains("the vmcoreinfo's SIZE(malloc_type_stats) is 40, not 48 to 4096"),
        "{e}"
    );
}

#[test]
fn an_unknown_vmcoreinfo_version_is_refused() {
    let d = tmpdir("kvm-vi-version");
    for (value, found) in [("2", 2), ("0", 0), ("-1", u64::MAX)] {
        // Everything else as version 1 has it: the reader must not guess.
        let mut g = Guest::kernel(&specs(), 3, &POSSIBLE, PAGINGS[0]);
        g.set_line(
            "NUMBER(MALLOC_TYPE_VMCOREINFO_VERSION)",
            &format!("NUMBER(MALLOC_TYPE_VMCOREINFO_VERSION)={value}"),
        );
        let p = write(&d, "vmcore", &g.physical_core());
        let e = read_core(&p, None).unwrap_err();
        assert!(
            matches!(e, Error::VmcoreinfoVersion { found: f, expected: 1, .. } if f == found),
            "{value}: {e:?}"
        );
        assert_eq!(e.kind(), ErrorKind::Version);
        let msg = e.to_string();
        assert!(
            msg.contains(&format!(
                "{}: the vmcoreinfo's NUMBER(MALLOC_TYPE_VMCOREINFO_VERSION) is {found}, this \
                 library reads version 1",
                p.display()
            )),
            "{msg}"
        );
    }
    let mut g = Guest::kernel(&specs(), 3, &POSSIBLE, PAGINGS[0]);
    g.set_line(
        "NUMBER(MALLOC_TYPE_VMCOREINFO_VERSION)",
        "NUMBER(MALLOC_TYPE_VMCOREINFO_VERSION)=2",
    );
    let p = write(&d, "vmcore", &g.physical_core());
    let err = memstat_m_error(&p, None);
    assert!(
        err.contains("Version mismatch")
            && err.contains(
                "NUMBER(MALLOC_TYPE_VMCOREINFO_VERSION) is 2, this library reads version 1"
            ),
        "{err}"
    );
}

/// Each line of version 1's `struct malloc_type_counters` is required, and named when missing.
#[test]
fn every_line_of_the_counters_is_required() {
    let d = tmpdir("kvm-counters-lines");
    let keys = std::iter::once("SIZE(malloc_type_counters)".to_string()).chain(
        COUNTERS
            .iter()
            .map(|f| format!("OFFSET(malloc_type_counters.{f})")),
    );
    for key in keys {
        let mut g = Guest::kernel(&specs(), 3, &POSSIBLE, PAGINGS[0]);
        let before = g.vmcoreinfo.len();
        g.drop_lines(&format!("{key}="));
        assert_eq!(g.vmcoreinfo.len(), before - 1, "{key}");
        let p = write(&d, "vmcore", &g.physical_core());
        let e = read_core(&p, None).expect_err(&key);
        let msg = e.to_string();
        assert_eq!(e.kind(), ErrorKind::KvmNoSymbol, "{key}: {msg}");
        assert!(
            msg.contains(&format!(
                "KVM unable to find symbol {key}: not in the vmcoreinfo"
            )) && msg.contains("NUMBER(MALLOC_TYPE_VMCOREINFO_VERSION)=1"),
            "{key}: {msg}"
        );
        assert!(!msg.contains("without malloc types"), "{key}: {msg}");
    }
}

#[test]
fn the_list_and_the_zones_as_libmemstat_gives_them() {
    let d = tmpdir("kvm-list");
    let g = Guest::kernel(&specs(), 3, &POSSIBLE, PAGINGS[0]);
    let p = write(&d, "vmcore", &g.physical_core());
    let core = Core::open(&p, None).unwrap();
    let mut list = MemoryTypeList::new();
    list.kvm_malloc(&core).unwrap();
    assert_eq!(list.error(), None);
    let t = list.find(AllocatorFilter::Any, "devbuf").unwrap();
    assert_eq!(
        (t.bytes(), t.count(), t.failures()),
        (4096 - 1024 + 64, 3, 2)
    );
    assert_eq!(t.owner(), "vmlinux");
    assert_eq!(list.zones().sizes_in_mask(t.sizemask()), vec![64, 1024]);
    assert!(list.zones().from_kernel());
    let b = list.find(AllocatorFilter::Any, "binder txn").unwrap();
    assert_eq!(b.peak(), Some(8192));
    assert!(b.is_module());
    assert_eq!(core.read_malloc().unwrap().numzones, 1);
}

#[test]
fn kaslr_offset_relocates_the_kernel_image_s_symbols() {
    let d = tmpdir("kvm-image");
    let g0 = Guest::kernel(&specs(), 3, &POSSIBLE, PAGINGS[0]);
    let head: u64 = u64::from_str_radix(
        g0.vmcoreinfo
            .iter()
            .find_map(|l| l.strip_prefix("SYMBOL(malloc_type_list)="))
            .unwrap(),
        16,
    )
    .unwrap();
    let mut g = g0;
    // The vmcoreinfo of an older kernel names no registry: the image's symbol table does,
    // at its link-time address (the runtime one less KASLR's offset).
    g.drop_lines("SYMBOL(malloc_type_list)");
    let bid: Vec<u8> = (0..20).map(|i| 0x11 * (i % 16) as u8).collect();
    let bid_hex: String = bid.iter().map(|b| format!("{b:02x}")).collect();
    g.set_line("BUILD-ID=", &format!("BUILD-ID={bid_hex}"));
    let core = write(&d, "vmcore", &g.physical_core());
    let image = write(
        &d,
        "vmlinux",
        &elf_image(62, &bid, &[("malloc_type_list", head - g.kernel_offset)]),
    );
    assert_eq!(read_core(&core, Some(&image)).unwrap(), expected());
    // Without the image: no symbol.
    let e = read_core(&core, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::KvmNoSymbol, "{e}");
    assert!(e.to_string().contains("malloc_type_list"), "{e}");

    // Another kernel's image: its build ID says so.
    let other = write(&d, "vmlinux-other", &elf_image(62, &[1; 20], &[]));
    let e = Core::open(&core, Some(&other)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Kvm);
    assert!(e.to_string().contains("not the kernel of"), "{e}");
    // An image of another architecture.
    let arm = write(&d, "vmlinux-arm64", &elf_image(183, &bid, &[]));
    assert_eq!(
        Core::open(&core, Some(&arm)).unwrap_err().kind(),
        ErrorKind::Kvm
    );
    // The core given as the image and the image as the core.
    assert!(Core::open(&core, Some(&core))
        .unwrap_err()
        .to_string()
        .contains("not a kernel image"));
    assert!(Core::open(&image, None)
        .unwrap_err()
        .to_string()
        .contains("not a core file"));
}

#[test]
fn a_kernel_without_malloc_types() {
    let d = tmpdir("kvm-nomt");
    let mut g = Guest::kernel(&[], 3, &POSSIBLE, PAGINGS[0]);
    for prefix in [
        "SYMBOL(malloc_type_list)",
        "NUMBER(MALLOC",
        "SIZE(malloc",
        "OFFSET(malloc",
        "MALLOC_TYPE",
    ] {
        g.drop_lines(prefix);
    }
    let p = write(&d, "vmcore", &g.physical_core());
    let e = read_core(&p, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::KvmNoSymbol);
    assert!(e.to_string().contains("without malloc types"), "{e}");
}

#[test]
fn an_empty_registry_is_an_empty_list() {
    let d = tmpdir("kvm-empty");
    let g = Guest::kernel(&[], 3, &POSSIBLE, PAGINGS[1]);
    let p = write(&d, "vmcore", &g.physical_core());
    assert_eq!(read_core(&p, None).unwrap(), vec![]);
}

#[test]
fn another_stream_version_is_a_version_mismatch() {
    let d = tmpdir("kvm-version");
    let mut g = Guest::kernel(&specs(), 3, &POSSIBLE, PAGINGS[0]);
    g.set_line(
        "NUMBER(MALLOC_TYPE_STREAM_VERSION)",
        "NUMBER(MALLOC_TYPE_STREAM_VERSION)=3",
    );
    let p = write(&d, "vmcore", &g.physical_core());
    let e = read_core(&p, None).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Version {
                found: 3,
                expected: 2
            }
        ),
        "{e}"
    );
}

/// More program headers than `e_phnum` holds: `PN_XNUM`, the number in section header 0's
/// `sh_info` (QEMU writes such cores for guests with many memory ranges).
#[test]
fn pn_xnum_gives_the_number_of_program_headers_in_section_header_0() {
    let d = tmpdir("kvm-xnum");
    let g = Guest::kernel(&specs(), 3, &POSSIBLE, PAGINGS[0]);
    let mut b = g.physical_core();
    let phnum = u16::from_le_bytes([b[56], b[57]]);
    let shoff = b.len() as u64;
    let mut sh0 = [0u8; 64];
    sh0[44..48].copy_from_slice(&u32::from(phnum).to_le_bytes());
    b.extend_from_slice(&sh0);
    b[40..48].copy_from_slice(&shoff.to_le_bytes());
    b[56..58].copy_from_slice(&0xffffu16.to_le_bytes());
    b[58..60].copy_from_slice(&64u16.to_le_bytes());
    b[60..62].copy_from_slice(&1u16.to_le_bytes());
    let p = write(&d, "vmcore", &b);
    assert_eq!(read_core(&p, None).unwrap(), expected());
}

#[test]
fn no_vmcoreinfo_note() {
    let d = tmpdir("kvm-nonote");
    let g = Guest::kernel(&specs(), 3, &POSSIBLE, PAGINGS[0]);
    let p = write(&d, "vmcore", &elf_core(62, "", &[(0, 0, g.phys.clone())]));
    let e = Core::open(&p, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Kvm);
    assert!(e.to_string().contains("no VMCOREINFO note"), "{e}");
}

#[test]
fn truncated_cores_are_short_reads_or_not_cores() {
    let d = tmpdir("kvm-trunc");
    let g = Guest::kernel(&specs(), 3, &POSSIBLE, PAGINGS[0]);
    let full = g.physical_core();
    // Cut inside the ELF header, the program headers, the notes, and the memory.
    for cut in [
        0,
        10,
        63,
        64,
        100,
        200,
        1000,
        full.len() / 2,
        full.len() - 1,
    ] {
        let p = write(&d, "vmcore", &full[..cut]);
        match read_core(&p, None) {
            Err(e) => assert!(
                matches!(e.kind(), ErrorKind::Kvm | ErrorKind::KvmShortRead),
                "cut at {cut}: {e}"
            ),
            // Cut where nothing read is.
            Ok(t) => assert_eq!(t, expected(), "cut at {cut}"),
        }
    }
    // The memory of the registry missing altogether.
    let p = write(
        &d,
        "vmcore",
        &elf_core(
            62,
            &g.vmcoreinfo_text(),
            &[(0, 0, g.phys[..0x8000].to_vec())],
        ),
    );
    let e = read_core(&p, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::KvmShortRead, "{e}");
}

#[test]
fn a_list_that_loops_is_corrupt() {
    let d = tmpdir("kvm-loop");
    let mut g = Guest::kernel(&specs(), 3, &POSSIBLE, PAGINGS[0]);
    // The last node points back at the first, not at the head.
    let head = u64::from_str_radix(
        g.vmcoreinfo
            .iter()
            .find_map(|l| l.strip_prefix("SYMBOL(malloc_type_list)="))
            .unwrap(),
        16,
    )
    .unwrap();
    let first = u64::from_le_bytes(g.phys[g.pa(head) as usize..][..8].try_into().unwrap());
    let mut node = first;
    loop {
        let next = u64::from_le_bytes(g.phys[g.pa(node) as usize..][..8].try_into().unwrap());
        if next == head {
            break;
        }
        node = next;
    }
    g.write_u64(node, first);
    let p = write(&d, "vmcore", &g.physical_core());
    let e = read_core(&p, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Kvm);
    assert!(
        e.to_string().contains("does not come back to its head"),
        "{e}"
    );
}

#[test]
fn impossible_vmcoreinfo_values() {
    let d = tmpdir("kvm-values");
    for (prefix, line) in [
        ("SIZE(malloc_type)", "SIZE(malloc_type)=8"),
        (
            "SIZE(malloc_type)",
            "SIZE(malloc_type)=18446744073709551615",
        ),
        (
            "OFFSET(malloc_type_internal.mti_peak)",
            "OFFSET(malloc_type_internal.mti_peak)=-8",
        ),
        (
            "NUMBER(MALLOC_TYPE_NR_CPU_IDS)",
            "NUMBER(MALLOC_TYPE_NR_CPU_IDS)=0",
        ),
        (
            "NUMBER(MALLOC_TYPE_NR_CPU_IDS)",
            "NUMBER(MALLOC_TYPE_NR_CPU_IDS)=99999999999",
        ),
        ("MALLOC_TYPE_ZONE_SIZES", "MALLOC_TYPE_ZONE_SIZES=8,sixteen"),
        ("SYMBOL(swapper_pg_dir)", "SYMBOL(swapper_pg_dir)=zz"),
        ("NUMBER(pgtable_l5_enabled)", "NUMBER(pgtable_l5_enabled)=1"),
        (
            "SYMBOL(malloc_type_vmcoreinfo)",
            "SYMBOL(malloc_type_vmcoreinfo)=10",
        ),
        (
            "LENGTH(malloc_type_vmcoreinfo)",
            "LENGTH(malloc_type_vmcoreinfo)=99999999",
        ),
        (
            "SYMBOL(__per_cpu_offset)",
            "SYMBOL(__per_cpu_offset)=ffffffffffffff00",
        ),
        ("SIZE(malloc_type_counters)", "SIZE(malloc_type_counters)=0"),
        (
            "SIZE(malloc_type_counters)",
            "SIZE(malloc_type_counters)=4097",
        ),
        (
            "OFFSET(malloc_type_counters.mts_size)",
            "OFFSET(malloc_type_counters.mts_size)=41",
        ),
    ] {
        let mut g = Guest::kernel(&specs(), 3, &POSSIBLE, PAGINGS[0]);
        g.set_line(prefix, line);
        let p = write(&d, "vmcore", &g.physical_core());
        let e = read_core(&p, None).expect_err(line);
        assert!(
            matches!(
                e.kind(),
                ErrorKind::Kvm | ErrorKind::KvmShortRead | ErrorKind::KvmNoSymbol
            ),
            "{line}: {e}"
        );
    }
}

/// A small deterministic generator (no dependency for it).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

#[test]
fn corrupt_cores_never_panic() {
    let d = tmpdir("kvm-corrupt");
    let mut rng = Lcg(0x5eed);
    for paging in [PAGINGS[0], PAGINGS[4]] {
        let g = Guest::kernel(&specs(), 3, &POSSIBLE, paging);
        let good = g.physical_core();
        // The headers, the notes and the tables and registry near the start of memory.
        let hot = good.len().min(0x40000);
        for _ in 0..150 {
            let mut b = good.clone();
            for _ in 0..1 + rng.next() % 8 {
                let i = (rng.next() as usize) % hot;
                b[i] = rng.next() as u8;
            }
            let p = write(&d, "vmcore", &b);
            // Any result but a panic; an error is one of the kvm ones.
            if let Err(e) = read_core(&p, None) {
                assert!(
                    matches!(
                        e.kind(),
                        ErrorKind::Kvm
                            | ErrorKind::KvmShortRead
                            | ErrorKind::KvmNoSymbol
                            | ErrorKind::Version
                            | ErrorKind::DataError
                    ),
                    "{e}"
                );
            }
        }
    }
}

fn memstat() -> Command {
    Command::new(env!("CARGO_BIN_EXE_memstat"))
}

#[test]
fn memstat_m_reads_a_core_as_the_kernel() {
    let d = tmpdir("kvm-cli");
    let g = Guest::kernel(&specs(), 3, &POSSIBLE, PAGINGS[2]);
    let core = write(&d, "vmcore", &g.physical_core());
    let stream = write(&d, "stream", &memstat::stream::write_stream(3, &expected()));
    let run = |args: &[&str]| {
        let out = memstat().args(args).output().unwrap();
        common::assert_success(&out);
        String::from_utf8(out.stdout).unwrap()
    };
    let c = core.to_str().unwrap();
    let s = stream.to_str().unwrap();
    for extra in [
        &["-m", "-l", "-H"][..],
        &["--json", "-a"],
        &["--prometheus"],
        &["-s", "memuse", "--name", "b*"],
    ] {
        let from_core = run(&[&["-M", c][..], extra].concat());
        let from_stream = run(&[&["-f", s][..], extra].concat());
        assert_eq!(from_core, from_stream, "{extra:?}");
    }
    assert!(run(&["-M", c, "-m", "-l", "-H"]).contains("devbuf"));
    // --save writes the stream the kernel would have given.
    let saved = d.join("saved");
    run(&["-M", c, "--save", saved.to_str().unwrap()]);
    assert_eq!(
        parse_stream(&std::fs::read(&saved).unwrap()).unwrap().types,
        expected()
    );
}

#[test]
fn memstat_m_errors_are_one_line() {
    let d = tmpdir("kvm-cli-err");
    let g = Guest::kernel(&specs(), 3, &POSSIBLE, PAGINGS[0]);
    let good = g.physical_core();
    let core = write(&d, "vmcore", &good);
    let truncated = write(&d, "truncated", &good[..0x30000]);
    // The memory of the registry missing altogether.
    let nomem = elf_core(
        62,
        &g.vmcoreinfo_text(),
        &[(0, 0, g.phys[..0x8000].to_vec())],
    );
    let nomem = write(&d, "nomem", &nomem);
    let garbage = write(&d, "garbage", b"this is not a core\n");
    let mut nomt = Guest::kernel(&[], 3, &POSSIBLE, PAGINGS[0]);
    nomt.drop_lines("SYMBOL(malloc_type_list)");
    let nomt = write(&d, "nomt", &nomt.physical_core());
    let wrong = write(&d, "vmlinux", &elf_image(62, &[9; 20], &[]));
    let c = core.to_str().unwrap();
    for (args, want) in [
        (vec!["-M", truncated.to_str().unwrap()], "a truncated core?"),
        (vec!["-M", nomem.to_str().unwrap()], "KVM short read"),
        (vec!["-M", garbage.to_str().unwrap()], "not an ELF file"),
        (
            vec!["-M", nomt.to_str().unwrap()],
            "KVM unable to find symbol malloc_type_list",
        ),
        (
            vec!["-M", c, "-N", wrong.to_str().unwrap()],
            "not the kernel of",
        ),
        (
            vec!["-M", "/nonexistent/vmcore"],
            "No such file or directory",
        ),
    ] {
        let out = memstat().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("memstat: ") && err.contains(want),
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty());
    }
    // Usage errors: -N without -M, -M with -f or -z.
    for args in [vec!["-N", c], vec!["-M", c, "-f", c], vec!["-M", c, "-z"]] {
        let out = memstat().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

/// Runs `memstat -M core [-N image]` (at most 10 s) and returns its one-line error, checking
/// that it failed with status 1 and printed nothing else.
fn memstat_m_error(core: &Path, image: Option<&Path>) -> String {
    let mut cmd = memstat();
    cmd.arg("-M").arg(core);
    if let Some(i) = image {
        cmd.arg("-N").arg(i);
    }
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("memstat -M {} did not finish in 10 s", core.display());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{}: {err}", core.display());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("memstat: "), "{err}");
    assert!(out.stdout.is_empty());
    assert!(!err.contains("(os error"), "{err}");
    err
}

/// A directory, a FIFO or a device given as the core or the kernel image is named as what it
/// is: not as a file too short for an ELF header, and a FIFO does not block the command.
#[test]
fn a_core_that_is_not_a_regular_file_is_named() {
    let d = tmpdir("kvm-notfile");
    let g = Guest::kernel(&specs(), 3, &POSSIBLE, PAGINGS[0]);
    let core = write(&d, "vmcore", &g.physical_core());
    let dir = d.join("dir/");
    std::fs::create_dir(&dir).unwrap();
    let fifo = d.join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    for (path, kind) in [
        (dir.as_path(), "a directory"),
        (fifo.as_path(), "a FIFO"),
        (Path::new("/dev/null"), "a character device"),
    ] {
        let err = memstat_m_error(path, None);
        assert!(
            err.contains(&format!("{}: {kind}, not a core file", path.display())),
            "{err}"
        );
        assert!(!err.contains("ELF header"), "{err}");
        let err = memstat_m_error(&core, Some(path));
        assert!(
            err.contains(&format!("{}: {kind}, not a kernel image", path.display())),
            "{err}"
        );
    }
}

/// A `PT_LOAD` that cannot be what it says is reported as itself (its index and why), not as
/// an address that it then fails to give: a short read, or, in a core of virtual segments
/// without page tables, a missing `SYMBOL(swapper_pg_dir)`.
#[test]
fn a_bad_pt_load_is_named() {
    let d = tmpdir("kvm-badload");
    let g = Guest::kernel(&specs(), 3, &POSSIBLE, PAGINGS[0]);
    let physical = g.physical_core();
    let mut nopgd = g;
    nopgd.drop_lines("SYMBOL(swapper_pg_dir)");
    let virt = nopgd.virtual_core();
    // Segment 1 of the virtual core is the kernel image, which holds the registry's head.
    let image = phdr(&virt, 1);
    assert_eq!(image.p_type, 1);
    let p2 = phdr(&physical, 2);
    let p1 = phdr(&physical, 1);
    let end = virt.len() as u64;
    let cases: Vec<(&str, &[u8], usize, Phdr, &str)> = vec![
        (
            "offset past the end",
            &virt,
            1,
            Phdr {
                offset: end + 4096,
                ..image
            },
            "past the end of the file",
        ),
        (
            "file bytes past the end",
            &physical,
            2,
            Phdr {
                filesz: p2.filesz + 4096,
                memsz: p2.memsz + 4096,
                ..p2
            },
            "past the end of the file",
        ),
        (
            "more file than memory",
            &virt,
            1,
            Phdr {
                memsz: image.filesz - 1,
                ..image
            },
            "more than its",
        ),
        (
            "past the top of the address space",
            &virt,
            1,
            Phdr {
                memsz: u64::MAX - 10,
                ..image
            },
            "past the end of the address space",
        ),
        (
            "past 52 bits of physical addresses",
            &physical,
            2,
            Phdr {
                paddr: 1 << 52,
                ..p2
            },
            "52 bits of physical addresses",
        ),
        (
            "two physical segments on the same memory",
            &physical,
            2,
            Phdr {
                paddr: p1.paddr + 0x1000,
                ..p2
            },
            "program headers 1 and 2 (PT_LOAD) both hold physical address 0x1000",
        ),
    ];
    for (what, core, i, h, want) in cases {
        let mut b = core.to_vec();
        set_phdr(&mut b, i, h);
        let p = write(&d, "vmcore", &b);
        let e = Core::open(&p, None)
            .and_then(|c| c.read_malloc())
            .expect_err(what);
        let msg = e.to_string();
        assert_eq!(e.kind(), ErrorKind::Kvm, "{what}: {msg}");
        assert!(msg.contains(want), "{what}: {msg}");
        if !want.starts_with("program headers") {
            assert!(
                msg.contains(&format!("program header {i} (PT_LOAD)")),
                "{what}: {msg}"
            );
        }
        assert!(!msg.contains("swapper_pg_dir"), "{what}: {msg}");
        let err = memstat_m_error(&p, None);
        assert!(err.contains(want), "{what}: {err}");
    }
    // Two segments with the same kernel addresses.
    let mut b = virt.clone();
    let n = phnum(&b);
    let last = phdr(&b, n - 1);
    set_phdr(
        &mut b,
        n - 1,
        Phdr {
            vaddr: image.vaddr + 0x2000,
            ..last
        },
    );
    let p = write(&d, "vmcore", &b);
    let msg = Core::open(&p, None).unwrap_err().to_string();
    assert!(
        msg.contains(&format!(
            "program headers 1 and {} (PT_LOAD) both hold kernel address {:#x}",
            n - 1,
            image.vaddr + 0x2000
        )),
        "{msg}"
    );
    // The same memory described twice alike (QEMU's paging dumps map physical memory so) is
    // not an overlap: segment 1 (the unused first 32 KiB) becomes a part of segment 2.
    let mut b = physical.clone();
    set_phdr(
        &mut b,
        1,
        Phdr {
            offset: p2.offset + 0x3000,
            paddr: p2.paddr + 0x3000,
            filesz: 0x1000,
            memsz: 0x1000,
            ..p1
        },
    );
    let p = write(&d, "vmcore", &b);
    assert_eq!(read_core(&p, None).unwrap(), expected());
    // Memory that QEMU does not dump (outside -f's range, or not RAM that the page tables
    // map): p_offset -1, no bytes in the file; it reads as zeros.
    let mut b = physical.clone();
    set_phdr(
        &mut b,
        1,
        Phdr {
            offset: u64::MAX,
            filesz: 0,
            ..p1
        },
    );
    let p = write(&d, "vmcore", &b);
    assert_eq!(read_core(&p, None).unwrap(), expected());
}

/// A kernel address that no virtual segment holds, in a core of virtual segments without page
/// tables, is not in the core: a short read, not a missing `SYMBOL(swapper_pg_dir)`.
#[test]
fn an_address_in_no_virtual_segment_is_a_short_read() {
    let d = tmpdir("kvm-novseg");
    let mut g = Guest::kernel(&specs(), 3, &POSSIBLE, PAGINGS[0]);
    g.drop_lines("SYMBOL(swapper_pg_dir)");
    g.set_line(
        "SYMBOL(malloc_type_list)",
        "SYMBOL(malloc_type_list)=ffffffffff000000",
    );
    let p = write(&d, "kcore", &g.virtual_core());
    let e = read_core(&p, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::KvmShortRead, "{e}");
    // A core of physical memory has no other way to kernel addresses than the page tables.
    let p = write(&d, "vmcore", &g.physical_core());
    let e = read_core(&p, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Kvm, "{e}");
    assert!(
        e.to_string().contains(&format!(
            "{}: the vmcoreinfo has no SYMBOL(swapper_pg_dir)",
            p.display()
        )),
        "{e}"
    );
}

/// A vmcoreinfo line that is there but whose value is not what it must be is named with its
/// value, not reported as missing ("has no", "a kernel without malloc types?").
#[test]
fn a_malformed_vmcoreinfo_value_is_named() {
    let d = tmpdir("kvm-malformed");
    for (paging, line, want) in [
        (
            PAGINGS[0],
            "SYMBOL(swapper_pg_dir)=zz",
            r#"SYMBOL(swapper_pg_dir) is "zz", not an address"#,
        ),
        (
            PAGINGS[0],
            "SYMBOL(malloc_type_list)=head",
            r#"SYMBOL(malloc_type_list) is "head", not an address"#,
        ),
        (
            PAGINGS[0],
            "SIZE(malloc_type)=-8",
            r#"SIZE(malloc_type) is "-8", not a size"#,
        ),
        (
            PAGINGS[0],
            "OFFSET(malloc_type_internal.mti_peak)=-8",
            r#"OFFSET(malloc_type_internal.mti_peak) is "-8", not an offset"#,
        ),
        (
            PAGINGS[0],
            "NUMBER(MALLOC_TYPE_NR_CPU_IDS)=three",
            r#"NUMBER(MALLOC_TYPE_NR_CPU_IDS) is "three", not a number"#,
        ),
        (
            PAGINGS[0],
            "NUMBER(MALLOC_TYPE_STREAM_VERSION)=99999999999999999999999",
            "NUMBER(MALLOC_TYPE_STREAM_VERSION) is",
        ),
        (
            PAGINGS[0],
            "NUMBER(phys_base)=0xq",
            r#"NUMBER(phys_base) is "0xq", not a number"#,
        ),
        (
            PAGINGS[0],
            "NUMBER(pgtable_l5_enabled)=2",
            "NUMBER(pgtable_l5_enabled) is 2, not 0 or 1",
        ),
        (
            PAGINGS[4],
            "NUMBER(TCR_EL1_T1SZ)=0x40",
            "NUMBER(TCR_EL1_T1SZ) is 64, not 12 to 39",
        ),
        (
            PAGINGS[0],
            "SYMBOL(__per_cpu_offset)=0x-1",
            r#"SYMBOL(__per_cpu_offset) is "0x-1", not an address"#,
        ),
        (
            PAGINGS[0],
            "LENGTH(malloc_type_vmcoreinfo)=-1",
            r#"LENGTH(malloc_type_vmcoreinfo) is "-1", not a length"#,
        ),
        (
            PAGINGS[0],
            "SIZE(malloc_type)=8",
            "SIZE(malloc_type) is 8, too small for malloc_type_internal.mti_zone at byte 24",
        ),
        (
            PAGINGS[0],
            "NUMBER(MALLOC_TYPE_NR_CPU_IDS)=0",
            "NUMBER(MALLOC_TYPE_NR_CPU_IDS) is 0, not 1 to 65536",
        ),
        (
            PAGINGS[0],
            "MALLOC_TYPE_ZONE_SIZES=8,sixteen",
            r#"MALLOC_TYPE_ZONE_SIZES has "sixteen", not a number of bytes"#,
        ),
        (
            PAGINGS[0],
            "NUMBER(MALLOC_TYPE_VMCOREINFO_VERSION)=one",
            r#"NUMBER(MALLOC_TYPE_VMCOREINFO_VERSION) is "one", not a number"#,
        ),
        (
            PAGINGS[0],
            "SIZE(malloc_type_counters)=0",
            "SIZE(malloc_type_counters) is 0, not 8 to 4096",
        ),
        (
            PAGINGS[0],
            "SIZE(malloc_type_counters)=18446744073709551615",
            "SIZE(malloc_type_counters) is 18446744073709551615, not 8 to 4096",
        ),
        (
            PAGINGS[0],
            "SIZE(malloc_type_counters)=-48",
            r#"SIZE(malloc_type_counters) is "-48", not a size"#,
        ),
        (
            PAGINGS[0],
            "SIZE(malloc_type_counters)=40",
            "SIZE(malloc_type_counters) is 40, too small for \
             malloc_type_counters.mts_numfailures at byte 40",
        ),
        (
            PAGINGS[0],
            "OFFSET(malloc_type_counters.mts_size)=44",
            "SIZE(malloc_type_counters) is 48, too small for malloc_type_counters.mts_size at \
             byte 44",
        ),
        (
            PAGINGS[0],
            "OFFSET(malloc_type_counters.mts_memalloced)=18446744073709551615",
            "SIZE(malloc_type_counters) is 48, too small for \
             malloc_type_counters.mts_memalloced at byte 18446744073709551615",
        ),
        (
            PAGINGS[0],
            "OFFSET(malloc_type_counters.mts_numfrees)=-8",
            r#"OFFSET(malloc_type_counters.mts_numfrees) is "-8", not an offset"#,
        ),
    ] {
        let mut g = Guest::kernel(&specs(), 3, &POSSIBLE, paging);
        g.set_line(&line[..line.find('=').unwrap() + 1], line);
        let p = write(&d, "vmcore", &g.physical_core());
        let e = read_core(&p, None).expect_err(line);
        let msg = e.to_string();
        assert_eq!(e.kind(), ErrorKind::Kvm, "{line}: {msg}");
        assert!(
            msg.contains(&format!("{}: the vmcoreinfo's {want}", p.display())),
            "{line}: {msg}"
        );
        for wrong in ["has no", "not in the vmcoreinfo", "without malloc types"] {
            assert!(!msg.contains(wrong), "{line}: {msg}");
        }
    }
    // KASLR's offset, which relocates a kernel image's symbols.
    let mut g = Guest::kernel(&specs(), 3, &POSSIBLE, PAGINGS[0]);
    g.drop_lines("SYMBOL(malloc_type_list)");
    g.set_line("KERNELOFFSET=", "KERNELOFFSET=kaslr");
    let bid = [5u8; 20];
    let hex: String = bid.iter().map(|b| format!("{b:02x}")).collect();
    g.set_line("BUILD-ID=", &format!("BUILD-ID={hex}"));
    let core = write(&d, "vmcore", &g.physical_core());
    let image = write(
        &d,
        "vmlinux",
        &elf_image(62, &bid, &[("malloc_type_list", 0xffff_ffff_8100_1000)]),
    );
    let msg = read_core(&core, Some(&image)).unwrap_err().to_string();
    assert!(
        msg.contains(r#"the vmcoreinfo's KERNELOFFSET is "kaslr", not an address"#),
        "{msg}"
    );
    // One of the two lines that point to the malloc types' text in memory.
    let g = Guest::kernel(&specs(), 3, &POSSIBLE, PAGINGS[0]);
    let text: String = g
        .vmcoreinfo_text()
        .lines()
        .filter(|l| !l.starts_with("SYMBOL(malloc_type_vmcoreinfo)"))
        .map(|l| format!("{l}\n"))
        .collect();
    let p = write(
        &d,
        "vmcore",
        &elf_core(62, &text, &[(0, 0, g.phys.clone())]),
    );
    let msg = read_core(&p, None).unwrap_err().to_string();
    assert!(
        msg.contains("has only one of SYMBOL(malloc_type_vmcoreinfo) and LENGTH"),
        "{msg}"
    );
}

/// Notes that are malformed before a VMCOREINFO note is found are the reason there is none.
#[test]
fn a_malformed_note_is_named() {
    let d = tmpdir("kvm-badnote");
    let g = Guest::kernel(&specs(), 3, &POSSIBLE, PAGINGS[0]);
    let mut b = g.physical_core();
    let note = phdr(&b, 0);
    assert_eq!(note.p_type, 4);
    // The first note (CORE) claims more bytes than the segment has.
    let at = note.offset as usize + 4;
    b[at..at + 4].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
    let p = write(&d, "vmcore", &b);
    let msg = Core::open(&p, None).unwrap_err().to_string();
    assert!(
        msg.contains("no VMCOREINFO note: program header 0 (PT_NOTE): note 0 is malformed"),
        "{msg}"
    );
    assert!(!msg.contains("CONFIG_VMCORE_INFO"), "{msg}");
    // A note segment past the end of the file.
    let mut b = g.physical_core();
    set_phdr(
        &mut b,
        0,
        Phdr {
            offset: 1 << 40,
            ..note
        },
    );
    let p = write(&d, "vmcore", &b);
    let msg = Core::open(&p, None).unwrap_err().to_string();
    assert!(
        msg.contains("program header 0 (PT_NOTE): its") && msg.contains("past the end"),
        "{msg}"
    );
}

/// What is wrong with a kernel image's sections is said, not reported later as a missing
/// symbol or build ID.
#[test]
fn a_bad_kernel_image_section_is_named() {
    let d = tmpdir("kvm-badimage");
    let mut g = Guest::kernel(&specs(), 3, &POSSIBLE, PAGINGS[0]);
    let bid = [7u8; 20];
    let hex: String = bid.iter().map(|b| format!("{b:02x}")).collect();
    g.set_line("BUILD-ID=", &format!("BUILD-ID={hex}"));
    let core = write(&d, "vmcore", &g.physical_core());
    let good = elf_image(62, &bid, &[("malloc_type_list", 0x1000)]);
    let shoff = u64::from_le_bytes(good[40..48].try_into().unwrap()) as usize;
    // Section headers: 0 null, 1 the build ID note, 2 the symbols, 3 their strings.
    let sh = |b: &mut Vec<u8>, i: usize, field: usize, v: u64| {
        let at = shoff + 64 * i + field;
        let n = if field == 40 { 4 } else { 8 };
        b[at..at + n].copy_from_slice(&v.to_le_bytes()[..n]);
    };
    // (what, section, field offset in its header, value, message)
    for (what, i, field, v, want) in [
        (
            "a note section past the end",
            1,
            24,
            1 << 30,
            "section 1 (SHT_NOTE): its",
        ),
        (
            "a symbol table larger than read",
            2,
            32,
            1 << 40,
            "section 2 (SHT_SYMTAB) is 1099511627776 bytes, more than the",
        ),
        (
            "a symbol table linked to no string table",
            2,
            40,
            1,
            "section 2 (SHT_SYMTAB) links to section 1, which is not a string table",
        ),
        (
            "strings past the end",
            3,
            24,
            1 << 30,
            "section 3 (SHT_STRTAB): its",
        ),
    ] {
        let mut b = good.clone();
        sh(&mut b, i, field, v);
        let image = write(&d, "vmlinux", &b);
        let e = Core::open(&core, Some(&image)).unwrap_err();
        let msg = e.to_string();
        assert_eq!(e.kind(), ErrorKind::Kvm, "{what}: {msg}");
        assert!(
            msg.contains(&format!("{}: {want}", image.display())),
            "{what}: {msg}"
        );
        let err = memstat_m_error(&core, Some(&image));
        assert!(err.contains(want), "{what}: {err}");
    }
}

/// A core that shrinks after it was opened reads as such, not as memory it does not hold.
#[test]
fn a_core_truncated_while_read_is_named() {
    let d = tmpdir("kvm-shrink");
    let g = Guest::kernel(&specs(), 3, &POSSIBLE, PAGINGS[0]);
    let p = write(&d, "vmcore", &g.physical_core());
    let core = Core::open(&p, None).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&p)
        .unwrap()
        .set_len(0x9000)
        .unwrap();
    let msg = core.read_malloc().unwrap_err().to_string();
    assert!(msg.contains("truncated while being read"), "{msg}");
}

/// Runs `memstat -M core` (at most 10 s) with its address space limited to `limit` bytes
/// (`setrlimit` in the child, as `ulimit -v` does): its exit status (`None` when a signal
/// ended it), its standard error, and its peak resident set in KiB (`wait4`'s `ru_maxrss`).
// The child is reaped by wait4, which gives its resource usage, not by Child::wait.
#[allow(clippy::zombie_processes)]
fn memstat_m_limited(core: &Path, limit: u64) -> (Option<i32>, String, i64) {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    let mut cmd = memstat();
    cmd.arg("-M")
        .arg(core)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let r = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let pid = child.id() as libc::pid_t;
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        stderr.read_to_string(&mut s).unwrap();
        s
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut status = 0;
    // SAFETY: a plain C struct, all zeros is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: pid is our child, status and ru are valid for writes.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        if r == pid {
            break;
        }
        assert_eq!(r, 0, "wait4");
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("memstat -M {} did not finish in 10 s", core.display());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let err = reader.join().unwrap();
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    (code, err, ru.ru_maxrss)
}

/// The peak resident set of this process, in KiB (`VmHWM`).
fn own_peak_rss() -> i64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// The ways a small core can claim a registry of 100 types on 65536 CPU ids whose statistics
/// are in memory of zeros that takes no bytes of the file (`p_memsz > p_filesz`): the stream of
/// that would be 420 MB, the list built from it five times that (2.4 GB in all).
fn cores_claiming_65536_cpus() -> Vec<(&'static str, Vec<u8>, &'static str)> {
    let n = 65536;
    vec![
        (
            "no possible CPU",
            registry_core(100, n, Some(&[]), &[]),
            "__cpu_possible_mask has no possible CPU among the 65536 CPU ids",
        ),
        (
            "CPU 0 possible only",
            registry_core(100, n, Some(&[0]), &[]),
            "NUMBER(MALLOC_TYPE_NR_CPU_IDS) is 65536, but the last possible CPU \
             in __cpu_possible_mask is 0",
        ),
        (
            "every CPU possible, all at the same per-CPU offset",
            registry_core(100, n, None, &[]),
            "CPUs 0 and 1 have the same per-CPU offset",
        ),
        (
            "CPUs 0 and 65535 possible, at their own offsets",
            registry_core(100, n, Some(&[0, 65535]), &[(65535, 64)]),
            "more than 15 malloc types of 65536 CPU ids: their stream would be more than \
             the 64 MiB",
        ),
    ]
}

/// A core of less than 128 KiB must not cost more memory than what it holds and the documented cap
/// allow: each way of claiming 65536 CPU ids is refused with exit status 1 and one line, in
/// little memory, and under `ulimit -v` without an abort.
#[test]
fn a_small_core_cannot_make_the_reader_allocate_gigabytes() {
    let d = tmpdir("kvm-cpus");
    for (what, core, want) in cores_claiming_65536_cpus() {
        assert!(core.len() < 128 << 10, "{what}: {} bytes", core.len());
        let p = write(&d, "vmcore", &core);
        // A safety net (4 GiB), then as `ulimit -v 262144`.
        for limit in [4u64 << 30, 256 << 20] {
            let (code, err, rss) = memstat_m_limited(&p, limit);
            assert_eq!(code, Some(1), "{what}, limit {limit}: {err}");
            assert_eq!(err.lines().count(), 1, "{what}: {err}");
            assert!(
                err.starts_with("memstat: KVM error: ") && err.contains(want),
                "{what}: {err}"
            );
            // The child's ru_maxrss also counts what it had before its exec: the peak of
            // this test process, whose memory it was forked with.
            let bound = (64 << 10).max(own_peak_rss());
            assert!(
                rss <= bound,
                "{what}: peak RSS {rss} KiB, more than {bound}"
            );
        }
    }
}

/// The cap leaves room for a large machine's registry: 1000 types on 1024 possible CPUs (a
/// stream of 63 MiB) read; one type more than the cap allows is refused.
#[test]
fn a_large_registry_reads_up_to_the_cap() {
    let d = tmpdir("kvm-large");
    let all: Vec<u64> = (0..1024).collect();
    let offsets: Vec<(u64, u64)> = all.iter().map(|&c| (c, 8 * c)).collect();
    let p = write(
        &d,
        "vmcore",
        &registry_core(1000, 1024, Some(&all), &offsets),
    );
    let k = Core::open(&p, None).unwrap().read_malloc().unwrap();
    assert_eq!(
        k.stream.len(),
        memstat::stream::expected_len(1000, 1024).unwrap()
    );
    assert!(k.stream.len() <= memstat::kvm::MAX_STREAM);
    let s = parse_stream(&k.stream).unwrap();
    assert_eq!((s.maxcpus, s.types.len()), (1024, 1000));
    // The most types of 1024 CPU ids that fit, and one more.
    let fit = (memstat::kvm::MAX_STREAM - 16) / (128 + 64 * 1024);
    let p = write(
        &d,
        "vmcore",
        &registry_core(fit as u64 + 1, 1024, Some(&all), &offsets),
    );
    let e = Core::open(&p, None).unwrap().read_malloc().unwrap_err();
    assert!(
        e.to_string()
            .contains(&format!("more than {fit} malloc types of 1024 CPU ids")),
        "{e}"
    );
}

/// Cores of real kernels, reduced to the pages `memstat -M` reads
/// (`tools/testing/malloc_types/vmcore-fixture.py` on a vmcore of make check's test guest, after
/// guest test 78's workload), with the stream the guest read just before the dump: the x86_64
/// test kernel (5-level paging, KASLR, `rnull_mod`'s types in module memory) and the arm64 one
/// (16 KiB pages, 52-bit addresses with FEAT_LPA2 on QEMU's `-cpu max`, KASLR).
#[test]
fn real_kernel_cores() {
    use std::io::Read;
    let d = tmpdir("kvm-real");
    let dir = common::fixture("kvm");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        let Some(stem) = path.to_str().unwrap().strip_suffix(".core.gz") else {
            continue;
        };
        let gunzip = |p: &Path| {
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(std::fs::File::open(p).unwrap())
                .read_to_end(&mut out)
                .unwrap();
            out
        };
        let core = write(&d, "core", &gunzip(&path));
        let want = gunzip(Path::new(&format!("{stem}.stream.gz")));
        let k = Core::open(&core, None).unwrap().read_malloc().unwrap();
        assert!(
            k.stream == want,
            "{}: not the guest's stream",
            path.display()
        );
        assert!(k.zones.from_kernel());
        n += 1;
    }
    assert!(n >= 1, "no fixture in {}", dir.display());
}
