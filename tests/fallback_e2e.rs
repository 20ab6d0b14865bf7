//! "Degrade, never fail, by default" on this host: the loader's test switch
//! (`HOTSPOT_TEST_REFUSE`, see `recorder/src/bpf/forced_refusal.rs`) refuses a program as an
//! older kernel's verifier would, and the default recording goes on with what can load,
//! says so in one line and records it for `info`; an explicit request that cannot be met
//! is a one-line error that leaves no capture. The kernels of the kernel matrix (6.1,
//! 6.12) load every program since issue 24, so these forced refusals are what shows the
//! fallbacks work. Needs root, like every recording.

mod common;

use std::path::Path;
use std::process::Output;

use common::fixture_arg as fixture;
use hotspot_format::{UnwindMethod, feature};
use hotspot_replay::Capture;
use hotspot_replay::profile::{self, Filter};
use hotspot_testkit::e2e::{hotspot, run_ok, serial, tmp};

const SWITCH: &str = "HOTSPOT_TEST_REFUSE";
/// What `record` prints, and `info` shows, when the stack copy is refused.
const CFI_OFF: &str = "cfi-unwinding is off, recorded with frame-pointer stacks \
     (--call-graph fp) instead: the kernel refused BPF program `hs_sample_stack`: refused \
     on request (HOTSPOT_TEST_REFUSE, a test switch)";

/// `hotspot record -o OUT [args] -- argv` with the test switch refusing `refuse`.
fn record(refuse: &str, out: &Path, args: &[&str], argv: &[&str]) -> Output {
    let _g = serial();
    hotspot()
        .env(SWITCH, refuse)
        .arg("record")
        .arg("-o")
        .arg(out)
        .args(args)
        .arg("--")
        .args(argv)
        .output()
        .expect("runs hotspot")
}

fn stderr_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// A failed recording: not a success, one line on stderr naming `program`, no file.
fn assert_one_line_failure(out: &Output, path: &Path, program: &str) {
    let lines = stderr_lines(out);
    assert!(!out.status.success(), "must fail; stderr: {lines:?}");
    assert_eq!(lines.len(), 1, "one line: {lines:?}");
    assert!(
        lines[0].starts_with("hotspot: ") && lines[0].contains(&format!("`{program}`")),
        "{lines:?}"
    );
    assert!(!path.exists(), "{} left behind", path.display());
}

