//! `hotspot report|diff --metric` and `hotspot info` on a synthetic capture with off-CPU
//! data, through the binary (no privileges): the flag reaches every format, the default
//! is `cpu` and ignores off-CPU records, and a metric the capture cannot give is one line
//! of error.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use hotspot_replay::export::Format;
use hotspot_testkit::synthetic::off_cpu::{self, Config};

fn hotspot(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hotspot"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run hotspot")
}

fn ok(args: &[&str]) -> Vec<u8> {
    let out = hotspot(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The capture with off-CPU data as `dir/with/c.hsp`, without as `dir/without/c.hsp`
/// (one file name, so reports that print it compare).
fn captures(test: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix(test)
        .tempdir()
        .expect("tmp");
    let b = off_cpu::build(&Config::default());
    let write = |sub: &str, bytes: &[u8]| {
        let d = dir.path().join(sub);
        std::fs::create_dir_all(&d).expect("mkdir");
        let p = d.join("c.hsp");
        std::fs::write(&p, bytes).expect("write");
        p
    };
    let with = write("with", &b.bytes);
    let without = write("without", &b.cpu_only);
    (dir, with, without)
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

#[test]
fn the_default_metric_is_cpu_and_ignores_off_cpu_data() {
    let (dir, with, without) = captures("metric-default");
    for format in Format::ALL.map(Format::name) {
        let run = |file: &Path, metric: Option<&str>| {
            let out = dir.path().join(format!("out-{format}"));
            let mut args = vec!["report", s(file), "--format", format, "-o", s(&out)];
            if let Some(m) = metric {
                args.extend(["--metric", m]);
            }
            ok(&args);
            std::fs::read(&out).expect("read output")
        };
        let default = run(&with, None);
        assert!(default == run(&with, Some("cpu")), "{format}");
        let mut cpu_only = run(&without, None);
        let mut default_cmp = default.clone();
        if format == "json" {
            // The files' sizes differ; nothing else may.
            for doc in [&mut cpu_only, &mut default_cmp] {
                let mut v: serde_json::Value = serde_json::from_slice(doc).expect("json");
                v["capture"]["size_bytes"] = serde_json::Value::Null;
                *doc = v.to_string().into_bytes();
            }
        }
        assert!(default_cmp == cpu_only, "{format}");
        assert!(default != run(&with, Some("wall")), "{format}");
    }
}

#[test]
fn off_cpu_and_wall_reach_report_and_diff() {
    let (_dir, with, _) = captures("metric-reach");
    let text =
        String::from_utf8(ok(&["report", s(&with), "--metric", "off-cpu"])).expect("UTF-8 output");
    assert!(
        text.lines()
            .next()
            .expect("a header")
            .starts_with("c.hsp: off-CPU time, "),
        "{text}"
    );
    let folded = String::from_utf8(ok(&[
        "report",
        s(&with),
        "--metric",
        "wall",
        "--format",
        "folded",
    ]))
    .expect("UTF-8 output");
    assert!(folded.contains(";[off-CPU: D uninterruptible] "));
    let diff = String::from_utf8(ok(&["diff", s(&with), s(&with), "--metric", "wall"]))
        .expect("UTF-8 output");
    assert!(diff.starts_with("wall-clock time; base: c.hsp ("), "{diff}");
    let info = String::from_utf8(ok(&["info", s(&with)])).expect("UTF-8 output");
    assert!(
        info.contains("\nthread times: measured in the kernel"),
        "{info}"
    );
}

#[test]
fn a_metric_the_capture_cannot_give_is_one_line_of_error() {
    let (_dir, with, without) = captures("metric-errors");
    for args in [
        vec!["report", s(&without), "--metric", "off-cpu"],
        vec![
            "report",
            s(&without),
            "--metric",
            "wall",
            "--format",
            "json",
        ],
        vec!["diff", s(&with), s(&without), "--metric", "off-cpu"],
    ] {
        let out = hotspot(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("c.hsp has no off-CPU data: record with --off-cpu"),
            "{err}"
        );
        assert!(out.stdout.is_empty());
    }
    let out = hotspot(&["report", s(&with), "--metric", "offcpu"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown metric 'offcpu': expected cpu, off-cpu or wall"),
        "{err}"
    );
    let info = String::from_utf8(ok(&["info", s(&without)])).expect("UTF-8 output");
    assert!(info.contains("\noff-CPU:    no off-CPU data (recorded without --off-cpu)\n"));
}
