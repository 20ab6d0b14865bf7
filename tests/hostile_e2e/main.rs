//! Hostile captures through the real binary: `info`, `info --json`, `report` in every
//! format, and `diff A A` on each case of the hostile corpus (`hotspot_testkit::hostile`), on truncations at many
//! offsets and on seeded random byte flips. Each run must take under 5 s of CPU (and end
//! within 30 s) under a 512 MB address-space limit, never panic or die on a signal, and
//! either succeed with clean, well-formed output (the sample count asserted where the case
//! has a definite answer) or fail with one clean line on stderr that names the file.
//!
//! How a command is run and checked (limits, clean output, one-line errors) is in
//! `harness.rs`.

use hotspot_testkit::hostile;

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use hostile::{Case, Expect};

mod harness;

use harness::*;

macro_rules! hostile_cases {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                check_case(by_name(stringify!($name)), commands());
            }
        )*

        #[test]
        fn every_case_has_a_test() {
            let tested = [$(stringify!($name)),*];
            for c in cases() {
                assert!(tested.contains(&c.name.as_str()), "case {} is not run", c.name);
            }
        }
    };
}

hostile_cases!(
    empty,
    text,
    elf,
    zeros,
    header_cut,
    header_only,
    newer_major,
    major_u16_max,
    major_zero,
    newer_minor,
    unknown_flags,
    sync_marker_only,
    zstd_bomb_small_raw_len,
    zstd_bomb_over_limit,
    zstd_bomb_max_raw_unknown_records,
    payload_len_u32_max,
    raw_len_u32_max,
    payload_len_over_limit,
    payload_len_at_limit_missing,
    zstd_content_size_huge,
    seq_max_and_backwards,
    batch_of_a_million,
    block_over_a_million_samples,
    batch_count_without_columns,
    records_at_block_limit,
    records_over_block_limit,
    stack_1024_frames_recursive,
    stack_2049_frames,
    string_64k_of_esc,
    string_100k,
    names_not_utf8,
    record_length_u64_max,
    stack_frame_count_u64_max,
    unknown_kinds_over_limit,
    unknown_kind_u32_max,
    inline_expansion_bomb,
    many_deep_stacks,
    ids_out_of_range,
    symbol_inlines_itself,
    duplicate_definitions,
    times_extreme,
    times_all_at_max,
    times_all_at_zero,
    times_backwards_zero_session,
    lost_counts_overflow,
    nasty_names,
);

/// Files that are not captures, given by path rather than written: a directory,
/// `/dev/null` and `/dev/zero` (which has no end), a FIFO no one writes to (opening it to
/// read used to wait for a writer forever), a missing file.
#[test]
fn paths_that_are_not_capture_files() {
    let d = dir().join("a-directory.hsp");
    std::fs::create_dir_all(&d).expect("dir");
    let missing = dir().join("missing.hsp");
    let fifo = mkfifo("no-writer.fifo");
    for (path, text) in [
        (d.as_path(), "directory"),
        (Path::new("/dev/null"), "not a regular file"),
        (Path::new("/dev/zero"), "not a regular file"),
        (fifo.as_path(), "not a regular file"),
        (missing.as_path(), "No such file"),
    ] {
        for &cmd in commands() {
            check("not-a-file", &Expect::Error(text), path, cmd);
        }
    }
}

/// A FIFO given as the output is written to: the check that `-o` never overwrites a capture
/// used to open it to read, which waits for a writer that never comes.
#[test]
fn a_fifo_as_the_output_is_written_to() {
    let capture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/captures/offcpu.hsp");
    let args = |out: Option<&Path>| -> Vec<OsString> {
        let mut a: Vec<OsString> = vec!["report".into(), capture.clone().into()];
        a.extend(["--format".into(), "folded".into()]);
        if let Some(out) = out {
            a.extend(["-o".into(), out.into()]);
        }
        a
    };
    let want = run(&args(None));
    assert!(want.status.success(), "report to stdout: {}", want.stderr);
    assert!(!want.stdout.is_empty(), "report to stdout wrote nothing");
    let fifo = mkfifo("output.fifo");
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).expect("reading the FIFO"))
    };
    let r = run(&args(Some(&fifo)));
    assert!(
        r.status.success(),
        "report -o FIFO: {:?}: {}",
        r.status,
        r.stderr
    );
    assert_eq!(
        reader.join().expect("reader"),
        want.stdout,
        "what the FIFO carried"
    );
}

