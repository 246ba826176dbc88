mod common;

use std::path::Path;

use common::*;
use memstat::slab::{self, parse_slabinfo, parse_sys_value, SlabSource};
use memstat::{Allocator, AllocatorFilter, ErrorKind, MemoryTypeList};

fn sys_src() -> SlabSource {
    SlabSource {
        sys_dir: Some(fixture("slab")),
        slabinfo: None,
    }
}

#[test]
fn sys_values() {
    assert_eq!(parse_sys_value("2548 N0=2548\n"), Some(2548));
    assert_eq!(parse_sys_value("64\n"), Some(64));
    assert_eq!(parse_sys_value("N0=1"), None);
    assert_eq!(parse_sys_value(""), None);
}

#[test]
fn sysfs_tree() {
    let mut l = MemoryTypeList::new();
    l.read_slab(&sys_src()).unwrap();
    let names: Vec<_> = l.iter().map(|t| t.name().to_string()).collect();
    // One entry per cache, sorted by directory; the merged cache :0000024 by its link's name.
    assert_eq!(
        names,
        vec!["anon_vma_chain", "dentry", "kmalloc-64", "task_struct"]
    );
    let t = l.find(AllocatorFilter::Slab, "task_struct").unwrap();
    assert_eq!(t.allocator(), Allocator::Slab);
    assert_eq!(
        (t.size(), t.rsize(), t.count(), t.free()),
        (5056, 5120, 210, 18)
    );
    assert_eq!(t.bytes(), 210 * 5056);
    assert_eq!(t.zonefree(), 18);
    let d = t.slab_details().unwrap();
    assert_eq!((d.slabs, d.objs_per_slab, d.order), (38, 6, 3));
    let a = l.find(AllocatorFilter::Any, ":0000024").unwrap();
    assert_eq!((a.count(), a.free()), (812, 208));
    assert_eq!(a.slab_details().unwrap().aliases, 3);
    let de = l.find(AllocatorFilter::Slab, "dentry").unwrap();
    assert_eq!((de.numallocs(), de.numfrees()), (1520, 100));
    assert_eq!(de.memalloced(), 1520 * 192);
    assert!(de.percpu_free(0).is_err());
}

#[test]
fn slabinfo_file() {
    let text = std::fs::read_to_string(fixture("slabinfo")).unwrap();
    let c = parse_slabinfo(&text).unwrap();
    assert_eq!(c.len(), 3);
    assert_eq!(c[0].name, b"bio-312");
    let ts = &c[2];
    assert_eq!(
        (
            ts.active_objs,
            ts.total_objs,
            ts.object_size,
            ts.objs_per_slab,
            ts.order,
            ts.slabs
        ),
        (210, 228, 5056, 6, 3, 38)
    );
    // Fallback when the sysfs directory is missing.
    let src = SlabSource {
        sys_dir: Some(fixture("no-such-dir")),
        slabinfo: Some(fixture("slabinfo")),
    };
    let mut l = MemoryTypeList::new();
    l.read_slab(&src).unwrap();
    assert_eq!(l.len(), 3);
}

#[test]
fn bad_slabinfo() {
    assert_eq!(parse_slabinfo("").unwrap_err().kind(), ErrorKind::DataError);
    assert_eq!(
        parse_slabinfo("nonsense\n").unwrap_err().kind(),
        ErrorKind::DataError
    );
    assert_eq!(
        parse_slabinfo("slabinfo - version: 1.1\n")
            .unwrap_err()
            .kind(),
        ErrorKind::Version
    );
    assert!(parse_slabinfo("slabinfo - version: 2.1\nfoo 1 2\n").is_err());
    assert!(parse_slabinfo("slabinfo - version: 2.1\nfoo x 2 3 4 5\n").is_err());
}

#[test]
fn slab_and_malloc_updates_are_independent() {
    let mut l = MemoryTypeList::new();
    l.update_malloc_bytes(&sample_stream()).unwrap();
    l.read_slab(&sys_src()).unwrap();
    assert_eq!(l.len(), 11);
    l.find_mut(AllocatorFilter::Slab, "dentry")
        .unwrap()
        .set_caller_uint64(1, 5)
        .unwrap();
    // A source with fewer caches removes the vanished ones only.
    let mut caches = slab::read_caches(&sys_src()).unwrap();
    caches.retain(|c| c.name != b"kmalloc-64");
    l.update_slab_caches(&caches);
    assert_eq!(l.len(), 10);
    assert_eq!(
        l.find(AllocatorFilter::Slab, "dentry")
            .unwrap()
            .caller_uint64(1),
        Some(5)
    );
    assert!(l.find(AllocatorFilter::Any, "devbuf").is_some());
}

