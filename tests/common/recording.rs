//! Running `hotspot record` from an end-to-end test: the binary, one recording at a time,
//! and the capture it wrote.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

use hotspot_replay::Capture;

/// Recordings share two CPUs: one at a time within a test binary, so sample counts are
/// not skewed.
static SERIAL: Mutex<()> = Mutex::new(());

/// Holds the recording slot until dropped.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The hotspot binary under test.
pub fn hotspot() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hotspot"))
}

/// Runs `cmd`, panicking with its stderr unless it succeeds.
pub fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("run hotspot");
    assert!(
        out.status.success(),
        "hotspot failed: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `hotspot record [extra] -o OUT -- argv` and the capture it wrote.
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
