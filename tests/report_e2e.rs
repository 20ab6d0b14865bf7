//! End-to-end tests of `hotspot report`, `info` and `diff` as a user runs them: every
//! format from the binary, byte-identical reruns, one-line errors, the pprof terminal
//! guard, and live recordings (root + BPF, like `record_e2e`) sliced by the phase times the
//! fixture prints and read back by `go tool pprof` and speedscope's schema.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use hotspot_replay::export::Format;
use hotspot_testkit::e2e::{hotspot, run_ok as ok, tmp};
use serde_json::Value;

/// Recordings share two CPUs: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn capture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/captures")
        .join(name)
}

fn stdout(args: &[&str]) -> Vec<u8> {
    ok(hotspot().args(args)).stdout
}

fn json(args: &[&str]) -> Value {
    serde_json::from_slice(&stdout(args)).expect("json output")
}

/// stderr of a command that must fail with exit code 1 and one line naming the problem.
fn error(args: &[&str]) -> String {
    let out = hotspot().args(args).output().expect("run");
    assert_eq!(out.status.code(), Some(1), "{args:?} should fail");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(err.lines().count(), 1, "{args:?}: one line, got {err:?}");
    assert!(err.starts_with("hotspot: "), "{err}");
    assert!(out.stdout.is_empty(), "{args:?} wrote to stdout on failure");
    err
}

fn npm_modules() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/npm-tools/node_modules");
    assert!(
        dir.join("ajv").is_dir() && dir.join("speedscope").is_dir(),
        "run `tools/test --install-only` (it installs speedscope and ajv into target/npm-tools)"
    );
    dir
}

#[test]
fn every_command_and_format_works_and_is_deterministic() {
    let dir = tmp();
    let split = capture("split7030.hsp");
    let split = split.to_str().expect("utf-8");
    let text = String::from_utf8(stdout(&["report", split])).expect("utf-8");
    assert!(text.starts_with("split7030.hsp: 840 samples"), "{text}");
    let top = text.lines().nth(2).expect("first row");
    assert!(
        top.contains("hot_leaf") && top.contains("split7030.c:"),
        "{top}"
    );
    for format in Format::ALL.map(Format::name) {
        let a = dir.path().join(format!("a.{format}"));
        let b = dir.path().join(format!("b.{format}"));
        for out in [&a, &b] {
            ok(hotspot()
                .args(["report", split, "--format", format, "--from", "0.5", "-o"])
                .arg(out));
        }
        let (x, y) = (std::fs::read(&a).expect("a"), std::fs::read(&b).expect("b"));
        assert!(!x.is_empty(), "{format}: empty");
        assert!(x == y, "{format}: two runs differ");
        // stdout gives the same bytes as -o (pprof too, through a pipe).
        let piped = stdout(&["report", split, "--format", format, "--from", "0.5"]);
        assert!(piped == x, "{format}: stdout differs from -o");
    }
    let info = String::from_utf8(stdout(&["info", split])).expect("utf-8");
    for want in [
        "host:",
        "recorded:",
        "command:",
        "duration:",
        "samples:    840",
        "symbols:",
        "ending:     clean",
        "size:",
    ] {
        assert!(info.contains(want), "info lacks {want:?}:\n{info}");
    }
    let v = json(&["info", split, "--json"]);
    assert_eq!(v["schema"], "hotspot-info");
    assert_eq!(v["counts"]["samples"], 840);
    let other = capture("split3070.hsp");
    let other = other.to_str().expect("utf-8");
    let diff = String::from_utf8(stdout(&["diff", split, other, "--top", "4"])).expect("utf-8");
    // Two header lines and the noise legend, then the column names, then the rows.
    assert!(
        diff.lines().nth(4).is_some_and(|l| l.contains("_leaf")),
        "{diff}"
    );
    let v = json(&["diff", split, other, "--format", "json"]);
    assert_eq!(v["schema"], "hotspot-diff");
    let folded =
        String::from_utf8(stdout(&["diff", split, other, "--format", "folded"])).expect("utf-8");
    assert!(folded.lines().all(|l| l.rsplitn(3, ' ').count() == 3));
    assert_eq!(
        stdout(&["diff", split, other]),
        stdout(&["diff", split, other])
    );
}

