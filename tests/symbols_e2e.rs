//! End-to-end tests of self-contained captures: names recorded on this machine, reports
//! that do not depend on the binaries afterwards, and `--symbols` re-symbolisation.
//! Real BPF: run as root; they fail (never skip) without it.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use hotspot_format::{FrameAddr, Record, read_all};
use hotspot_testkit::e2e::{hotspot, run_ok as ok};

static SERIAL: Mutex<()> = Mutex::new(());

fn record(out: &Path, argv: &[&Path], args: &[&str]) {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    ok(hotspot()
        .arg("record")
        .arg("-o")
        .arg(out)
        .arg("--")
        .args(argv)
        .args(args));
}

fn report(capture: &Path, extra: &[&str]) -> String {
    let out = ok(hotspot().arg("report").arg(capture).args(extra));
    String::from_utf8(out.stdout).expect("utf-8 report")
}

/// Copies a fixture binary into `dir` so the test can move or delete it.
fn copy_into(bin: &Path, dir: &Path) -> PathBuf {
    let dst = dir.join(bin.file_name().expect("file name"));
    std::fs::copy(bin, &dst).expect("copy fixture");
    dst
}

#[test]
fn reports_are_identical_after_the_binary_is_gone() {
    let d = tempfile::tempdir().expect("tempdir");
    let bin = copy_into(&common::fixture("split7030"), d.path());
    let cap = d.path().join("s.hsp");
    record(&cap, &[&bin], &["1.5"]);
    let text = report(&cap, &[]);
    let folded = report(&cap, &["--format", "folded"]);
    let json = report(&cap, &["--format", "json"]);
    assert!(
        json.contains("\"hot_leaf\"") && json.contains("split7030.c"),
        "names and files in JSON"
    );
    assert!(
        text.contains("hot_leaf") && text.contains("split7030.c:"),
        "names and file:line: {text}"
    );
    std::fs::remove_file(&bin).expect("remove the binary");
    assert_eq!(
        report(&cap, &[]),
        text,
        "text report changed once the binary was gone"
    );
    assert_eq!(report(&cap, &["--format", "folded"]), folded);
    assert_eq!(
        report(&cap, &["--format", "json"]),
        json,
        "JSON report changed"
    );
    assert_eq!(
        report(&cap, &["--format", "folded"]),
        folded,
        "second run differs"
    );
}

#[test]
fn inlined_function_is_its_own_frame() {
    let d = tempfile::tempdir().expect("tempdir");
    let cap = d.path().join("i.hsp");
    record(&cap, &[&common::fixture("inlined")], &["1"]);
    let folded = report(&cap, &["--format", "folded"]);
    assert!(
        folded.contains("outer_fn;inl_helper"),
        "no outer_fn;inl_helper chain:\n{folded}"
    );
}

fn named_hot_leaf(report: &str) -> bool {
    report
        .lines()
        .any(|l| l.ends_with(" hot_leaf") || l.contains(" hot_leaf "))
}

#[test]
fn stripped_binary_names_from_debug_files() {
    let d = tempfile::tempdir().expect("tempdir");
    let (stripped, debug) = common::stripped_fixture("split7030");

    // Debug file beside the binary at record time (found through .gnu_debuglink).
    let with = d.path().join("with");
    std::fs::create_dir(&with).expect("mkdir");
    let bin = copy_into(&stripped, &with);
    copy_into(&debug, &with);
    let cap = d.path().join("with.hsp");
    record(&cap, &[&bin], &["1"]);
    let r = report(&cap, &[]);
    assert!(
        named_hot_leaf(&r),
        "names from the debug file at record time:\n{r}"
    );

    // No debug file at record time: unnamed; with --symbols DIR on replay: named.
    let without = d.path().join("without");
    std::fs::create_dir(&without).expect("mkdir");
    let bin = copy_into(&stripped, &without);
    let cap = d.path().join("without.hsp");
    record(&cap, &[&bin], &["1"]);
    let plain = report(&cap, &[]);
    assert!(
        !named_hot_leaf(&plain),
        "a stripped binary cannot name hot_leaf by itself:\n{plain}"
    );
    // Its functions are told apart by their module and CFI entry (split7030+0xADDR), one
    // row each, rather than lumped into one `??`.
    let placeholders: std::collections::BTreeSet<&str> = plain
        .split_whitespace()
        .filter(|w| w.starts_with("split7030+0x"))
        .collect();
    assert!(
        placeholders.len() >= 2,
        "the unnamed leaves have a name each:\n{plain}"
    );
    let root = common::stripped_fixture_debug_root("split7030");
    let resolved = report(&cap, &["--symbols", root.to_str().expect("utf-8")]);
    assert!(
        named_hot_leaf(&resolved),
        "--symbols with the right build-id names frames:\n{resolved}"
    );
    assert!(
        !resolved.contains("split7030+0x"),
        "--symbols replaces the placeholder names:\n{resolved}"
    );
    assert!(
        resolved.contains("split7030.c:"),
        "file:line from the debug file"
    );

    // A debug file of another build is never used, and the mismatch is reported.
    let other = common::fixture_with("split7030", &["-O1"], "otherbuild");
    assert_ne!(
        common::build_id(&other),
        common::build_id(&stripped),
        "the variant must differ"
    );
    let wrong = d.path().join("wrong");
    std::fs::create_dir(&wrong).expect("mkdir");
    common::run_tool(
        Command::new("objcopy")
            .arg("--only-keep-debug")
            .arg(&other)
            .arg(wrong.join("split7030.debug")),
    );
    let out = ok(hotspot()
        .arg("report")
        .arg(&cap)
        .arg("--symbols")
        .arg(&wrong));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !named_hot_leaf(&stdout),
        "a mismatched debug file was used:\n{stdout}"
    );
    assert!(
        stderr.contains("does not match"),
        "mismatch not reported: {stderr}"
    );
    assert_eq!(
        stderr.matches("does not match").count(),
        1,
        "reported once: {stderr}"
    );
}

