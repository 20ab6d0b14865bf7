//! The shippable binary as `tools/build-static` makes it: statically linked (no dynamic
//! dependencies), under 12 MB, stripped with its debug info beside it, naming its version
//! and revision, and recording, describing and reporting a workload in a root that holds
//! nothing but that binary, a static fixture and the kernel's /proc, /sys and /dev. Root:
//! the recording loads BPF, and the minimal root is a chroot in a new mount namespace.
//!
//! The script builds into its own target dir (target/static), so the first run compiles
//! every dependency again (8 min on two CPUs shared with other builds, 3.7 min of CPU);
//! later runs rebuild only what changed (after a commit only the root crate: 26 s).

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::Instant;

use hotspot_testkit::e2e::{hotspot, serial, tmp};
use serde_json::Value;

/// The size the shipped binary must stay under (bytes).
const MAX_SIZE: u64 = 12_000_000;

/// The two files `tools/build-static` leaves, as it printed them.
struct Shipped {
    bin: PathBuf,
    debug: PathBuf,
}

/// Runs `tools/build-static` once per test binary (cargo makes it a no-op when nothing
/// changed) into a directory of the tests' own, and takes the paths it printed.
fn shipped() -> &'static Shipped {
    static SHIPPED: OnceLock<Shipped> = OnceLock::new();
    SHIPPED.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("static-dist");
        let start = Instant::now();
        let out = Command::new(root.join("tools/build-static"))
            .arg(&out_dir)
            .output()
            .expect("running tools/build-static");
        assert!(
            out.status.success(),
            "tools/build-static failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        eprintln!(
            "tools/build-static took {:.0} s:\n{text}",
            start.elapsed().as_secs_f64()
        );
        let printed = |label: &str| -> PathBuf {
            let line = text
                .lines()
                .find_map(|l| l.strip_prefix(label))
                .unwrap_or_else(|| panic!("tools/build-static printed no {label:?} line:\n{text}"));
            let path = PathBuf::from(line.split_whitespace().next().expect("a path"));
            assert!(path.is_file(), "{} does not exist", path.display());
            path
        };
        let shipped = Shipped {
            bin: printed("binary:"),
            debug: printed("debug info:"),
        };
        assert_eq!(shipped.bin, out_dir.join("hotspot"));
        assert_eq!(shipped.debug, out_dir.join("hotspot.debug"));
        shipped
    })
}