#[test]
fn errors_are_one_line_and_name_the_problem() {
    let dir = tmp();
    let phased = capture("phased-report.hsp");
    let phased = phased.to_str().expect("utf-8");
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    assert!(error(&["report", readme.to_str().expect("utf-8")]).contains("not a hotspot capture"));
    assert!(error(&["info", "/nonexistent.hsp"]).contains("/nonexistent.hsp: No such file"));
    assert!(error(&["report", "/tmp"]).contains("is a directory"));
    let newer = dir.path().join("newer.hsp");
    std::fs::write(&newer, b"\x89HSP\r\n\x1a\n\x02\x00\x00\x00\x00\x00\x00\x00").expect("write");
    let e = error(&["report", newer.to_str().expect("utf-8")]);
    assert!(e.contains("newer than the supported version"), "{e}");
    let e = error(&["report", phased, "--from", "100"]);
    assert!(
        e.contains("empty time range: no samples after 100.000 s"),
        "{e}"
    );
    let e = error(&["report", phased, "--from", "3", "--to", "2"]);
    assert!(
        e.contains("empty time range") && e.contains("not before"),
        "{e}"
    );
    let e = error(&["report", phased, "--thread", "nope"]);
    assert!(
        e.contains("unknown thread 'nope'") && e.contains("phased (tid "),
        "{e}"
    );
    assert!(error(&["report", phased, "--tid", "1"]).contains("unknown thread --tid 1"));
    assert!(error(&["report", phased, "--pid", "1"]).contains("unknown process --pid 1"));
    let e = error(&[
        "diff",
        phased,
        capture("split7030.hsp").to_str().expect("u"),
        "--thread",
        "phased",
    ]);
    assert!(
        e.contains("split7030.hsp") && e.contains("unknown thread 'phased'"),
        "{e}"
    );
    assert!(error(&["report", phased, "--format", "svg", "--top", "3"]).contains("--top"));
    // A report never replaces a capture.
    let copy = dir.path().join("copy.hsp");
    std::fs::copy(phased, &copy).expect("copy");
    let e = error(&["report", phased, "-o", copy.to_str().expect("utf-8")]);
    assert!(e.contains("is a capture"), "{e}");
    assert_eq!(std::fs::read(&copy).ok(), std::fs::read(phased).ok());
}

#[test]
fn pprof_refuses_a_terminal() {
    // `script` gives the command a pseudo-terminal as stdout.
    let cmd = format!(
        "{} report {} --format pprof",
        env!("CARGO_BIN_EXE_hotspot"),
        capture("split7030.hsp").display()
    );
    let out = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .output()
        .expect("script (util-linux)");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "pprof was written to a terminal");
    assert!(
        text.contains("pprof output is binary") && text.contains("-o OUT"),
        "{text}"
    );
    assert!(!text.contains('\u{1f}'), "no gzip bytes on the terminal");
}

