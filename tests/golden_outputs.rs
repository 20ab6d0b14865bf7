//! Every headless output of the committed captures, byte for byte, against the files in
//! `tests/golden/outputs/` written by the release before the replay side was redesigned
//! (issue 15): text, JSON, folded, SVG, pprof, speedscope, `info` and `diff`, whole and
//! filtered; the off-CPU capture's (and every `--metric` case) were written when issue 16
//! added them. `UPDATE_GOLDEN=1 cargo test --test golden_outputs` rewrites them; a change
//! there must be one the commit means to make.

use std::path::Path;
use std::process::Command;

use hotspot_replay::export::{DiffFormat, Format};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Captures in `fixtures/captures/`: frame-pointer recordings of the C fixtures, the
/// synthetic one (two processes, a renamed thread, lost samples), and a CFI-unwound
/// recording of Debian's python3 with three threads and kernel frames, whole and cut, and
/// an `--off-cpu` recording (format 1.3) of threads that sleep, read a pipe, spin and fsync.
const CAPTURES: &[&str] = &[
    "phased",
    "phased-report",
    "split3070",
    "split7030",
    "synthetic-v1",
    "threads",
    "python3-threads",
    "python3-threads-cut",
    "offcpu",
];

/// Filter sets run on every capture (an empty range is an error, compared as such).
const FILTERS: &[(&str, &[&str])] = &[
    ("all", &[]),
    ("window", &["--from", "0.3", "--to", "0.8"]),
    ("nokernel", &["--no-kernel"]),
];

/// Filters that only mean something on one capture.
const SPECIFIC: &[(&str, &str, &[&str])] = &[
    (
        "python3-threads",
        "tid",
        &["--tid", "22698", "--tid", "22699"],
    ),
    (
        "python3-threads",
        "pid",
        &["--pid", "22696", "--from", "500ms"],
    ),
    ("threads", "thread", &["--thread", "hs-beta"]),
    ("synthetic-v1", "renamed", &["--thread", "worker-1-renamed"]),
    ("phased-report", "late", &["--from", "4", "--top", "3"]),
    ("phased", "wallclock", &["--to", "1.5"]),
    ("offcpu", "metric-off-cpu", &["--metric", "off-cpu"]),
    (
        "offcpu",
        "metric-wall",
        &[
            "--metric",
            "wall",
            "--no-kernel",
            "--thread",
            "oc-alternate",
        ],
    ),
    (
        "offcpu",
        "metric-wall-window",
        &["--metric", "wall", "--from", "0.5", "--to", "1.5"],
    ),
    // A metric the capture cannot give: the error line, in every format.
    ("phased", "metric-off-cpu", &["--metric", "off-cpu"]),
];

/// Output of one run: stdout (or the `-o` file), then stderr and the exit code, so an
/// error's wording is held as firmly as a report's.
fn run(args: &[String], out_file: Option<&Path>) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_hotspot"))
        .current_dir(root())
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run hotspot");
    let mut bytes = match out_file {
        Some(f) if out.status.success() => std::fs::read(f).expect("read -o output"),
        _ => out.stdout,
    };
    if !out.stderr.is_empty() || !out.status.success() {
        bytes.extend_from_slice(b"\n--- stderr ---\n");
        bytes.extend_from_slice(&out.stderr);
        bytes.extend_from_slice(format!("--- exit {:?} ---\n", out.status.code()).as_bytes());
    }
    bytes
}

fn check(name: &str, actual: &[u8], failures: &mut Vec<String>) {
    let path = root().join("tests/golden/outputs").join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, actual).expect("write golden");
        return;
    }
    match std::fs::read(&path) {
        Ok(want) if want == actual => {}
        Ok(want) => {
            let at = want
                .iter()
                .zip(actual)
                .position(|(a, b)| a != b)
                .unwrap_or(want.len().min(actual.len()));
            failures.push(format!(
                "{name}: differs at byte {at} (golden {} bytes, now {}): now {:?}",
                want.len(),
                actual.len(),
                String::from_utf8_lossy(
                    &actual[at.saturating_sub(40)..(at + 80).min(actual.len())]
                )
            ));
        }
        Err(e) => failures.push(format!(
            "{name}: no golden file ({e}); UPDATE_GOLDEN=1 writes it"
        )),
    }
}

fn capture(name: &str) -> String {
    format!("fixtures/captures/{name}.hsp")
}

fn report(name: &str, cap: &str, format: &str, filter: &[&str], failures: &mut Vec<String>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut args: Vec<String> = ["report", &capture(cap), "--format", format]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(filter.iter().map(|s| s.to_string()));
    let out = (format == "pprof").then(|| dir.path().join("out.pb.gz"));
    if let Some(o) = &out {
        args.push("-o".into());
        args.push(o.display().to_string());
    }
    check(name, &run(&args, out.as_deref()), failures);
}

#[test]
fn reports_are_unchanged() {
    let mut failures = Vec::new();
    for cap in CAPTURES {
        for format in Format::ALL.map(Format::name) {
            for (label, filter) in FILTERS {
                report(
                    &format!("{cap}.{label}.{format}"),
                    cap,
                    format,
                    filter,
                    &mut failures,
                );
            }
        }
    }
    for (cap, label, filter) in SPECIFIC {
        for format in Format::ALL.map(Format::name) {
            // --top belongs to text and json only (the others refuse it: compared too).
            report(
                &format!("{cap}.{label}.{format}"),
                cap,
                format,
                filter,
                &mut failures,
            );
        }
    }
    assert!(
        failures.is_empty(),
        "{} outputs changed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn info_is_unchanged() {
    let mut failures = Vec::new();
    for cap in CAPTURES {
        for (label, extra) in [("txt", &[][..]), ("json", &["--json"][..])] {
            let mut args = vec!["info".to_string(), capture(cap)];
            args.extend(extra.iter().map(|s| s.to_string()));
            check(
                &format!("{cap}.info.{label}"),
                &run(&args, None),
                &mut failures,
            );
        }
    }
    assert!(
        failures.is_empty(),
        "{} outputs changed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn diffs_are_unchanged() {
    let pairs: &[(&str, &str, &str, &[&str])] = &[
        ("7030-3070", "split7030", "split3070", &[]),
        (
            "3070-7030-nokernel",
            "split3070",
            "split7030",
            &["--no-kernel", "--top", "4"],
        ),
        (
            "phased-window",
            "phased",
            "phased-report",
            &["--from", "0.5", "--to", "1.5"],
        ),
        ("python3-cut", "python3-threads", "python3-threads-cut", &[]),
        ("threads-synthetic", "threads", "synthetic-v1", &[]),
    ];
    let mut failures = Vec::new();
    for (label, a, b, filter) in pairs {
        for format in DiffFormat::ALL.map(DiffFormat::name) {
            let mut args: Vec<String> = vec!["diff".into(), capture(a), capture(b)];
            args.extend(["--format".to_string(), format.to_string()]);
            args.extend(filter.iter().map(|s| s.to_string()));
            check(
                &format!("diff.{label}.{format}"),
                &run(&args, None),
                &mut failures,
            );
        }
    }
    assert!(
        failures.is_empty(),
        "{} outputs changed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