#[test]
fn missing_sources() {
    let src = SlabSource {
        sys_dir: Some(fixture("no-such-dir")),
        slabinfo: Some(fixture("no-such-file")),
    };
    let e = MemoryTypeList::new().read_slab(&src).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io);
}

/// On a real host: `memstat -z` lists the host's slab caches.
#[test]
fn host_memstat_z_lists_real_caches() {
    let sys = Path::new("/sys/kernel/slab");
    let info = Path::new("/proc/slabinfo");
    let readable = sys.is_dir() || std::fs::read_to_string(info).is_ok();
    if !readable {
        eprintln!("skipped: neither /sys/kernel/slab nor /proc/slabinfo is readable");
        return;
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_memstat"))
        .args(["-z", "-H"])
        .output()
        .unwrap();
    assert_success(&out);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("ITEM "), "{text}");
    let rows = text.lines().skip(2).filter(|l| l.contains(':')).count();
    assert!(rows >= 5, "too few caches:\n{text}");
    // Some well-known cache is there under its own name.
    assert!(text.contains("kmalloc-"), "{text}");
    // Where both can be read, the caches are those /proc/slabinfo names, merged caches
    // included (under the name slabinfo gives them). Caches come and go: tried a few times.
    let Ok(info) = std::fs::read(info) else {
        return;
    };
    let from_slabinfo = |info: &[u8]| -> Vec<Vec<u8>> {
        let mut v: Vec<Vec<u8>> = parse_slabinfo(info)
            .unwrap()
            .into_iter()
            .map(|c| c.name)
            .collect();
        v.sort();
        v
    };
    let from_memstat = || -> Vec<Vec<u8>> {
        let mut l = MemoryTypeList::new();
        l.read_slab(&SlabSource::default()).unwrap();
        let mut v: Vec<Vec<u8>> = l.iter().map(|t| t.name_bytes().to_vec()).collect();
        v.sort();
        v
    };
    let mut info = info;
    for _ in 0..3 {
        let (a, b) = (from_memstat(), from_slabinfo(&info));
        if a == b {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        info = std::fs::read("/proc/slabinfo").unwrap();
    }
    assert_eq!(from_memstat(), from_slabinfo(&info));
}

#[test]
fn oversized_slab_files_are_data_errors() {
    let d = tmpdir("slab_caps");
    let cache = d.join("sys/big");
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::write(cache.join("object_size"), "64\n").unwrap();
    std::fs::write(cache.join("total_objects"), "10\n").unwrap();
    // An attribute file past the 64 KiB cap (sparse: zeros after "5 ").
    std::fs::write(cache.join("objects"), "5 ").unwrap();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(cache.join("objects"))
        .unwrap();
    f.set_len(slab::MAX_SYS_VALUE_LEN + 1).unwrap();
    drop(f);
    let src = SlabSource {
        sys_dir: Some(d.join("sys")),
        slabinfo: None,
    };
    let e = slab::read_caches(&src).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DataError);
    assert!(e.to_string().contains("larger than 65536 bytes"), "{e}");
    // At the cap it is read.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(cache.join("objects"))
        .unwrap();
    f.set_len(slab::MAX_SYS_VALUE_LEN).unwrap();
    drop(f);
    let caches = slab::read_caches(&src).unwrap();
    assert_eq!(caches[0].active_objs, 5);
    // A slabinfo file past its 64 MiB cap (sparse).
    let info = d.join("slabinfo");
    let f = std::fs::File::create(&info).unwrap();
    f.set_len(1 << 32).unwrap();
    drop(f);
    let src = SlabSource {
        sys_dir: None,
        slabinfo: Some(info.clone()),
    };
    let e = slab::read_caches(&src).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DataError);
    assert!(e.to_string().contains("larger than 67108864 bytes"), "{e}");
    let _ = std::fs::remove_file(&info);
}

