//! Watching `hotspot record` from a test: a recorder started in its own process group, the
//! hidden `--flush-log` it writes (`write N` before each block write, `done N` after it,
//! the kernel's lost counters at the end), and the capture read back.

use std::collections::HashMap;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use hotspot_format::{Record, read_all};

use super::{hotspot, run_ok};

/// A recorder started in its own process group (with the command it starts), so the
/// test can signal both as a terminal would, and never leaves the command running.
pub fn spawn_recorder(args: &[&str], out: &Path, log: &Path, argv: &[&str]) -> Child {
    hotspot()
        .arg("record")
        .args(args)
        .arg("--flush-log")
        .arg(log)
        .arg("-o")
        .arg(out)
        .arg("--")
        .args(argv)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn recorder")
}

pub fn signal_group(child: &Child, sig: libc::c_int) {
    // SAFETY: signalling the process group our own child leads.
    unsafe { libc::kill(-(child.id() as libc::pid_t), sig) };
}

/// What the recorder wrote to `--flush-log`.
#[derive(Debug, Default)]
pub struct FlushLog {
    /// Counts of `write` lines and of `done` lines, in order.
    pub writes: Vec<u64>,
    pub done: Vec<u64>,
    /// `bpf-lost` and friends, present once the recording finished.
    pub totals: HashMap<String, u64>,
}

impl FlushLog {
    pub fn read(path: &Path) -> FlushLog {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let mut log = FlushLog::default();
        for line in text.lines() {
            let (key, n) = line
                .split_once(' ')
                .unwrap_or_else(|| panic!("bad flush log line {line:?}"));
            let n: u64 = n
                .parse()
                .unwrap_or_else(|_| panic!("bad count in {line:?}"));
            match key {
                "write" => log.writes.push(n),
                "done" => log.done.push(n),
                other => {
                    log.totals.insert(other.to_string(), n);
                }
            }
        }
        log
    }

    /// Sample counts the capture may hold: the last completed write's, or the one in
    /// flight when the recorder died (its bytes may all have reached the file).
    pub fn possible(&self) -> Vec<u64> {
        let last_done = self.done.last().copied().unwrap_or(0);
        let mut v = vec![last_done];
        if self.writes.len() > self.done.len()
            && let Some(&w) = self.writes.last()
        {
            v.push(w);
        }
        v
    }

    pub fn total(&self, key: &str) -> u64 {
        *self
            .totals
            .get(key)
            .unwrap_or_else(|| panic!("flush log has no {key}: {:?}", self.totals))
    }
}

/// Waits until the flush log shows at least one block written.
pub fn wait_for_first_block(log: &Path, rec: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while FlushLog::read(log).done.is_empty() {
        if let Ok(Some(st)) = rec.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = rec.stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut err);
            }
            panic!("the recorder exited ({st}) before its first block: {err}");
        }
        assert!(Instant::now() < deadline, "no block written within 20 s");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Samples in a capture according to the format crate's own reader.
pub fn samples_by_reader(bytes: &[u8]) -> u64 {
    let (records, _) = read_all(bytes).expect("the format reader reads the capture");
    records
        .iter()
        .map(|r| match r {
            Record::Samples(b) => b.samples.len() as u64,
            _ => 0,
        })
        .sum()
}

pub fn info_text(path: &Path) -> String {
    let out = run_ok(hotspot().arg("info").arg(path));
    String::from_utf8(out.stdout).expect("utf-8")
}