/// Records `argv` and returns (capture, the fixture's stderr).
fn record(dir: &Path, name: &str, argv: &[&str]) -> (PathBuf, String) {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out_path = dir.join(format!("{name}.hsp"));
    let out = ok(hotspot()
        .args(["record", "-o"])
        .arg(&out_path)
        .arg("--")
        .args(argv));
    (out_path, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn live_phases_sliced_by_the_times_the_fixture_printed() {
    let dir = tmp();
    let bin = common::fixture("phased");
    let (path, stderr) = record(dir.path(), "phased", &[bin.to_str().expect("utf-8"), "1"]);
    let path = path.to_str().expect("utf-8");
    let mark = |what: &str| -> u64 {
        stderr
            .lines()
            .find_map(|l| l.strip_prefix(&format!("phased: {what}=")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {what} in {stderr}"))
    };
    let info = json(&["info", path, "--json"]);
    let start_mono = info["session"]["start_mono_ns"]
        .as_u64()
        .expect("start_mono_ns");
    let start_wall = info["session"]["start_wall_ns"]
        .as_u64()
        .expect("start_wall_ns");
    let bounds = [
        ("p1", mark("phase_one start_ns"), mark("phase_two start_ns")),
        (
            "p2",
            mark("phase_two start_ns"),
            mark("phase_three start_ns"),
        ),
        ("p3", mark("phase_three start_ns"), mark("end_ns")),
    ];
    for (i, (phase, from, to)) in bounds.into_iter().enumerate() {
        // 100 ms inside each phase, as seconds from the start; p3 also as UTC times.
        let (from, to) = (
            from + 100_000_000 - start_mono,
            to - 100_000_000 - start_mono,
        );
        let (from_arg, to_arg) = if i == 2 {
            let utc = |ns: u64| {
                let secs = (start_wall + ns) / 1_000_000_000;
                let ms = (start_wall + ns) / 1_000_000 % 1000;
                format!(
                    "{:02}:{:02}:{:02}.{ms:03}",
                    secs % 86_400 / 3600,
                    secs % 3600 / 60,
                    secs % 60
                )
            };
            (utc(from), utc(to))
        } else {
            (
                format!("{:.3}", from as f64 / 1e9),
                format!("{:.3}", to as f64 / 1e9),
            )
        };
        let v = json(&[
            "report",
            path,
            "--format",
            "json",
            "--no-kernel",
            "--from",
            &from_arg,
            "--to",
            &to_arg,
        ]);
        let names: Vec<&str> = v["functions"]
            .as_array()
            .expect("functions")
            .iter()
            .map(|f| f["name"].as_str().expect("name"))
            .collect();
        assert_eq!(
            names.first(),
            Some(&format!("{phase}_leaf").as_str()),
            "{phase}: {names:?}"
        );
        for other in ["p1", "p2", "p3"].iter().filter(|p| **p != phase) {
            assert!(
                !names.iter().any(|n| n.starts_with(&format!("{other}_"))),
                "{phase} window holds {other}: {names:?}"
            );
        }
        assert!(v["totals"]["samples"].as_u64().expect("n") > 50);
    }
}

#[test]
fn live_threads_in_pprof_and_speedscope() {
    let dir = tmp();
    let bin = common::fixture("threads");
    let (path, _) = record(dir.path(), "threads", &[bin.to_str().expect("utf-8"), "2"]);
    let path = path.to_str().expect("utf-8");
    let report = json(&["report", path, "--format", "json"]);
    // go tool pprof lists the report's top functions with the same counts.
    let pb = dir.path().join("threads.pb.gz");
    ok(hotspot()
        .args(["report", path, "--format", "pprof", "-o"])
        .arg(&pb));
    let out = ok(Command::new("go")
        .args([
            "tool",
            "pprof",
            "-top",
            "-sample_index=samples",
            "-symbolize=none",
            "-nodecount=1000",
            "-nodefraction=0",
            "-edgefraction=0",
        ])
        .arg(&pb)
        .env("HOME", dir.path()));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    // go tool pprof marks a function met only as an inlined frame `NAME (inline)` (the
    // fixture's `fx_now` at times): the report names it without the mark.
    let mut pprof: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for (name, counts) in text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((
                f.get(5..)?.join(" "),
                (f[0].parse().ok()?, f[3].parse().ok()?),
            ))
        })
    {
        match name.strip_suffix(" (inline)") {
            Some(plain) => pprof.entry(plain.to_string()).or_insert(counts),
            None => pprof.entry(name).or_insert(counts),
        };
    }
    for f in report["functions"]
        .as_array()
        .expect("functions")
        .iter()
        .take(5)
    {
        let name = f["name"].as_str().expect("name");
        let want = (
            f["self"].as_u64().expect("self"),
            f["total"].as_u64().expect("total"),
        );
        assert_eq!(
            pprof.get(name),
            Some(&want),
            "{name} in go tool pprof:\n{text}"
        );
    }
    // speedscope: valid against the package's schema, one profile per thread, counts match.
    let ss = dir.path().join("threads.speedscope.json");
    ok(hotspot()
        .args(["report", path, "--format", "speedscope", "-o"])
        .arg(&ss));
    let schema = npm_modules().join("speedscope/dist/release/file-format-schema.json");
    ok(Command::new("node")
        .env("NODE_PATH", npm_modules())
        .arg("-e")
        .arg(
            "const A=require('ajv');const fs=require('fs');const [s,d]=process.argv.slice(1);\
             const v=new A({strict:false}).compile(JSON.parse(fs.readFileSync(s)));\
             if(!v(JSON.parse(fs.readFileSync(d)))){console.error(JSON.stringify(v.errors));process.exit(1)}",
        )
        .arg(&schema)
        .arg(&ss));
    let v: Value = serde_json::from_slice(&std::fs::read(&ss).expect("read")).expect("json");
    let period = report["session"]["period_ns"].as_u64().expect("period");
    let per_profile: BTreeMap<String, u64> = v["profiles"]
        .as_array()
        .expect("profiles")
        .iter()
        .map(|p| {
            let w: u64 = p["weights"]
                .as_array()
                .expect("w")
                .iter()
                .map(|x| x.as_u64().expect("u"))
                .sum();
            (p["name"].as_str().expect("name").to_string(), w / period)
        })
        .collect();
    let threads = report["threads"].as_array().expect("threads");
    assert!(threads.len() >= 3, "three worker threads: {threads:?}");
    for t in threads {
        let label = format!("{} (tid {})", t["name"].as_str().expect("n"), t["tid"]);
        assert_eq!(
            per_profile.get(&label),
            t["samples"].as_u64().as_ref(),
            "{label}"
        );
    }
    // --thread NAME keeps exactly that thread's samples.
    for t in threads {
        let name = t["name"].as_str().expect("name");
        let only = json(&["report", path, "--format", "json", "--thread", name]);
        assert_eq!(only["totals"]["samples"], t["samples"], "--thread {name}");
        assert_eq!(
            only["selection"]["tids"],
            serde_json::json!([t["tid"]]),
            "--thread {name}"
        );
        assert_eq!(only["threads"].as_array().map(Vec::len), Some(1));
    }
}
