//! Running the `hotspot` binary from the root package's end-to-end tests: the binary, one
//! recording at a time per test binary, scratch directories, and commands that must succeed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard, OnceLock};

use hotspot_replay::Capture;

pub mod flush_log;
pub mod procs;

/// Recordings share two CPUs: one at a time within a test binary, so sample counts are
/// not skewed (cargo runs test binaries one after another).
static SERIAL: Mutex<()> = Mutex::new(());

/// Holds the recording slot until dropped.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The path of the `hotspot` binary under test. Cargo names it in `CARGO_BIN_EXE_hotspot`
/// when it builds and runs an integration test of the root package; a test binary started
/// by hand finds it next to its own directory (`target/<profile>/deps/..`).
pub fn hotspot_path() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        if let Some(p) = std::env::var_os("CARGO_BIN_EXE_hotspot") {
            return PathBuf::from(p);
        }
        let exe = std::env::current_exe().expect("the test binary's path");
        let bin = exe
            .parent()
            .and_then(Path::parent)
            .map(|profile| profile.join("hotspot"))
            .expect("the test binary is under target/<profile>/deps");
        assert!(
            bin.is_file(),
            "no hotspot binary at {} (run the tests with `cargo test`)",
            bin.display()
        );
        bin
    })
}

/// A command running the hotspot binary under test.
pub fn hotspot() -> Command {
    Command::new(hotspot_path())
}

/// A fresh temporary directory, removed when dropped.
pub fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

/// Runs `cmd`, panicking with its stderr unless it succeeds.
pub fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The stdout of `hotspot ARGS…`, which must succeed.
pub fn stdout(args: &[&str]) -> Vec<u8> {
    run_ok(hotspot().args(args)).stdout
}

/// `hotspot record [extra] -o OUT -- argv` (one recording at a time) and the capture it
/// wrote.
pub fn record_cmd(out: &Path, extra: &[&str], argv: &[&str]) -> Capture {
    let _g = serial();
    run_ok(
        hotspot()
            .arg("record")
            .args(extra)
            .arg("-o")
            .arg(out)
            .arg("--")
            .args(argv),
    );
    Capture::open(out).expect("capture opens")
}

/// `fixtures/captures/NAME`, a committed capture.
pub fn committed_capture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/captures")
        .join(name)
}

/// Voluntary context switches of process `pid`'s main thread so far (how often it went to
/// sleep and woke): a process that should sleep through a stretch can be held to it.
pub fn voluntary_switches(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("voluntary_ctxt_switches")
}