/// A FIFO in the test's directory.
fn mkfifo(name: &str) -> PathBuf {
    let path = dir().join(name);
    let _ = std::fs::remove_file(&path);
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).expect("no NUL in the path");
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(
        unsafe { libc::mkfifo(c.as_ptr(), 0o600) },
        0,
        "mkfifo {}",
        path.display()
    );
    path
}

/// Deep stacks of long names: folded text repeats each name on every stack it is on, the
/// JSON tree on every node, so captures of a few hundred kilobytes have outputs larger than
/// the memory limit. Outputs must be written while they are produced (they used to be built
/// whole in memory, and such a command died under the limit), and the other formats must
/// stay within it on the same captures.
#[test]
fn outputs_larger_than_the_memory_limit_are_streamed() {
    const SHARED: u32 = 600;
    const ROTATED: u32 = 240;
    let shared = Case::new(
        "shared_prefix_stacks",
        hostile::shared_prefix_stacks(SHARED),
        Expect::Samples(u64::from(SHARED)),
    );
    let rotated = Case::new(
        "rotated_deep_stacks",
        hostile::many_deep_stacks(ROTATED),
        Expect::Samples(u64::from(ROTATED)),
    );
    let lines = |n: u32| Some(u64::from(n));
    // (case, label, arguments, output larger than the memory limit, lines the output has)
    type StreamRun<'a> = (&'a Case, &'a str, &'a [&'a str], bool, Option<u64>);
    let runs: [StreamRun; 9] = [
        (
            &shared,
            "report folded",
            &["report", "--format", "folded"],
            true,
            lines(SHARED),
        ),
        (
            &shared,
            "diff folded",
            &["diff", "--format", "folded"],
            true,
            lines(SHARED),
        ),
        (
            &shared,
            "report json",
            &["report", "--format", "json"],
            false,
            None,
        ),
        (
            &shared,
            "report svg",
            &["report", "--format", "svg"],
            false,
            None,
        ),
        (
            &shared,
            "report speedscope",
            &["report", "--format", "speedscope"],
            false,
            Some(1),
        ),
        (&shared, "report", &["report"], false, None),
        (
            &rotated,
            "report json",
            &["report", "--format", "json"],
            true,
            None,
        ),
        (
            &rotated,
            "report folded",
            &["report", "--format", "folded"],
            false,
            lines(ROTATED),
        ),
        (
            &rotated,
            "report svg",
            &["report", "--format", "svg"],
            false,
            None,
        ),
    ];
    let shared_path = write_case(&shared);
    let rotated_path = write_case(&rotated);
    for (case, label, args, big, lines) in runs {
        let path = if case.name == shared.name {
            &shared_path
        } else {
            &rotated_path
        };
        let mut argv: Vec<OsString> = args.iter().map(OsString::from).collect();
        argv.insert(1, path.into());
        if args[0] == "diff" {
            argv.insert(2, path.into());
        }
        let r = run_keeping(&argv, 4096);
        let what = format!(
            "hotspot {label} on {} ({} bytes)",
            case.name,
            case.bytes.len()
        );
        assert!(
            r.status.success(),
            "{what}: {:?}, stderr: {}",
            r.status,
            r.stderr
        );
        assert!(r.cpu < CPU_LIMIT, "{what}: took {:?} of CPU", r.cpu);
        if big {
            assert!(
                r.stdout_len > MEMORY,
                "{what}: {} bytes of output, expected more than the {MEMORY}-byte limit",
                r.stdout_len
            );
        }
        if let Some(n) = lines {
            assert_eq!(r.stdout_lines, n, "{what}: lines");
        }
        let end: &[u8] = if label.ends_with("svg") {
            b"</svg>"
        } else {
            b"\n"
        };
        assert!(r.stdout_tail.ends_with(end), "{what}: output not finished");
        assert_clean(&what, &String::from_utf8_lossy(&r.stdout));
        assert_clean(&what, &String::from_utf8_lossy(&r.stdout_tail));
        eprintln!(
            "{what}: {} MB of output, {:?} CPU",
            r.stdout_len >> 20,
            r.cpu
        );
    }
    let _ = std::fs::remove_file(&shared_path);
    let _ = std::fs::remove_file(&rotated_path);
}

/// A capture cut at many offsets (every block boundary and either side of it, inside the
/// header, and evenly spread): each cut reads up to its last complete block.
#[test]
fn truncation_at_many_offsets() {
    let (bytes, ends) = hostile::written(6, 250);
    let total = bytes.len() as u64;
    let mut cuts: Vec<u64> = (0..=17).collect();
    for &(end, _) in &ends {
        cuts.extend([end - 1, end, end + 1]);
    }
    cuts.extend((1..40).map(|i| total * i / 40));
    cuts.extend([total - 1, total]);
    cuts.sort_unstable();
    cuts.dedup();
    let commands: Vec<_> = commands()
        .iter()
        .copied()
        .filter(|c| matches!(c.0, "info --json" | "report" | "report json" | "diff"))
        .collect();
    for cut in cuts {
        let expect = match cut {
            0 => Expect::Error("not a hotspot capture"),
            1..=15 => Expect::Error("cut short"),
            // The final block (index and end marker only) holds no samples.
            _ => Expect::Samples(
                ends.iter()
                    .filter(|(end, _)| *end <= cut)
                    .map(|(_, n)| *n)
                    .max()
                    .unwrap_or(0),
            ),
        };
        let case = Case::new(
            format!("truncated-at-{cut}"),
            bytes[..cut as usize].to_vec(),
            expect,
        );
        check_case(&case, &commands);
    }
}

/// Seeded random byte flips (1 to 16 bytes each) over a written capture: never more
/// samples than were written.
#[test]
fn random_byte_flips() {
    let (bytes, ends) = hostile::written(4, 300);
    let written = ends.last().map_or(0, |e| e.1);
    let mut rng = hostile::Rng(0x5eed);
    let commands: Vec<_> = commands()
        .iter()
        .copied()
        .filter(|c| matches!(c.0, "info --json" | "report json" | "report folded"))
        .collect();
    for i in 0..60 {
        let mut b = bytes.clone();
        for _ in 0..1 + rng.index(16) {
            let at = rng.index(b.len());
            b[at] ^= 1 << rng.index(8);
        }
        let case = Case::new(format!("flipped-{i}"), b, Expect::Any);
        let path = write_case(&case);
        for &cmd in &commands {
            if let Some(n) = check(&case.name, &case.expect, &path, cmd) {
                assert!(n <= written, "{}: {n} samples of {written}", case.name);
            }
        }
    }
}

/// Seeded random byte flips inside the decompressed payloads, recompressed into valid
/// blocks: the records themselves are damaged, behind correct checksums.
#[test]
fn random_flips_behind_the_checksums() {
    let prog = hostile::program(4);
    let mut rng = hostile::Rng(0xf11b);
    let commands: Vec<_> = commands()
        .iter()
        .copied()
        .filter(|c| matches!(c.0, "info --json" | "report json" | "report"))
        .collect();
    for i in 0..60 {
        let mut payloads = vec![
            hostile::payload(&prog, hostile::samples(40, hostile::T0, &[0, 1, 2, 3])),
            hostile::payload(
                &prog,
                hostile::samples(40, hostile::T0 + (1 << 30), &[3, 2]),
            ),
        ];
        for _ in 0..1 + rng.index(4) {
            let p = rng.index(payloads.len());
            let at = rng.index(payloads[p].len());
            payloads[p][at] ^= 1 << rng.index(8);
        }
        let case = Case::new(
            format!("raw-flipped-{i}"),
            hostile::file(&payloads),
            Expect::Any,
        );
        let path = write_case(&case);
        for &cmd in &commands {
            if let Some(n) = check(&case.name, &case.expect, &path, cmd) {
                assert!(n <= 80, "{}: {n} samples of 80", case.name);
            }
        }
    }
}

/// A file name made to drive the terminal: errors that quote it, and outputs that name the
/// capture, show it escaped on one line.
#[test]
fn hostile_file_names_are_escaped() {
    let name = "evil\u{1b}]0;pwned\u{7}\u{1b}[2J\nsecond line\u{202e}.hsp";
    let not_capture = Case::new(
        format!("not-a-capture-{name}"),
        b"plain text".to_vec(),
        Expect::Error("not a hotspot capture"),
    );
    check_case(&not_capture, commands());
    let (bytes, ends) = hostile::written(2, 50);
    let capture = Case::new(format!("capture-{name}"), bytes, Expect::Samples(ends[1].1));
    check_case(&capture, commands());
    // The name shows, escaped.
    let path = write_case(&capture);
    let r = run(&["info".into(), path.clone().into()]);
    let out = String::from_utf8_lossy(&r.stdout);
    assert!(out.contains("evil\\x1b]0;pwned\\x07"), "{out}");
    // A file name that is not UTF-8 shows with replacement characters.
    let not_utf8 = dir().join(std::ffi::OsStr::from_bytes(b"bad-\xff\x1b-name.hsp"));
    std::fs::write(&not_utf8, b"junk").expect("write");
    let r = run(&["report".into(), not_utf8.clone().into()]);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("bad-\u{fffd}\\x1b-name.hsp"),
        "{}",
        r.stderr
    );
    assert_clean("error", &r.stderr);
    let _ = std::fs::remove_file(&not_utf8);
    let r = run(&["info".into(), dir().join(format!("missing-{name}")).into()]);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("missing-evil\\x1b]0;pwned"),
        "{}",
        r.stderr
    );
    assert_clean("error", &r.stderr);
}

