//! `dtmalloc stacks`'s outputs read back by their readers: the pprof profile by `go tool
//! pprof` (Debian's golang-go): run when `go` is installed, and required when
//! `MEMSTAT_REQUIRE_PPROF` is set (as `make check` sets it, having installed it).

mod common;

use std::process::Command;

use common::tmpdir;
use memstat::stacks::{StackReader, Stacks};

/// Two stacks of one type, one of another, and a free.
const TRACE: &str = "\
          insmod-61      [000] .....     4.339309: malloc: probe=sample_buf size=4096 zindx=12 name='sample buf'
          insmod-61      [000] .....     4.339315: <stack trace>
 => trace_event_raw_event_dtmalloc+0x10/0x20
 => kmalloc_mt+0x3a/0x80
 => init_one+0x21/0x400 [sample]
 => do_one_initcall+0x5c/0x230
          insmod-61      [000] .....     4.339400: malloc: probe=sample_buf size=4096 zindx=12 name='sample buf'
          insmod-61      [000] .....     4.339401: <stack trace>
 => kmalloc_mt+0x3a/0x80
 => init_one+0x21/0x400 [sample]
 => do_one_initcall+0x5c/0x230
          insmod-62      [001] .....     4.339410: malloc: probe=other size=64 zindx=3 name='other'
          insmod-62      [001] .....     4.339411: <stack trace>
 => kmalloc_mt+0x3a/0x80
 => init_two+0x1/0x10 [sample]
 => do_one_initcall+0x5c/0x230
           rmmod-63      [001] .....     5.000000: free: probe=sample_buf size=4096 zindx=0 name='sample buf'
           rmmod-63      [001] .....     5.000001: <stack trace>
 => kfree_mt+0x1/0x2
 => exit_one+0x1/0x2 [sample]
";

fn stacks() -> Stacks {
    let mut r = StackReader::new();
    let mut st = Stacks::new();
    for l in TRACE.lines() {
        r.line(l.as_bytes());
    }
    for s in r.finish() {
        st.add(&s);
    }
    st
}