/// A cache destroyed between the listing of the SLUB directory and the
/// reading of its files (a module unloaded in between) is skipped, not an
/// error that aborts the report; a cache that is there with a file missing
/// is still a data error.
#[test]
fn vanished_cache_is_skipped() {
    let base = std::env::temp_dir().join(format!("memstat-slab-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let gone = base.join("kmalloc-gone");
    assert_eq!(slab::read_sys_cache(&gone, b"kmalloc-gone").unwrap(), None);

    let partial = base.join("partial");
    std::fs::create_dir_all(&partial).unwrap();
    std::fs::write(partial.join("object_size"), "64\n").unwrap();
    let e = slab::read_sys_cache(&partial, b"partial").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DataError);

    // A whole directory read skips only what vanished: here nothing did.
    let c = slab::read_sys_dir(&fixture("slab")).unwrap();
    assert_eq!(c.len(), 4);
    std::fs::remove_dir_all(&base).unwrap();
}

/// `/proc/slabinfo` read while a cache is destroyed: the seq_file walk resumes by position and
/// shows a cache twice (fixture `slabinfo-rewalk`). The report has it once, with the figures of
/// its later line.
#[test]
fn slabinfo_rewalk_keeps_one_line_per_cache() {
    let text = std::fs::read_to_string(fixture("slabinfo-rewalk")).unwrap();
    let c = parse_slabinfo(&text).unwrap();
    let names: Vec<_> = c.iter().map(|c| c.name.as_slice()).collect();
    assert_eq!(names, [&b"bio-312"[..], b"kmalloc-64", b"task_struct"]);
    assert_eq!(c[2].active_objs, 216);
    let src = SlabSource {
        sys_dir: None,
        slabinfo: Some(fixture("slabinfo-rewalk")),
    };
    let mut l = MemoryTypeList::new();
    l.read_slab(&src).unwrap();
    assert_eq!(l.len(), 3);
    assert_eq!(
        l.find(AllocatorFilter::Slab, "task_struct")
            .unwrap()
            .count(),
        216
    );
}

/// A slab cache directory whose name holds bytes that are not printable ASCII, a newline among
/// them, is shown in text form in the `-z` table and in JSON, as malloc types are.
#[test]
fn cache_names_in_zone_outputs_are_text_forms() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let d = tmpdir("slab_hostile");
    let names: [(&[u8], &str); 4] = [
        (b"esc\x1b[31mred", "esc\\033[31mred"),
        (b"nl\nrow", "nl\\012row"),
        (b"\xff\xfe", "\\377\\376"),
        (b"rlo\xe2\x80\xaeevil", "rlo\\342\\200\\256evil"),
    ];
    for (name, _) in names {
        let c = d.join(OsStr::from_bytes(name));
        std::fs::create_dir(&c).unwrap();
        for (f, v) in [
            ("object_size", "64"),
            ("objects", "3"),
            ("total_objects", "4"),
        ] {
            std::fs::write(c.join(f), v).unwrap();
        }
    }
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_memstat"))
            .args(["-z", "--slab-dir", d.to_str().unwrap()])
            .args(args)
            .output()
            .unwrap();
        assert_success(&out);
        out.stdout
    };
    let text = run(&["-H"]);
    assert!(
        text.iter()
            .all(|&b| b == b'\n' || (0x20..0x7f).contains(&b)),
        "{}",
        String::from_utf8_lossy(&text)
    );
    let text = String::from_utf8(text).unwrap();
    let mut want: Vec<&str> = names.iter().map(|&(_, t)| t).collect();
    want.sort();
    let rows: Vec<&str> = text
        .lines()
        .skip(2)
        .map(|l| l.split_once(": ").unwrap().0)
        .collect();
    assert_eq!(rows, want, "{text}");
    let v: serde_json::Value = serde_json::from_slice(&run(&["--json"])).unwrap();
    let got: Vec<&str> = v["memory-zone-statistics"]["zone"]
        .as_array()
        .unwrap()
        .iter()
        .map(|z| z["name"].as_str().unwrap())
        .collect();
    // In list order: the caches sorted by their names' bytes.
    let mut by_bytes = names;
    by_bytes.sort();
    let want: Vec<&str> = by_bytes.iter().map(|&(_, t)| t).collect();
    assert_eq!(got, want);
    // From /proc/slabinfo, whose names hold no white space.
    let info = d.join("slabinfo");
    std::fs::write(
        &info,
        b"slabinfo - version: 2.1\nesc\x1b[31m\xff 3 4 64 64 1 : tunables 0 0 0 : slabdata 1 1 0\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_memstat"))
        .args(["-z", "-H", "--slab-dir", "/nonexistent", "--slabinfo"])
        .arg(&info)
        .output()
        .unwrap();
    assert_success(&out);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("\nesc\\033[31m\\377:"), "{text}");
}

/// The inode number of the link `name` of `dir`.
fn ino(dir: &Path, name: &str) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(dir.join(name)).unwrap().ino()
}

