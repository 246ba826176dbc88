//! libmemstat's kvm side (`memstat::kvm`, `memstat -M`) on synthetic cores: the registry read
//! through x86_64 (4 and 5 levels, 2 MiB pages) and arm64 (4 and 16 KiB pages) page tables,
//! from physical (QEMU, kdump) and virtual (`/proc/kcore`) segments, with KASLR's offset, and
//! every kind of bad core giving its error, never a panic.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::vmcore::{elf_core, elf_image, Guest, Paging, TypeSpec};
use common::{cpu, tmpdir};
use memstat::kvm::Core;
use memstat::stream::{parse_stream, CpuStats, StreamType, FLAG_MODULE, FLAG_PEAK};
use memstat::{AllocatorFilter, Error, ErrorKind, MemoryTypeList};

fn failures(s: CpuStats, n: u64) -> CpuStats {
    CpuStats {
        numfailures: n,
        ..s
    }
}

/// Three types on 3 CPU ids of which 0 and 2 are possible: a built-in one, one of a module
/// with a tracked peak, one with a NULL owner; CPU 1's records hold garbage that must not be
/// read.
fn specs() -> Vec<TypeSpec> {
    let junk = cpu(u64::MAX, 7, 7, 7, 7);
    vec![
        TypeSpec {
            name: "devbuf".into(),
            id: 3,
            zone: 0,
            flags: 0,
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
            flags: FLAG_MODULE,
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

/// What the kernel's /proc/malloc_stats would have said about `specs()`.
fn expected() -> Vec<StreamType> {
    specs()
        .into_iter()
        .map(|t| StreamType {
            name: t.name.clone().into_bytes(),
            id: t.id,
            zone: t.zone,
            flags: t.flags | if t.peak.is_some() { FLAG_PEAK } else { 0 },
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
    let garbage = write(&d, "garbage", b"this is not a core\n");
    let mut nomt = Guest::kernel(&[], 3, &POSSIBLE, PAGINGS[0]);
    nomt.drop_lines("SYMBOL(malloc_type_list)");
    let nomt = write(&d, "nomt", &nomt.physical_core());
    let wrong = write(&d, "vmlinux", &elf_image(62, &[9; 20], &[]));
    let c = core.to_str().unwrap();
    for (args, want) in [
        (vec!["-M", truncated.to_str().unwrap()], "KVM short read"),
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
