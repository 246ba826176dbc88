// SPDX-License-Identifier: GPL-2.0

//! `include/memstat.h` against the functions the crate exports: cbindgen reads the crate and
//! writes its `extern "C"` functions as C prototypes; each must be declared in the header with
//! the same return and parameter types, and the header must declare nothing else. The
//! constants the header defines must have the crate's values.

use std::collections::BTreeMap;
use std::path::Path;

/// A prototype: its return type and its parameter types, spaces normalized, names dropped.
type Proto = (String, Vec<String>);

/// Normalize a C type: one space between words, `*` attached to what it follows.
fn norm_type(t: &str) -> String {
    let t = t.replace('*', " * ");
    let words: Vec<&str> = t.split_whitespace().collect();
    words.join(" ").replace(" *", "*")
}

/// A parameter's type: the declaration without its name (the last identifier), `void` as is.
fn param_type(p: &str) -> String {
    let p = p.trim();
    if p == "void" {
        return String::new();
    }
    let cut = p
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(0, |i| i + 1);
    norm_type(&p[..cut])
}

/// The `memstat_*` prototypes of C source `src`, by name.
fn prototypes(src: &str) -> BTreeMap<String, Proto> {
    // Comments and preprocessor lines out.
    let mut text = String::new();
    let mut rest = src;
    while let Some(i) = rest.find("/*") {
        text.push_str(&rest[..i]);
        rest = rest[i..].find("*/").map_or("", |j| &rest[i + j + 2..]);
    }
    text.push_str(rest);
    let text: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join(" ")
        .replace("__BEGIN_DECLS", ";")
        .replace("__END_DECLS", ";");
    let mut out = BTreeMap::new();
    for decl in text.split(';') {
        let Some(open) = decl.find('(') else { continue };
        let Some(close) = decl.rfind(')') else {
            continue;
        };
        let head = decl[..open].trim();
        let name_at = head
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        let name = &head[name_at..];
        if !name.starts_with("memstat_") {
            continue;
        }
        let ret = norm_type(&head[..name_at]);
        let params = decl[open + 1..close]
            .split(',')
            .map(param_type)
            .filter(|p| !p.is_empty())
            .collect();
        assert!(
            out.insert(name.to_string(), (ret, params)).is_none(),
            "{name} declared twice"
        );
    }
    out
}

fn generated() -> String {
    let crate_dir = env!("CARGO_MANIFEST_DIR");
    let config = cbindgen::Config {
        language: cbindgen::Language::C,
        style: cbindgen::Style::Tag,
        usize_is_size_t: true,
        no_includes: true,
        ..Default::default()
    };
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(Path::new(crate_dir).join("src/lib.rs"))
        .generate()
        .expect("cbindgen reads the crate");
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).expect("cbindgen writes UTF-8")
}

fn header() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("include/memstat.h");
    std::fs::read_to_string(path).expect("include/memstat.h")
}

#[test]
fn header_declares_every_export_with_its_types() {
    let exported = prototypes(&generated());
    let declared = prototypes(&header());
    assert!(
        exported.len() >= 60,
        "cbindgen saw {} functions",
        exported.len()
    );
    for (name, proto) in &exported {
        match declared.get(name) {
            Some(d) => assert_eq!(d, proto, "{name}: header (left) and crate (right) differ"),
            None => panic!("{name} is exported but not declared in memstat.h: {proto:?}"),
        }
    }
    for name in declared.keys() {
        assert!(
            exported.contains_key(name),
            "{name} is declared but not exported"
        );
    }
}

/// The `#define NAME value` lines of the header whose value is a number.
fn defines(src: &str) -> BTreeMap<String, i64> {
    src.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            (w.next()? == "#define").then_some(())?;
            let name = w.next()?;
            let value = w.next()?.parse().ok()?;
            Some((name.to_string(), value))
        })
        .collect()
}

#[test]
fn header_constants_are_the_crate_s() {
    let d = defines(&header());
    let want: &[(&str, i64)] = &[
        ("MEMSTAT_MAXCALLER", memstat_lib::MAXCALLER as i64),
        ("ALLOCATOR_UNKNOWN", memstat::ALLOCATOR_UNKNOWN.into()),
        ("ALLOCATOR_MALLOC", memstat::ALLOCATOR_MALLOC.into()),
        ("ALLOCATOR_UMA", memstat::ALLOCATOR_UMA.into()),
        ("ALLOCATOR_ANY", memstat::ALLOCATOR_ANY.into()),
        ("MEMTYPE_MAXNAME", memstat_lib::types::MAXNAME as i64),
        (
            "MEMSTAT_ERROR_UNDEFINED",
            memstat::MEMSTAT_ERROR_UNDEFINED.into(),
        ),
        (
            "MEMSTAT_ERROR_NOMEMORY",
            memstat::MEMSTAT_ERROR_NOMEMORY.into(),
        ),
        (
            "MEMSTAT_ERROR_VERSION",
            memstat::MEMSTAT_ERROR_VERSION.into(),
        ),
        (
            "MEMSTAT_ERROR_PERMISSION",
            memstat::MEMSTAT_ERROR_PERMISSION.into(),
        ),
        (
            "MEMSTAT_ERROR_DATAERROR",
            memstat::MEMSTAT_ERROR_DATAERROR.into(),
        ),
        ("MEMSTAT_ERROR_KVM", memstat::MEMSTAT_ERROR_KVM.into()),
        (
            "MEMSTAT_ERROR_KVM_NOSYMBOL",
            memstat::MEMSTAT_ERROR_KVM_NOSYMBOL.into(),
        ),
        (
            "MEMSTAT_ERROR_KVM_SHORTREAD",
            memstat::MEMSTAT_ERROR_KVM_SHORTREAD.into(),
        ),
        ("MEMSTAT_ERROR_IO", memstat::MEMSTAT_ERROR_IO.into()),
        (
            "MEMSTAT_ERROR_INVALID",
            memstat::MEMSTAT_ERROR_INVALID.into(),
        ),
        (
            "MEMSTAT_KVM_ERRBUF_SIZE",
            memstat::MEMSTAT_KVM_ERRBUF_SIZE as i64,
        ),
    ];
    for (name, value) in want {
        assert_eq!(d.get(*name), Some(value), "{name}");
    }
    assert_eq!(
        d.len(),
        want.len(),
        "a #define the test does not know: {d:?}"
    );
}

#[test]
fn prototype_parser_reads_the_header_s_forms() {
    let p = prototypes(
        "/* c */ void\t\t*memstat_get_x(\n\t\t    const struct memory_type *mtp, int cpu);\n\
         size_t memstat_z(void);",
    );
    assert_eq!(
        p["memstat_get_x"],
        (
            "void*".into(),
            vec!["const struct memory_type*".into(), "int".into()]
        )
    );
    assert_eq!(p["memstat_z"], ("size_t".into(), vec![]));
}