/// `ldd`'s verdict on a file (stdout and stderr; it exits 1 for a static non-PIE file).
fn ldd(path: &Path) -> String {
    let out = Command::new("ldd")
        .arg(path)
        .output()
        .expect("running ldd (Debian: libc-bin)");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn assert_static(path: &Path) {
    let verdict = ldd(path);
    assert!(
        (verdict.contains("not a dynamic executable") || verdict.contains("statically linked"))
            && !verdict.contains("=>"),
        "{}: ldd finds dynamic dependencies:\n{verdict}",
        path.display()
    );
}

fn sections(path: &Path) -> String {
    common::run_tool(Command::new("readelf").arg("-SW").arg(path))
}

#[test]
fn the_shipped_binary_is_static_stripped_small_and_keeps_its_debug_info_apart() {
    let s = shipped();
    assert_static(&s.bin);
    let headers = common::run_tool(Command::new("readelf").arg("-lW").arg(&s.bin));
    assert!(
        !headers.contains("INTERP"),
        "a program interpreter:\n{headers}"
    );
    let dynamic = common::run_tool(Command::new("readelf").arg("-dW").arg(&s.bin));
    assert!(
        !dynamic.contains("(NEEDED)"),
        "shared libraries:\n{dynamic}"
    );
    // static-pie: position-independent (ASLR), relocated by glibc's own start code.
    assert!(
        headers.contains("Elf file type is DYN"),
        "not a static-pie:\n{headers}"
    );

    let size = fs::metadata(&s.bin).expect("stat").len();
    eprintln!(
        "shipped binary: {size} bytes; debug file: {} bytes",
        fs::metadata(&s.debug).expect("stat").len()
    );
    assert!(size < MAX_SIZE, "{size} bytes, over {MAX_SIZE}");

    let bin_sections = sections(&s.bin);
    for gone in [".debug_info", ".debug_line", ".symtab"] {
        assert!(
            !bin_sections.contains(gone),
            "the binary keeps {gone}:\n{bin_sections}"
        );
    }
    assert!(bin_sections.contains(".gnu_debuglink"), "{bin_sections}");
    let link = common::run_tool(
        Command::new("readelf")
            .args(["-p", ".gnu_debuglink"])
            .arg(&s.bin),
    );
    assert!(link.contains("hotspot.debug"), "{link}");

    let debug_sections = sections(&s.debug);
    for kept in [".debug_info", ".debug_line", ".symtab"] {
        assert!(
            debug_sections.contains(kept),
            "the debug file lacks {kept}:\n{debug_sections}"
        );
    }
    let id = common::build_id(&s.bin).expect("the binary has a build-id");
    assert_eq!(common::build_id(&s.debug).as_deref(), Some(id.as_str()));
    // The debug file names hotspot's own code, which the binary no longer does.
    let symbols = common::run_tool(Command::new("nm").arg("--demangle").arg(&s.debug));
    assert!(
        symbols.lines().any(|l| l.contains(" hotspot::main")),
        "no hotspot::main in the debug file's symbols"
    );
}

/// What `--version` must say: `hotspot VERSION (REV)` with the checkout's short commit,
/// `-dirty` exactly when tracked files differ from it.
fn expected_version() -> String {
    let git = |args: &[&str]| {
        common::run_tool(
            Command::new("git")
                .args(args)
                .current_dir(env!("CARGO_MANIFEST_DIR")),
        )
        .trim()
        .to_owned()
    };
    let hash = git(&["rev-parse", "--short", "HEAD"]);
    let status = git(&[
        "--no-optional-locks",
        "status",
        "--porcelain",
        "--untracked-files=no",
    ]);
    let dirty = if status.is_empty() { "" } else { "-dirty" };
    format!("hotspot {} ({hash}{dirty})", env!("CARGO_PKG_VERSION"))
}

#[test]
fn version_names_the_version_and_the_git_revision() {
    let want = expected_version();
    for mut cmd in [Command::new(&shipped().bin), hotspot()] {
        let out = common::run_tool(cmd.arg("--version"));
        assert_eq!(out.trim_end(), want, "{cmd:?}");
    }
}

/// Runs `argv` (a path inside `root` first) chrooted into `root`, in a mount namespace of
/// its own where the kernel's /proc, /sys (with tracefs, BPF fs) and /dev are bound into
/// `root`: they vanish with the namespace, so nothing is left mounted on the host.
fn in_root(root: &Path, argv: &[&str]) -> Output {
    let script = r#"root=$1; shift
for d in proc sys dev; do mount --rbind "/$d" "$root/$d"; done
exec chroot "$root" "$@""#;
    Command::new("unshare")
        .args(["--mount", "--propagation", "private", "--", "sh", "-ec"])
        .arg(script)
        .arg("sh")
        .arg(root)
        .args(argv)
        .output()
        .expect("running unshare (Debian: util-linux, mount)")
}

fn ok_in_root(root: &Path, argv: &[&str]) -> Output {
    let out = in_root(root, argv);
    assert!(
        out.status.success(),
        "{argv:?} in the minimal root failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn host_file(path: &str) -> String {
    fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .trim()
        .to_owned()
}

#[test]
fn records_and_reports_in_a_root_holding_only_the_binary_and_the_fixture() {
    let fixture = common::fixture_with("split7030", &["-static"], "static");
    assert_static(&fixture);
    let dir = tmp();
    let root = dir.path();
    fs::copy(&shipped().bin, root.join("hotspot")).expect("copy hotspot");
    fs::copy(&fixture, root.join("split7030")).expect("copy the fixture");
    for d in ["proc", "sys", "dev"] {
        fs::create_dir(root.join(d)).expect("mkdir");
    }

    let version = ok_in_root(root, &["/hotspot", "--version"]);
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim_end(),
        expected_version()
    );
    let rec = {
        let _g = serial();
        ok_in_root(
            root,
            &[
                "/hotspot",
                "record",
                "-d",
                "2",
                "-o",
                "x.hsp",
                "--",
                "./split7030",
            ],
        )
    };
    eprintln!(
        "record in the minimal root:\n{}",
        String::from_utf8_lossy(&rec.stderr)
    );
    assert!(root.join("x.hsp").is_file(), "no capture in the root");

    let info: Value =
        serde_json::from_slice(&ok_in_root(root, &["/hotspot", "info", "x.hsp", "--json"]).stdout)
            .expect("info --json is JSON");
    assert_eq!(info["capture"]["ending"], "clean", "{info:#}");
    let session = &info["session"];
    // Read from /proc, not through NSS or uname's caller: the same as the host's.
    assert_eq!(
        session["host"],
        host_file("/proc/sys/kernel/hostname"),
        "{session:#}"
    );
    assert_eq!(
        session["kernel_release"],
        host_file("/proc/sys/kernel/osrelease"),
        "{session:#}"
    );
    assert_eq!(session["command_line"][0], "/hotspot", "{session:#}");
    let start = session["start_utc"].as_str().expect("start_utc");
    assert!(start.ends_with('Z') && start.len() == 24, "{start}");

    let report = String::from_utf8(ok_in_root(root, &["/hotspot", "report", "x.hsp"]).stdout)
        .expect("utf-8 report");
    let samples: u64 = report
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no sample count in {report}"));
    // A recording, not a count: what 2 s of one busy thread yields depends on what else
    // the CPUs run (216 seen beside four parallel builds). With 100 samples of a 70/30
    // split the cold side ties or leads with a chance of 2e-5 (binomial).
    assert!(samples >= 100, "{samples} samples:\n{report}");
    let top = report.lines().nth(2).expect("a first row");
    assert!(
        top.contains("hot_leaf") && top.contains("split7030.c:"),
        "the fixture's hot function is not on top:\n{report}"
    );

    // The namespace took its mounts with it: the directories are empty again, so removing
    // the root cannot reach the host's /proc, /sys or /dev.
    for d in ["proc", "sys", "dev"] {
        let left = fs::read_dir(root.join(d)).expect("read_dir").count();
        if left != 0 {
            let kept = dir.keep();
            panic!(
                "{}/{d} is still mounted; left in place, unmount it by hand",
                kept.display()
            );
        }
    }
}

#[test]
fn the_debug_file_names_the_stripped_binarys_own_frames() {
    // hotspot profiling its own built-in workload, copied without its debug file as onto
    // a production box: its frames have no names until `--symbols` finds hotspot.debug by
    // build-id.
    let s = shipped();
    let dir = tmp();
    let bin = dir.path().join("hotspot");
    fs::copy(&s.bin, &bin).expect("copy hotspot");
    let capture = dir.path().join("self.hsp");
    {
        let _g = serial();
        common::run_tool(
            Command::new(&bin)
                .arg("record")
                .arg("-o")
                .arg(&capture)
                .arg("--")
                .arg(&bin)
                .args(["demo-workload", "1.5"]),
        );
    }
    let report = |extra: &[&Path]| {
        let mut cmd = Command::new(&bin);
        cmd.arg("report").arg(&capture).args(["--top", "3"]);
        for dir in extra {
            cmd.arg("--symbols").arg(dir);
        }
        common::run_tool(&mut cmd)
    };
    let bare = report(&[]);
    assert!(
        !bare.contains("hotspot::demo::") && bare.contains("hotspot+0x"),
        "the stripped binary's frames are named without its debug file:\n{bare}"
    );
    let named = report(&[s.debug.parent().expect("the dist dir")]);
    // Every one of the top rows is named, the demo's own functions with their lines. The
    // first row is not always a demo function: `<u8>::is_ascii_lowercase`, inlined into
    // one, took it from `demo_checksum` by 30.2% to 29.6% in one CI run.
    let rows: Vec<&str> = named.lines().skip(2).take(3).collect();
    assert!(
        rows.len() == 3
            && rows.iter().all(|r| !r.contains("hotspot+0x"))
            && rows
                .iter()
                .any(|r| r.contains("hotspot::demo::") && r.contains("demo.rs:")),
        "--symbols with hotspot.debug does not name the top frames:\n{named}"
    );
}