/// `--from`/`--to` (seconds and wall-clock times) and thread filters on captures whose
/// times are extreme: a report, or a one-line error such as an empty range.
#[test]
fn filters_on_extreme_times() {
    let filters: &[&[&str]] = &[
        &["--from", "0.001", "--to", "3600"],
        &["--from", "2026-11-29T08:30:05Z"],
        &["--to", "00:00:01"],
        &["--from", "999999999"],
        &["--tid", "4243", "--no-kernel"],
        &["--thread", "worker", "--pid", "4242"],
    ];
    for name in [
        "times_extreme",
        "times_all_at_max",
        "times_all_at_zero",
        "times_backwards_zero_session",
        "duplicate_definitions",
    ] {
        let case = by_name(name);
        let path = dir().join(format!("filters-{name}.hsp"));
        std::fs::write(&path, &case.bytes).expect("write");
        for f in filters {
            for format in ["text", "json", "speedscope"] {
                let mut argv: Vec<OsString> = vec![
                    "report".into(),
                    path.clone().into(),
                    "--format".into(),
                    format.into(),
                ];
                argv.extend(f.iter().map(OsString::from));
                let r = run(&argv);
                let what = format!("{name} {format} {f:?}");
                assert!(r.status.signal().is_none(), "{what}: {}", r.stderr);
                assert_ne!(r.status.code(), Some(101), "{what}: {}", r.stderr);
                assert!(r.cpu < CPU_LIMIT, "{what}: {:?} of CPU", r.cpu);
                assert_clean(&what, &r.stderr);
                if r.status.success() {
                    let out = String::from_utf8(r.stdout).expect("utf-8");
                    assert_clean(&what, &out);
                    if format != "text" {
                        serde_json::from_str::<serde_json::Value>(&out)
                            .unwrap_or_else(|e| panic!("{what}: {e}"));
                    }
                } else {
                    assert_eq!(r.stderr.lines().count(), 1, "{what}: {}", r.stderr);
                }
            }
        }
        let _ = std::fs::remove_file(&path);
    }
}

