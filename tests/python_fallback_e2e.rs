//! "Degrade, never fail" for Python frames (issues 24 and 26), with the real BPF program:
//! when the kernel refuses the samplers with the Python walk in them (as Debian 12's 6.1
//! did with an earlier walk), the default recording goes on with the samplers without it,
//! says so in one line, records it (`FeatureOff`, feature `python-frames`) and names each
//! Python process as not walked; everything else (the stack copy, off-CPU) is kept. The
//! loader's test switch (`HOTSPOT_TEST_REFUSE=python_walk`, see
//! `recorder/src/bpf/forced_refusal.rs`) refuses the walk here as such a kernel would.
//! Needs root and Debian's `/usr/bin/python3`; fails naming what is missing, never skips.

use std::path::{Path, PathBuf};
use std::process::Output;

use hotspot_format::{InterpreterStatus, UnwindMethod, feature};
use hotspot_replay::Capture;
use hotspot_replay::profile::{self, Filter};
use hotspot_testkit::e2e::{hotspot, run_ok, serial, tmp};

const SWITCH: &str = "HOTSPOT_TEST_REFUSE";
/// What `record` prints, and `info` shows, when the walk is refused with the stack copy on.
const PYTHON_OFF: &str = "python-frames is off, recorded with native stacks instead: the \
     kernel refused BPF program `hs_sample_stack`: refused on request (HOTSPOT_TEST_REFUSE, \
     a test switch)";

fn python() -> String {
    let exe = PathBuf::from("/usr/bin/python3");
    assert!(
        exe.exists(),
        "Debian's /usr/bin/python3 is missing: apt-get install python3"
    );
    exe.display().to_string()
}

fn script(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/python_e2e")
        .join(name)
        .display()
        .to_string()
}

/// `hotspot record -o OUT [args] -- python3 split.py SECONDS` with the switch at `refuse`.
fn record(refuse: &str, out: &Path, args: &[&str], seconds: &str) -> Output {
    let _g = serial();
    hotspot()
        .env(SWITCH, refuse)
        .arg("record")
        .arg("-o")
        .arg(out)
        .args(args)
        .arg("--")
        .args([python(), script("split.py"), seconds.to_owned()])
        .output()
        .expect("runs hotspot")
}

fn off_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains("is off"))
        .map(str::to_owned)
        .collect()
}

/// Samples with a frame of the `[python]` module, and all samples.
fn python_samples(c: &Capture) -> (u64, u64) {
    let stacks = profile::fold(c, &Filter::default()).stacks;
    let with = stacks
        .iter()
        .filter(|(s, _)| s.iter().any(|f| &*f.module == "[python]"))
        .map(|(_, n)| n)
        .sum();
    (with, stacks.values().sum())
}

#[test]
fn a_refused_python_walk_leaves_native_stacks_and_says_so() {
    let d = tmp();
    let path = d.path().join("off.hsp");
    let out = record("python_walk", &path, &[], "2");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(off_lines(&out), [format!("hotspot: {PYTHON_OFF}")]);

    let c = Capture::open(&path).expect("capture opens");
    assert!(c.end.is_some(), "a clean capture");
    // Only the walk went: stacks are still copied and unwound with CFI.
    assert_eq!(c.unwinding.map(|u| u.method), Some(UnwindMethod::Cfi));
    let features: Vec<u32> = c.features_off.iter().map(|f| f.feature).collect();
    assert_eq!(features, [feature::PYTHON_FRAMES], "{:?}", c.features_off);
    assert_eq!(c.features_off[0].instead, "native stacks");
    let (with, all) = python_samples(&c);
    assert!(all > 200, "{all} samples");
    assert_eq!(with, 0, "{with} of {all} samples with Python frames");
    // The interpreter is named, as not walked, and why.
    let interps: Vec<_> = c.interpreters.values().collect();
    assert_eq!(interps.len(), 1, "{interps:?}");
    match &interps[0].status {
        InterpreterStatus::Unsupported { reason } => assert!(
            reason.starts_with("python-frames is off: the kernel refused BPF program"),
            "{reason}"
        ),
        s => panic!("walked although the walk was refused: {s:?}"),
    }
    assert_eq!(interps[0].samples, 0, "{:?}", interps[0]);

    let p = path.to_str().expect("utf-8 path");
    let text = String::from_utf8_lossy(&run_ok(hotspot().args(["info", p])).stdout).into_owned();
    assert!(
        text.lines()
            .any(|l| l == format!("off:        {PYTHON_OFF}")),
        "{text}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&run_ok(hotspot().args(["info", "--json", p])).stdout)
            .expect("info --json");
    let off = &json["features_off"];
    assert_eq!(off.as_array().map(Vec::len), Some(1), "{off}");
    assert_eq!(off[0]["feature"], 2);
    assert_eq!(off[0]["name"], "python-frames");

    // Without the switch the same command walks Python and has nothing to say.
    let path = d.path().join("on.hsp");
    let out = record("", &path, &[], "1");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(off_lines(&out).is_empty(), "{:?}", off_lines(&out));
    let c = Capture::open(&path).expect("capture opens");
    assert!(c.features_off.is_empty(), "{:?}", c.features_off);
    let (with, all) = python_samples(&c);
    assert!(
        with as f64 >= 0.8 * all as f64,
        "{with} of {all} samples with Python frames"
    );
}

#[test]
fn the_walk_goes_before_the_stack_copy_and_off_cpu_stays() {
    let d = tmp();
    // Both refused: frame pointers without the walk, each said once, the walk first.
    let path = d.path().join("both.hsp");
    let out = record("python_walk,hs_sample_stack", &path, &[], "1");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = off_lines(&out);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with("hotspot: python-frames is off"),
        "{lines:?}"
    );
    assert!(
        lines[1].starts_with("hotspot: cfi-unwinding is off"),
        "{lines:?}"
    );
    let c = Capture::open(&path).expect("capture opens");
    assert_eq!(
        c.unwinding.map(|u| u.method),
        Some(UnwindMethod::FramePointers)
    );
    let mut features: Vec<u32> = c.features_off.iter().map(|f| f.feature).collect();
    features.sort_unstable();
    assert_eq!(
        features,
        [feature::CFI_UNWINDING, feature::PYTHON_FRAMES],
        "{:?}",
        c.features_off
    );
    assert_eq!(python_samples(&c).0, 0);

    // Explicit --call-graph dwarf and --off-cpu still record: only the walk is dropped.
    let path = d.path().join("dwarf.hsp");
    let out = record(
        "python_walk",
        &path,
        &["--call-graph", "dwarf", "--off-cpu"],
        "1",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(off_lines(&out).len(), 1, "{:?}", off_lines(&out));
    let c = Capture::open(&path).expect("capture opens");
    assert_eq!(c.unwinding.map(|u| u.method), Some(UnwindMethod::Cfi));
    assert!(c.off_cpu.is_some(), "off-CPU data kept");
    let features: Vec<u32> = c.features_off.iter().map(|f| f.feature).collect();
    assert_eq!(features, [feature::PYTHON_FRAMES]);
    assert_eq!(python_samples(&c).0, 0);
}