/// A cache that others are merged into (its sysfs directory a unique id such as `:0000136`) is
/// named as `/proc/slabinfo` names it: by the link sysfs made first (the lowest inode number),
/// with `+N` for the N others in the table, all of them with `-l` and in JSON; it is found by
/// any of its names. A cache with one link is named by it, one without by its directory; a
/// link to no cache is left out.
#[test]
fn merged_caches_are_named_as_slabinfo_names_them() {
    let dir = fixture("slab-merged");
    let (k, v) = ("kernfs_node_cache", "kvm_async_pf");
    let (first, other) = if ino(&dir, k) < ino(&dir, v) {
        (k, v)
    } else {
        (v, k)
    };
    let caches = slab::read_sys_dir(&dir).unwrap();
    let got: Vec<(&[u8], Vec<&[u8]>)> = caches
        .iter()
        .map(|c| {
            let m = c.merged.iter().map(Vec::as_slice).collect();
            (c.name.as_slice(), m)
        })
        .collect();
    let want: Vec<(&[u8], Vec<&[u8]>)> = vec![
        (b":0000040", vec![]),
        (b":0000136", vec![first.as_bytes(), other.as_bytes()]),
        (b":a-0000192", vec![b"jbd2_transaction_s"]),
        (b"dentry", vec![]),
    ];
    assert_eq!(got, want);

    let mut l = MemoryTypeList::new();
    l.read_slab(&SlabSource {
        sys_dir: Some(dir.clone()),
        slabinfo: None,
    })
    .unwrap();
    let names: Vec<&str> = l.iter().map(|t| t.name()).collect();
    assert_eq!(names, [":0000040", first, "jbd2_transaction_s", "dentry"]);
    for n in [k, v, ":0000136"] {
        let t = l.find(AllocatorFilter::Slab, n).unwrap();
        assert_eq!((t.name(), t.size()), (first, 136), "{n}");
    }
    assert!(l.find(AllocatorFilter::Slab, "gone").is_none());

    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_memstat"))
            .args(["-z", "--slab-dir", dir.to_str().unwrap()])
            .args(args)
            .output()
            .unwrap();
        assert_success(&out);
        String::from_utf8(out.stdout).unwrap()
    };
    let rows = |text: &str| -> Vec<String> {
        text.lines()
            .skip(2)
            .map(|l| l.split_once(' ').unwrap().0.to_string())
            .collect()
    };
    let text = run(&["-H"]);
    assert_eq!(
        rows(&text),
        [
            ":0000040:",
            "dentry:",
            "jbd2_transaction_s:",
            &format!("{first}+1:")
        ]
    );
    let text = run(&["-H", "-l"]);
    assert!(text.starts_with("ITEM "), "{text}");
    assert!(text.lines().next().unwrap().ends_with("XDOMAIN  MERGED"));
    let ends: Vec<&str> = text
        .lines()
        .skip(2)
        .map(|l| l.rsplit_once("  ").unwrap().1)
        .collect();
    assert_eq!(ends, ["-", "-", "-", &format!("{first},{other}")]);
    let v: serde_json::Value = serde_json::from_str(&run(&["--json"])).unwrap();
    let zone = &v["memory-zone-statistics"]["zone"];
    assert_eq!(zone[1]["name"], first);
    assert_eq!(zone[1]["merged"], serde_json::json!([first, other]));
    assert_eq!(zone[2]["name"], "jbd2_transaction_s");
    assert!(zone[2].get("merged").is_none());
    // --name matches any of the names merged into a cache.
    for n in [other, ":0000136", "kvm_*"] {
        assert_eq!(
            rows(&run(&["-H", "--name", n])),
            [format!("{first}+1:")],
            "{n}"
        );
    }
}

/// A cache stays the same entry, with its caller fields, while the names merged into it
/// change (a module that made one of them unloaded): its identity is its directory.
#[test]
fn merged_cache_keeps_its_entry_when_its_names_change() {
    let dir = fixture("slab-merged");
    let mut caches = slab::read_sys_dir(&dir).unwrap();
    let mut l = MemoryTypeList::new();
    l.update_slab_caches(&caches);
    l.find_mut(AllocatorFilter::Slab, ":0000136")
        .unwrap()
        .set_caller_uint64(0, 7)
        .unwrap();
    caches[1].merged = vec![b"kvm_async_pf".to_vec()];
    l.update_slab_caches(&caches);
    assert_eq!(l.len(), 4);
    let t = l.find(AllocatorFilter::Slab, ":0000136").unwrap();
    assert_eq!((t.name(), t.caller_uint64(0)), ("kvm_async_pf", Some(7)));
    assert!(l.find(AllocatorFilter::Slab, "kernfs_node_cache").is_none());
}

/// An error about a cache names its file in text form: a cache directory's name is the
/// kernel's, and reaches the terminal in an error message too.
#[test]
fn errors_name_cache_files_in_text_form() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let d = tmpdir("slab_hostile_error");
    let c = d.join(OsStr::from_bytes(b"evil\x1b[2J\xff"));
    std::fs::create_dir(&c).unwrap();
    std::fs::write(c.join("object_size"), "64").unwrap();
    std::fs::write(c.join("objects"), "\x1b[31m").unwrap();
    std::fs::write(c.join("total_objects"), "4").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_memstat"))
        .args(["-z", "--slab-dir"])
        .arg(&d)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.ends_with("/evil\\033[2J\\377/objects: not a number: '\\033[31m'\n"),
        "{err:?}"
    );
}