/// `report --format json` of a case, parsed.
fn report_json(name: &str) -> serde_json::Value {
    let case = by_name(name);
    let path = dir().join(format!("content-{name}.hsp"));
    std::fs::write(&path, &case.bytes).expect("write");
    let r = run(&[
        "report".into(),
        path.clone().into(),
        "--format".into(),
        "json".into(),
    ]);
    let _ = std::fs::remove_file(&path);
    assert!(r.status.success(), "{name}: {}", r.stderr);
    serde_json::from_slice(&r.stdout).expect("JSON")
}

/// Repeated definitions: the first one wins, whatever the later ones say (SPEC.md §7.2).
#[test]
fn duplicate_definitions_keep_the_first() {
    let v = report_json("duplicate_definitions");
    assert_eq!(v["totals"]["samples"], 60);
    assert_eq!(v["session"]["freq_hz"], 499, "the first session header");
    let functions = v["functions"].as_array().expect("functions");
    // Stack 0 is frame 0 alone (not frames 3, 2, 1, 0), named by the first string 1.
    assert_eq!(functions.len(), 1, "{functions:?}");
    assert_eq!(functions[0]["name"], "first_name");
    assert_eq!(functions[0]["self"], 60);
}

/// Ids nobody defined: samples of an undefined stack count as lost to damage, frames of
/// an undefined frame or module still count, under placeholder names.
#[test]
fn ids_out_of_range_are_counted_not_dropped() {
    let v = report_json("ids_out_of_range");
    assert_eq!(v["totals"]["samples"], 6);
    assert_eq!(v["totals"]["unknown_stack_samples"], 1, "stack 12345");
    let modules: Vec<(&str, &str)> = v["functions"]
        .as_array()
        .expect("functions")
        .iter()
        .filter_map(|f| Some((f["name"].as_str()?, f["module"].as_str()?)))
        .collect();
    // Frame u32::MAX is undefined; frame 77's module is undefined.
    for want in [
        ("??", "[unknown frame]"),
        ("??", "[unknown]"),
        ("fn_0", "victim"),
    ] {
        assert!(modules.contains(&want), "{want:?} missing from {modules:?}");
    }
    // The stack formats place every sample: the empty stack and the undefined one too.
    let case = by_name("ids_out_of_range");
    let path = dir().join("content-ids-folded.hsp");
    std::fs::write(&path, &case.bytes).expect("write");
    let r = run(&[
        "report".into(),
        path.clone().into(),
        "--format".into(),
        "folded".into(),
    ]);
    let _ = std::fs::remove_file(&path);
    let folded = String::from_utf8(r.stdout).expect("utf-8");
    assert!(folded.lines().any(|l| l == "[no frames] 1"), "{folded}");
    assert!(
        folded.lines().any(|l| l == "[stack lost to damage] 1"),
        "{folded}"
    );
    let total: u64 = folded
        .lines()
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
        .sum();
    assert_eq!(total, 6, "{folded}");
}

/// A truncated capture reads its complete blocks: their samples, named.
#[test]
fn a_truncated_capture_reports_its_complete_blocks() {
    let (bytes, ends) = hostile::written(3, 120);
    let cut = (ends[1].0 + ends[2].0) / 2;
    let path = dir().join("content-truncated.hsp");
    std::fs::write(&path, &bytes[..cut as usize]).expect("write");
    let r = run(&[
        "report".into(),
        path.clone().into(),
        "--format".into(),
        "json".into(),
    ]);
    let _ = std::fs::remove_file(&path);
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).expect("JSON");
    assert_eq!(v["capture"]["ending"], "truncated");
    assert_eq!(v["totals"]["samples"], ends[1].1);
    // The written stacks cycle over fn_0 … fn_3 as leaves: each a quarter of the samples.
    for f in v["functions"].as_array().expect("functions") {
        if f["self"].as_u64() != Some(0) {
            assert_eq!(f["self"].as_u64(), Some(ends[1].1 / 4), "{f}");
        }
    }
}