#[test]
fn libc_frames_are_named() {
    let d = tempfile::tempdir().expect("tempdir");
    let cap = d.path().join("m.hsp");
    record(&cap, &[&common::fixture("memwork")], &["1.5"]);
    let text = report(&cap, &["--top", "10"]);
    let libc_rows: Vec<&str> = text.lines().filter(|l| l.contains("libc.so.6")).collect();
    assert!(!libc_rows.is_empty(), "no libc rows:\n{text}");
    assert!(
        libc_rows
            .iter()
            .take(3)
            .all(|l| !l.contains(" ?? ") && !l.ends_with(" ??")),
        "unnamed libc frames:\n{text}"
    );
    assert!(
        libc_rows.iter().any(|l| l.contains("mem")),
        "memset/memcpy-class names:\n{text}"
    );
}

#[test]
fn jit_frames_are_named_from_the_perf_map() {
    let d = tempfile::tempdir().expect("tempdir");
    let cap = d.path().join("j.hsp");
    record(&cap, &[&common::fixture("jit")], &["1.5"]);
    let folded = report(&cap, &["--format", "folded"]);
    assert!(
        folded.contains("jit_driver;jitted_hotloop"),
        "JIT frame unnamed:\n{folded}"
    );
}

#[test]
fn hostile_names_never_reach_the_output_raw() {
    let d = tempfile::tempdir().expect("tempdir");
    let cap = d.path().join("h.hsp");
    let evil = "\x1b[31mevil\x07\u{202e}gnp.exe\x1b]8;;http://x\x1b\\";
    record(&cap, &[&common::fixture("jit")], &["1", evil]);
    for args in [&[][..], &["--format", "folded"][..]] {
        let out = report(&cap, args);
        assert!(
            out.contains("evil"),
            "the JIT name should still show, escaped:\n{out}"
        );
        for (i, c) in out.chars().enumerate() {
            assert!(
                c == '\n' || !(c.is_control() || c == '\u{202e}'),
                "raw control char {c:?} at {i} in {args:?} output"
            );
        }
    }
    let info = ok(hotspot().arg("info").arg(&cap));
    assert!(!info.stdout.contains(&0x1b), "info leaked an escape");
}

#[test]
fn no_kernel_address_in_any_record() {
    let d = tempfile::tempdir().expect("tempdir");
    let cap = d.path().join("k.hsp");
    record(&cap, &[&common::fixture("syscalls")], &["1"]);
    let bytes = std::fs::read(&cap).expect("read");
    let (records, _) = read_all(&bytes).expect("decode");
    const KERNEL: u64 = 0xffff_8000_0000_0000;
    let mut kernel_frames = 0;
    for r in &records {
        let values: Vec<u64> = match r {
            Record::Frame(f) => match f.addr {
                FrameAddr::FileOffset(o) => vec![o],
                FrameAddr::KernelSymbol { offset, .. } => {
                    kernel_frames += 1;
                    vec![offset]
                }
            },
            Record::Samples(b) => b
                .samples
                .iter()
                .flat_map(|s| {
                    [
                        s.time_ns,
                        u64::from(s.tid),
                        u64::from(s.cpu),
                        u64::from(s.stack),
                    ]
                })
                .collect(),
            Record::Index(i) => i
                .entries
                .iter()
                .flat_map(|e| [e.offset, e.first_ns, e.last_ns])
                .collect(),
            Record::Lost(l) => vec![l.time_ns, l.count],
            Record::Process(p) => vec![p.start_ns],
            Record::Thread(t) => vec![t.time_ns],
            Record::String { text, .. } => {
                assert!(
                    !text.to_ascii_lowercase().contains("ffffffff8"),
                    "a string holds a kernel address: {text}"
                );
                vec![]
            }
            _ => vec![],
        };
        for v in values {
            assert!(v < KERNEL, "kernel-range value {v:#x} in {r:?}");
        }
    }
    assert!(
        kernel_frames > 0,
        "the syscall fixture must produce kernel frames"
    );
}