#[test]
fn the_default_record_falls_back_to_frame_pointers_and_says_so() {
    let d = tmp();
    let path = d.path().join("fp.hsp");
    let out = record("hs_sample_stack", &path, &[], &[&fixture("split7030"), "2"]);
    let lines = stderr_lines(&out);
    assert!(out.status.success(), "{lines:?}");
    let said: Vec<&String> = lines.iter().filter(|l| l.contains("is off")).collect();
    assert_eq!(said, [&format!("hotspot: {CFI_OFF}")], "{lines:?}");

    let c = Capture::open(&path).expect("capture opens");
    let u = c.unwinding.expect("an Unwinding record");
    assert_eq!((u.method, u.stack_cap), (UnwindMethod::FramePointers, 0));
    assert_eq!(c.features_off.len(), 1, "{:?}", c.features_off);
    assert_eq!(c.features_off[0].feature, feature::CFI_UNWINDING);
    // The fixture keeps its frame pointers: its stacks are whole without the copy.
    let stacks = profile::fold(&c, &Filter::default()).stacks;
    let chain = ["main", "hot_a", "hot_b", "hot_leaf"];
    let (mut leaf, mut whole) = (0, 0);
    for (s, n) in &stacks {
        let names: Vec<&str> = s.iter().map(|f| &*f.function).collect();
        if names.last() == Some(&"hot_leaf") {
            leaf += n;
            if names.windows(chain.len()).any(|w| w == chain) {
                whole += n;
            }
        }
    }
    assert!(leaf > 50, "{leaf} samples in hot_leaf");
    assert!(
        whole as f64 >= 0.99 * leaf as f64,
        "{whole} of {leaf} hot_leaf samples under main→hot_a→hot_b"
    );
    assert!(c.end.is_some(), "a clean capture");

    let p = path.to_str().expect("utf-8 path");
    let text = String::from_utf8_lossy(&run_ok(hotspot().args(["info", p])).stdout).into_owned();
    assert!(
        text.lines().any(|l| l == format!("off:        {CFI_OFF}")),
        "{text}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&run_ok(hotspot().args(["info", "--json", p])).stdout)
            .expect("info --json");
    let off = &json["features_off"];
    assert_eq!(off.as_array().map(Vec::len), Some(1), "{off}");
    assert_eq!(off[0]["feature"], 1);
    assert_eq!(off[0]["name"], "cfi-unwinding");
    assert_eq!(off[0]["instead"], "frame-pointer stacks (--call-graph fp)");
    assert_eq!(json["unwinding"]["method"], "frame-pointers");

    // Without the switch the same command copies stacks and has nothing to say.
    let path = d.path().join("cfi.hsp");
    let out = record("", &path, &[], &[&fixture("split7030"), "1"]);
    let lines = stderr_lines(&out);
    assert!(out.status.success(), "{lines:?}");
    assert!(!lines.iter().any(|l| l.contains("is off")), "{lines:?}");
    let c = Capture::open(&path).expect("capture opens");
    assert_eq!(c.unwinding.map(|u| u.method), Some(UnwindMethod::Cfi));
    assert!(c.features_off.is_empty(), "{:?}", c.features_off);
    let json = run_ok(hotspot().args(["info", "--json", path.to_str().expect("utf-8")])).stdout;
    let json: serde_json::Value = serde_json::from_slice(&json).expect("info --json");
    assert!(json.get("features_off").is_none(), "{json}");
}

#[test]
fn an_explicit_stack_copy_that_cannot_load_is_a_one_line_error() {
    let d = tmp();
    for args in [
        &["--call-graph", "dwarf"][..],
        &["--stack-cap", "8192"],
        &["--call-graph", "dwarf", "-a", "-d", "1"],
    ] {
        let path = d.path().join("x.hsp");
        let argv = if args.contains(&"-a") {
            Vec::new()
        } else {
            vec![fixture("split7030"), "1".to_owned()]
        };
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let out = if argv.is_empty() {
            let _g = serial();
            hotspot()
                .env(SWITCH, "hs_sample_stack")
                .arg("record")
                .arg("-o")
                .arg(&path)
                .args(args)
                .output()
                .expect("runs hotspot")
        } else {
            record("hs_sample_stack", &path, args, &argv)
        };
        assert_one_line_failure(&out, &path, "hs_sample_stack");
        // And what records without the copy.
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--call-graph fp"),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn off_cpu_goes_on_with_frame_pointers_when_only_the_copy_is_refused() {
    let d = tmp();
    let path = d.path().join("off.hsp");
    // Whichever attach point this kernel gets, its copying sampler is refused.
    let out = record(
        "hs_off_cpu_stack,hs_off_stack_kp",
        &path,
        &["--off-cpu"],
        &[&fixture("offcpu"), "1", ""],
    );
    let lines = stderr_lines(&out);
    assert!(out.status.success(), "{lines:?}");
    let said: Vec<&String> = lines.iter().filter(|l| l.contains("is off")).collect();
    assert_eq!(said.len(), 1, "{lines:?}");
    assert!(
        said[0].starts_with("hotspot: cfi-unwinding is off")
            && (said[0].contains("`hs_off_cpu_stack`") || said[0].contains("`hs_off_stack_kp`")),
        "{said:?}"
    );
    let c = Capture::open(&path).expect("capture opens");
    assert_eq!(
        c.unwinding.map(|u| u.method),
        Some(UnwindMethod::FramePointers)
    );
    assert_eq!(c.features_off.len(), 1);
    assert!(c.off_cpu.is_some(), "off-CPU was asked for and recorded");
    assert!(!c.off_cpu_samples.is_empty(), "off-CPU samples");
    assert!(!c.thread_times.is_empty(), "ThreadTimes");
}

#[test]
fn explicit_off_cpu_that_cannot_load_is_a_one_line_error() {
    let d = tmp();
    let mut refused = Vec::new();
    for program in ["hs_switch", "hs_off_cpu", "hs_off_kp"] {
        let path = d.path().join("x.hsp");
        let out = record(
            program,
            &path,
            &["--off-cpu", "--call-graph", "fp"],
            &[&fixture("offcpu"), "1", ""],
        );
        // Only the sampler this kernel attaches is loaded: a refusal of the other is
        // no refusal at all.
        if out.status.success() {
            assert_ne!(program, "hs_switch", "every kernel loads hs_switch");
            assert!(path.exists());
            std::fs::remove_file(&path).expect("remove");
            continue;
        }
        assert_one_line_failure(&out, &path, program);
        refused.push(program);
    }
    // hs_switch, and the one sampler of the two this kernel uses.
    assert_eq!(refused.len(), 2, "{refused:?}");
}

#[test]
fn a_recording_that_fails_to_start_leaves_no_file() {
    let d = tmp();
    let path = d.path().join("x.hsp");
    // The command cannot run: the recorder learns it at the gate, after it has opened
    // its capture and attached its programs.
    let out = record("", &path, &[], &["/nonexistent/hotspot-test-program"]);
    let lines = stderr_lines(&out);
    assert!(!out.status.success(), "{lines:?}");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("/nonexistent/hotspot-test-program"),
        "{lines:?}"
    );
    assert!(!path.exists(), "{} left behind", path.display());
}