/// `go tool pprof ARGS FILE`'s standard output, or None when go is missing and not required.
fn pprof(args: &[&str], file: &std::path::Path) -> Option<String> {
    let required = std::env::var_os("MEMSTAT_REQUIRE_PPROF").is_some();
    let out = match Command::new("go")
        .args(["tool", "pprof"])
        .args(args)
        .arg(file)
        .env("HOME", file.parent().unwrap())
        .env("PPROF_TMPDIR", file.parent().unwrap())
        .output()
    {
        Ok(o) => o,
        Err(e) if !required => {
            eprintln!("go tool pprof not run: {e}");
            return None;
        }
        Err(e) => panic!("go tool pprof: {e} (MEMSTAT_REQUIRE_PPROF is set)"),
    };
    assert!(
        out.status.success(),
        "go tool pprof {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).unwrap())
}

#[test]
fn go_tool_pprof_reads_the_profile() {
    let d = tmpdir("pprof");
    let f = d.join("stacks.pprof");
    std::fs::write(&f, stacks().pprof(2_000_000_000)).unwrap();
    // Each stack, leaf first, with its values by sample type.
    let Some(traces) = pprof(&["-traces", "-sample_index=bytes"], &f) else {
        return;
    };
    let norm: Vec<String> = traces
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    let text = norm.join("\n");
    assert!(text.contains("Type: bytes"), "{traces}");
    assert!(
        text.contains("Duration: 2s, Total samples = 12.06kB"),
        "{traces}"
    );
    assert!(
        text.contains(
            "type: sample_buf\nprobe: malloc\n8kB kmalloc_mt\ninit_one [sample]\ndo_one_initcall"
        ),
        "{traces}"
    );
    assert!(
        text.contains(
            "type: other\nprobe: malloc\n64B kmalloc_mt\ninit_two [sample]\ndo_one_initcall"
        ),
        "{traces}"
    );
    assert!(
        text.contains("type: sample_buf\nprobe: free\n4kB kfree_mt\nexit_one [sample]"),
        "{traces}"
    );
    let top = pprof(&["-top", "-sample_index=allocations"], &f).unwrap();
    assert!(top.contains("Type: allocations"), "{top}");
    assert!(top.contains("Total samples = 4"), "{top}");
    let flat: Vec<String> = top
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert!(
        flat.contains(&"3 75.00% 75.00% 3 75.00% kmalloc_mt".to_string()),
        "{top}"
    );
}

/// The longest run of pixels of colour `c` (each channel within 3) on row `y` of an RGB or
/// RGBA image.
fn longest_run(img: &[u8], width: usize, channels: usize, y: usize, c: (u8, u8, u8)) -> usize {
    let row = &img[y * width * channels..(y + 1) * width * channels];
    let near = |a: u8, b: u8| a.abs_diff(b) <= 3;
    let (mut best, mut run) = (0, 0);
    for px in row.chunks(channels) {
        if near(px[0], c.0) && near(px[1], c.1) && near(px[2], c.2) {
            run += 1;
            best = best.max(run);
        } else {
            run = 0;
        }
    }
    best
}

/// The flame graph in a real browser: Debian's chromium, headless, takes a screenshot of the
/// SVG, in which the frames of `sample_buf:malloc` and of its caller are as wide as their
/// share of the bytes. Run when chromium is installed, required when
/// `MEMSTAT_REQUIRE_CHROMIUM` is set (as `make check` sets it, having installed it).
#[test]
fn chromium_shows_each_frame_as_wide_as_its_share() {
    use memstat::stacks::{frame_color, Weight, SVG_FRAME_HEIGHT, SVG_WIDTH};
    let required = std::env::var_os("MEMSTAT_REQUIRE_CHROMIUM").is_some();
    let d = tmpdir("svg");
    let st = stacks();
    let svg = d.join("stacks.svg");
    std::fs::write(&svg, st.svg(Weight::Bytes, "dtmalloc stacks")).unwrap();
    // Four frames deep (the type, do_one_initcall, init_one, kmalloc_mt): the title, the
    // frames and the total's line make 4 + 3 rows.
    let (w, h) = (SVG_WIDTH as usize, (7.0 * SVG_FRAME_HEIGHT) as usize);
    let shot = d.join("shot.png");
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
        ])
        .arg(format!("--user-data-dir={}", d.join("profile").display()))
        // A headless window's viewport is smaller than the window: room to spare below.
        .arg(format!("--window-size={w},{}", h + 200))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", svg.display()))
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) if !required => {
            eprintln!("chromium not run: {e}");
            return;
        }
        Err(e) => panic!("chromium: {e} (MEMSTAT_REQUIRE_CHROMIUM is set)"),
    };
    assert!(
        out.status.success() && shot.exists(),
        "chromium: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut img = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut img).unwrap();
    assert!(
        info.width as usize == w && info.height as usize >= h,
        "a screenshot of {}x{}",
        info.width,
        info.height
    );
    let channels = info.color_type.samples();
    // 12352 bytes over 1180 pixels: sample_buf:malloc and its caller do_one_initcall have
    // 8192 of them, 782.6 pixels.
    let want = 8192.0 * (SVG_WIDTH - 20.0) / 12352.0;
    for (name, row) in [("sample_buf:malloc", 2.0), ("do_one_initcall", 3.0)] {
        let y = (h as f64 - row * SVG_FRAME_HEIGHT) as usize + 1;
        let got = longest_run(&img, w, channels, y, frame_color(name)) as f64;
        assert!(
            (got - want).abs() <= 4.0,
            "{name}: a run of {got} pixels of its colour on row {y}, expected {want:.1} ({})",
            shot.display()
        );
    }
}
