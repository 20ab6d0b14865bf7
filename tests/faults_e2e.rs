//! Faults while recording, with the real BPF program: the recorder SIGKILLed at random
//! moments, a ring buffer too small for the sampling rate, targets that exec, churn
//! through thousands of threads or rename threads, Ctrl-C twice, the privileges the
//! recorder keeps, and how it opens its output file. They need root; without it they fail
//! with hotspot's own message, never skip.
//!
//! Several tests read the hidden `--flush-log`: before each block write the recorder
//! appends `write N` (the capture's sample count once the block is written), after it
//! `done N`, and at the end the kernel's lost counters.

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hotspot_format::{Record, read_all};
use hotspot_replay::Capture;
use hotspot_replay::profile;

/// Recordings share two CPUs: one at a time within this binary (cargo runs test binaries
/// one after another, so other e2e files never overlap with these).
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn hotspot() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hotspot"))
}

fn fixture(name: &str) -> String {
    common::fixture(name).to_string_lossy().into_owned()
}

/// A copy of a fixture in `dir`: other test files end stray fixtures with `pkill -f
/// <fixture path>`, which must not hit this file's long-running targets when test
/// binaries run side by side.
fn private_fixture(name: &str, dir: &Path) -> String {
    let dst = dir.join(name);
    std::fs::copy(common::fixture(name), &dst).expect("copy fixture");
    dst.to_string_lossy().into_owned()
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("run hotspot");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A recorder started in its own process group (with the command it starts), so the
/// test can signal both as a terminal would, and never leaves the command running.
fn spawn_recorder(args: &[&str], out: &Path, log: &Path, argv: &[&str]) -> Child {
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

fn signal_group(child: &Child, sig: libc::c_int) {
    // SAFETY: signalling the process group our own child leads.
    unsafe { libc::kill(-(child.id() as libc::pid_t), sig) };
}

/// What the recorder wrote to `--flush-log`.
#[derive(Debug, Default)]
struct FlushLog {
    /// Counts of `write` lines and of `done` lines, in order.
    writes: Vec<u64>,
    done: Vec<u64>,
    /// `bpf-lost` and friends, present once the recording finished.
    totals: HashMap<String, u64>,
}

impl FlushLog {
    fn read(path: &Path) -> FlushLog {
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
    fn possible(&self) -> Vec<u64> {
        let last_done = self.done.last().copied().unwrap_or(0);
        let mut v = vec![last_done];
        if self.writes.len() > self.done.len()
            && let Some(&w) = self.writes.last()
        {
            v.push(w);
        }
        v
    }

    fn total(&self, key: &str) -> u64 {
        *self
            .totals
            .get(key)
            .unwrap_or_else(|| panic!("flush log has no {key}: {:?}", self.totals))
    }
}

/// Waits until the flush log shows at least one block written.
fn wait_for_first_block(log: &Path, rec: &mut Child) {
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
fn samples_by_reader(bytes: &[u8]) -> u64 {
    let (records, _) = read_all(bytes).expect("the format reader reads the capture");
    records
        .iter()
        .map(|r| match r {
            Record::Samples(b) => b.samples.len() as u64,
            _ => 0,
        })
        .sum()
}

fn info_text(path: &Path) -> String {
    let out = run_ok(hotspot().arg("info").arg(path));
    String::from_utf8(out.stdout).expect("utf-8")
}

/// A small deterministic generator (xorshift64*), seeded from the clock unless
/// HOTSPOT_KILL_SEED is set, so a failing run can be repeated.
struct Rng(u64);

impl Rng {
    fn new() -> (Rng, u64) {
        let seed = std::env::var("HOTSPOT_KILL_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64)
                    | 1
            });
        (Rng(seed), seed)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

#[test]
fn sigkill_at_random_moments_leaves_exactly_what_was_flushed() {
    const ROUNDS: usize = 50;
    let d = tmp();
    let busy = private_fixture("busy", d.path());
    let _g = serial();
    let (mut rng, seed) = Rng::new();
    let started = Instant::now();
    let (mut no_file, mut empty, mut header_only, mut with_samples, mut in_flight) =
        (0, 0, 0, 0, 0);
    let mut empty_left = None;
    for round in 0..ROUNDS {
        let out = d.path().join(format!("k{round}.hsp"));
        let log = d.path().join(format!("k{round}.log"));
        let mut rec = spawn_recorder(
            &["-F", "999", "--flush-interval", "50ms"],
            &out,
            &log,
            &[&busy, "30"],
        );
        let delay = 50 + rng.below(1451);
        std::thread::sleep(Duration::from_millis(delay));
        // The whole group: the recorder and busy, which would otherwise run on.
        signal_group(&rec, libc::SIGKILL);
        let _ = rec.wait();
        let mut stderr = String::new();
        if let Some(mut e) = rec.stderr.take() {
            use std::io::Read;
            let _ = e.read_to_string(&mut stderr);
        }
        let flushed = FlushLog::read(&log);
        let ctx = format!("round {round} (seed {seed}, kill after {delay} ms; stderr: {stderr:?})");
        let Ok(bytes) = std::fs::read(&out) else {
            no_file += 1;
            assert!(
                flushed.writes.is_empty(),
                "{ctx}: no capture, yet blocks were written: {flushed:?}"
            );
            continue;
        };
        if bytes.is_empty() {
            // Killed between creating the file and writing its header.
            empty += 1;
            assert!(flushed.writes.is_empty(), "{ctx}: {flushed:?}");
            empty_left = Some(out.clone());
            continue;
        }
        let by_reader = samples_by_reader(&bytes);
        let capture = Capture::open(&out).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        let info = info_text(&out);
        assert!(capture.end.is_none(), "{ctx}: an end marker after SIGKILL");
        assert!(
            info.contains("ending:     cut") || info.contains("ending:     truncated"),
            "{ctx}: {info}"
        );
        assert_eq!(capture.samples.len() as u64, by_reader, "{ctx}");
        let possible = flushed.possible();
        assert!(
            possible.contains(&by_reader),
            "{ctx}: the capture holds {by_reader} samples, the flush log allows {possible:?}"
        );
        if by_reader == 0 && flushed.done.is_empty() {
            header_only += 1;
        } else {
            with_samples += 1;
        }
        if possible.len() > 1 {
            in_flight += 1;
        }
    }
    eprintln!(
        "{ROUNDS} SIGKILLs in {:.1} s (seed {seed}): {no_file} before the file existed, \
         {empty} before its header, {header_only} before the first block, {with_samples} \
         with blocks ({in_flight} during a block write)",
        started.elapsed().as_secs_f64()
    );
    // Most kills land after the set-up, while blocks are written every 50 ms.
    assert!(
        with_samples >= ROUNDS / 2,
        "only {with_samples} of {ROUNDS} kills came after a block"
    );
    // What a kill during set-up leaves must not stand in the way of the next recording.
    if let Some(path) = empty_left {
        run_ok(
            hotspot()
                .args(["record", "-d", "0.3", "-o"])
                .arg(&path)
                .args(["--", "true"]),
        );
        assert!(Capture::open(&path).expect("opens").end.is_some());
    }
}

#[test]
fn ring_buffer_overflow_is_counted_exactly_and_shown() {
    let d = tmp();
    let out = d.path().join("ring.hsp");
    let log = d.path().join("ring.log");
    let _g = serial();
    // One page of ring (a few dozen samples) against three busy threads sampled at
    // 20 kHz on every CPU: the reader cannot keep up.
    let res = run_ok(
        hotspot()
            .args([
                "record",
                "-F",
                "20000",
                "--ring-bytes",
                "4096",
                // A one-page ring must hold the largest record: a small stack copy.
                "--stack-cap",
                "256",
                "--flush-log",
            ])
            .arg(&log)
            .arg("-o")
            .arg(&out)
            .args(["--", &fixture("threads"), "2"]),
    );
    let stderr = String::from_utf8_lossy(&res.stderr).into_owned();
    let flushed = FlushLog::read(&log);
    let kernel = flushed.total("bpf-lost");
    let c = Capture::open(&out).expect("opens");
    let end = c.end.as_ref().expect("finished cleanly");
    assert!(
        kernel > 0,
        "no sample was lost with a 4 KiB ring at 20 kHz: {stderr}"
    );
    assert_eq!(
        c.lost, kernel,
        "Lost records in the capture vs the kernel's counter"
    );
    assert_eq!(end.lost, kernel, "the end marker's lost count");
    assert_eq!(flushed.total("capture-lost"), kernel);
    assert_eq!(flushed.total("malformed"), 0, "records that did not decode");
    assert_eq!(end.samples, c.samples.len() as u64);
    assert_eq!(flushed.done.last().copied(), Some(end.samples));
    let summary = stderr
        .lines()
        .find(|l| l.starts_with("hotspot: ") && l.contains(" samples ("))
        .unwrap_or_else(|| panic!("no summary line: {stderr}"));
    assert!(
        summary.contains(&format!("({kernel} lost)")),
        "summary {summary:?}, kernel counted {kernel}"
    );
    assert!(!stderr.contains("the kernel counted"), "{stderr}");
    let info = info_text(&out);
    assert!(
        info.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["lost:", &kernel.to_string()]),
        "info does not show {kernel} lost:\n{info}"
    );
    eprintln!(
        "ring overflow: {} samples kept, {kernel} lost (kernel counter = capture = summary = info)",
        c.samples.len()
    );
}

/// Folded stacks of the samples of `tid` whose time passes `keep`, as leaf -> count.
fn leaves(c: &Capture, tid: u32, keep: impl Fn(u64) -> bool) -> BTreeMap<String, u64> {
    let mut by_stack: HashMap<u32, u64> = HashMap::new();
    for s in c.samples.iter().filter(|s| s.tid == tid && keep(s.time_ns)) {
        *by_stack.entry(s.stack).or_default() += 1;
    }
    let mut names = profile::StackNames::default();
    let mut out = BTreeMap::new();
    for (stack, n) in by_stack {
        let leaf = names
            .get(c, stack)
            .and_then(|f| f.iter().rfind(|f| !f.kernel))
            .map_or("?".to_string(), |f| f.function.to_string());
        *out.entry(leaf).or_default() += n;
    }
    out
}

fn share(leaves: &BTreeMap<String, u64>, leaf: &str) -> (u64, f64) {
    let total: u64 = leaves.values().sum();
    let n = leaves.get(leaf).copied().unwrap_or(0);
    (n, n as f64 / total.max(1) as f64)
}

/// `prefix=<n>` from a fixture's stderr.
fn logged_number(stderr: &str, prefix: &str) -> u64 {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {prefix} in {stderr}"))
}

#[test]
fn a_target_that_execs_keeps_both_names_and_both_images() {
    let d = tmp();
    let out = d.path().join("exec.hsp");
    let busy = private_fixture("busy", d.path());
    let _g = serial();
    let res = run_ok(hotspot().arg("record").arg("-o").arg(&out).args([
        "--",
        &fixture("execer"),
        "1.5",
        &busy,
        "1.5",
    ]));
    let stderr = String::from_utf8_lossy(&res.stderr);
    let exec_ns = logged_number(&stderr, "execer: exec_ns=");
    let c = Capture::open(&out).expect("opens");
    let pid = c.session.as_ref().expect("session").targets[0];
    let names: Vec<&str> = c.threads[&pid]
        .names
        .iter()
        .map(|(_, n)| n.as_str())
        .collect();
    assert_eq!(
        names,
        ["execer", "busy"],
        "the main thread's names in order"
    );
    let p = &c.processes[&pid];
    assert_eq!(p.name, "busy", "the process is known by its new image");
    assert!(p.exe.ends_with("/busy"), "{}", p.exe);
    // Each half is named from its own image (1.5 s at 499 Hz is ~750 samples on an idle
    // machine; 150 leaves room for a busy one).
    let before = leaves(&c, pid, |t| t < exec_ns);
    let after = leaves(&c, pid, |t| t > exec_ns);
    let (n, s) = share(&before, "exec_before_leaf");
    assert!(n >= 150 && s >= 0.9, "before the exec: {before:?}");
    let (n, s) = share(&after, "busy_leaf");
    assert!(n >= 150 && s >= 0.9, "after the exec: {after:?}");
    assert!(!after.contains_key("exec_before_leaf"), "{after:?}");
    let modules: HashSet<&str> = c.modules.values().map(|m| m.path.as_str()).collect();
    assert!(
        modules.iter().any(|m| m.ends_with("/execer"))
            && modules.iter().any(|m| m.ends_with("/busy")),
        "{modules:?}"
    );
}

#[test]
fn thousands_of_short_lived_threads_are_each_named_and_counted() {
    const THREADS: u64 = 2000;
    let d = tmp();
    let out = d.path().join("churn.hsp");
    let log = d.path().join("churn.log");
    let _g = serial();
    // 3 ms of each thread's own CPU time at 999 Hz is three ticks: a thread can escape
    // sampling only if the scheduler cut its run into pieces that all fall between
    // ticks; even for pieces placed at random that is e^-3 = 5%. So at least 80% of the
    // threads must be in the capture.
    let res = run_ok(
        hotspot()
            .args(["record", "-F", "999", "--flush-log"])
            .arg(&log)
            .arg("-o")
            .arg(&out)
            .args(["--", &fixture("churn"), "60", &THREADS.to_string(), "3"]),
    );
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert_eq!(
        logged_number(&stderr, "churn: threads="),
        THREADS,
        "{stderr}"
    );
    let logged: HashMap<u32, &str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("churn: tid="))
        .filter_map(|l| {
            let (tid, name) = l.split_once(" name=")?;
            Some((tid.parse().ok()?, name))
        })
        .collect();
    assert_eq!(logged.len() as u64, THREADS, "distinct tids logged");
    let c = Capture::open(&out).expect("opens");
    assert!(c.end.is_some() && c.corrupt.is_empty() && c.truncated.is_none());
    let pid = c.session.as_ref().expect("session").targets[0];
    let mut named = 0u64;
    let (mut own_work, mut all_work) = (0u64, 0u64);
    for t in c.threads.values().filter(|t| t.tid != pid) {
        assert_eq!(t.pid, pid, "thread {} in the wrong process", t.tid);
        let want = logged
            .get(&t.tid)
            .unwrap_or_else(|| panic!("thread {} ({:?}) is not one of churn's", t.tid, t.names));
        // Before naming itself a new thread carries its creator's name.
        for (_, n) in &t.names {
            assert!(
                n == want || n == "churn",
                "tid {}: {:?}, expected {want}",
                t.tid,
                t.names
            );
        }
        if t.names.iter().any(|(_, n)| n == want) {
            named += 1;
            let leaves = leaves(&c, t.tid, |_| true);
            own_work += leaves
                .iter()
                .filter(|(l, _)| l.starts_with("churn_"))
                .map(|(_, n)| n)
                .sum::<u64>();
            all_work += leaves.values().sum::<u64>();
        }
    }
    // The threads' samples are their own work (the rest: thread start, naming, logging).
    assert!(
        own_work * 100 >= all_work * 85,
        "{own_work} of {all_work} samples of churn's threads in churn_*"
    );
    assert!(
        named * 100 >= THREADS * 80,
        "{named} of {THREADS} threads in the capture under their own name"
    );
    let flushed = FlushLog::read(&log);
    assert_eq!(flushed.total("malformed"), 0);
    assert_eq!(
        c.lost,
        flushed.total("bpf-lost"),
        "lost samples counted exactly"
    );
    let info = info_text(&out);
    assert!(
        info.contains(&format!("threads:    {}", c.threads.len())),
        "{info}"
    );
    eprintln!(
        "churn: {named} of {THREADS} threads captured under their own names, {} lost, {} threads in the capture",
        c.lost,
        c.threads.len()
    );
}

#[test]
fn a_renamed_thread_keeps_each_name_with_the_work_done_under_it() {
    let d = tmp();
    let out = d.path().join("rename.hsp");
    let _g = serial();
    let res =
        run_ok(
            hotspot()
                .arg("record")
                .arg("-o")
                .arg(&out)
                .args(["--", &fixture("renamer"), "3"]),
        );
    let stderr = String::from_utf8_lossy(&res.stderr);
    let renamed_ns = logged_number(&stderr, "renamer: renamed_ns=");
    let c = Capture::open(&out).expect("opens");
    let t = c
        .threads
        .values()
        .find(|t| t.names.iter().any(|(_, n)| n == "rn-second"))
        .unwrap_or_else(|| panic!("no thread renamed rn-second: {:?}", c.threads));
    let names: Vec<&str> = t
        .names
        .iter()
        .map(|(_, n)| n.as_str())
        .filter(|n| *n != "renamer")
        .collect();
    assert_eq!(names, ["rn-first", "rn-second"], "{:?}", t.names);
    // The name a sample was taken under: the thread's latest name at or before it.
    let name_at = |ns: u64| {
        t.names
            .iter()
            .rev()
            .find(|(since, _)| *since <= ns)
            .map_or("", |(_, n)| n.as_str())
    };
    let first = leaves(&c, t.tid, |ns| name_at(ns) == "rn-first");
    let second = leaves(&c, t.tid, |ns| name_at(ns) == "rn-second");
    let (n1, s1) = share(&first, "first_name_leaf");
    let (n2, s2) = share(&second, "second_name_leaf");
    assert!(s1 >= 0.95, "work under rn-first: {first:?}");
    assert!(s2 >= 0.95, "work under rn-second: {second:?}");
    // Equal halves of wall time: each name has a fair part of the thread's samples.
    let half = n1 as f64 / (n1 + n2) as f64;
    assert!(
        n1 + n2 >= 300 && (0.3..=0.7).contains(&half),
        "rn-first {n1}, rn-second {n2} samples"
    );
    // And the rename is where the fixture says it happened.
    let since = t
        .names
        .iter()
        .find(|(_, n)| n == "rn-second")
        .map(|(s, _)| *s);
    assert!(
        since.is_some_and(|s| s >= renamed_ns),
        "{since:?} vs {renamed_ns}"
    );
    assert!(
        c.samples
            .iter()
            .filter(|s| s.tid == t.tid && s.time_ns < renamed_ns)
            .all(|s| name_at(s.time_ns) != "rn-second")
    );
}

/// A FIFO used as the recorder's flush log, which the test can fill so that the recorder's
/// next log write, the one announcing its final block, blocks until the test drains it:
/// the recorder is then provably inside its final flush.
struct LogPipe {
    path: PathBuf,
    reader: std::fs::File,
    text: String,
}

impl LogPipe {
    fn new(path: PathBuf) -> LogPipe {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::fs::OpenOptionsExt;
        let c = std::ffi::CString::new(path.as_os_str().as_bytes()).expect("path");
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
        // Non-blocking: opening a FIFO's read end would otherwise wait for a writer.
        let reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .expect("open the FIFO");
        LogPipe {
            path,
            reader,
            text: String::new(),
        }
    }

    /// Reads what is there now; true once the writer closed it.
    fn read_available(&mut self) -> bool {
        use std::io::Read;
        let mut buf = [0u8; 65536];
        loop {
            match self.reader.read(&mut buf) {
                Ok(0) => return true,
                Ok(n) => self.text.push_str(&String::from_utf8_lossy(&buf[..n])),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
                Err(e) => panic!("reading the FIFO: {e}"),
            }
        }
    }

    /// Fills the pipe (made one page small) so the recorder's next write blocks.
    fn fill(&self) {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::OpenOptionsExt;
        let w = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&self.path)
            .expect("open the FIFO for writing");
        // SAFETY: fcntl on a descriptor we own.
        unsafe { libc::fcntl(w.as_raw_fd(), libc::F_SETPIPE_SZ, 4096) };
        use std::io::Write;
        let mut w = w;
        while w.write(b"junk 0\n").is_ok() {}
    }

    fn log(&self) -> FlushLog {
        let file = self.path.with_extension("txt");
        std::fs::write(&file, &self.text).expect("write");
        FlushLog::read(&file)
    }
}

/// True while the recorder's main thread is blocked in write(2).
fn blocked_in_write(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/syscall"))
        .is_ok_and(|s| s.split_whitespace().next() == Some(&libc::SYS_write.to_string()))
}

#[test]
fn ctrl_c_twice_during_the_final_flush_still_finishes_the_capture() {
    let d = tmp();
    let busy = private_fixture("busy", d.path());
    let _g = serial();
    let mut round = 0;
    // Milliseconds between the two signals; `None`: the second comes once the recorder is
    // seen waiting inside its final flush.
    for gap_ms in [Some(1u64), Some(10), Some(50), None] {
        for terminal_like in [true, false] {
            round += 1;
            let ctx = format!("second SIGINT after {gap_ms:?} ms, to the group: {terminal_like}");
            let out = d.path().join(format!("c{round}.hsp"));
            let mut pipe = LogPipe::new(d.path().join(format!("c{round}.fifo")));
            // A long flush interval: after the first block, the next one is the final one.
            let mut rec = spawn_recorder(
                &["-F", "999", "--flush-interval", "60s"],
                &out,
                &pipe.path,
                &[&busy, "30"],
            );
            let pid = rec.id();
            let deadline = Instant::now() + Duration::from_secs(20);
            while !pipe.text.contains("done ") {
                pipe.read_available();
                assert!(
                    rec.try_wait().expect("try_wait").is_none(),
                    "{ctx}: exited early"
                );
                assert!(Instant::now() < deadline, "{ctx}: no first block");
                std::thread::sleep(Duration::from_millis(5));
            }
            std::thread::sleep(Duration::from_millis(200));
            pipe.fill();
            // A terminal's Ctrl-C goes to the whole foreground group (the command too);
            // `kill -INT` to the recorder alone leaves the command running.
            let target = if terminal_like {
                -(pid as libc::pid_t)
            } else {
                pid as libc::pid_t
            };
            // SAFETY: signalling our own child, or the process group it leads.
            let send = |sig| unsafe { libc::kill(target, sig) };
            send(libc::SIGINT);
            if let Some(gap) = gap_ms {
                std::thread::sleep(Duration::from_millis(gap));
                send(libc::SIGINT);
            }
            // The final block cannot be written before the test drains the pipe: the
            // recorder now waits inside its final flush, the second signal came before or
            // during it, and neither ended the recording.
            let deadline = Instant::now() + Duration::from_secs(10);
            while !blocked_in_write(pid) {
                assert!(rec.try_wait().expect("try_wait").is_none(), "{ctx}: exited");
                assert!(
                    Instant::now() < deadline,
                    "{ctx}: never reached its final flush"
                );
                std::thread::sleep(Duration::from_millis(2));
            }
            if gap_ms.is_none() {
                send(libc::SIGINT);
            }
            std::thread::sleep(Duration::from_millis(100));
            assert!(blocked_in_write(pid), "{ctx}: the flush moved on by itself");
            while !pipe.read_available() {
                std::thread::sleep(Duration::from_millis(2));
            }
            let status = rec.wait().expect("wait");
            // busy is still running when only the recorder was signalled.
            // SAFETY: the process group our recorder led; only busy can be left in it.
            unsafe { libc::kill(-(pid as libc::pid_t), libc::SIGKILL) };
            let mut stderr = String::new();
            if let Some(mut e) = rec.stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut stderr);
            }
            assert!(status.success(), "{ctx}: exit {status}: {stderr}");
            let c = Capture::open(&out).expect("opens");
            let end = c
                .end
                .as_ref()
                .unwrap_or_else(|| panic!("{ctx}: no end marker"));
            assert!(c.truncated.is_none() && c.corrupt.is_empty(), "{ctx}");
            assert_eq!(end.samples, c.samples.len() as u64, "{ctx}");
            let log = pipe.log();
            assert!(
                log.done.len() >= 2,
                "{ctx}: first block and final ones: {log:?}"
            );
            assert_eq!(log.done.last().copied(), Some(end.samples), "{ctx}");
            assert!(
                c.samples.len() as u64 > log.done[0],
                "{ctx}: the final flush added the samples since the first block"
            );
            assert!(
                info_text(&out).contains("ending:     clean (end marker present)"),
                "{ctx}"
            );
        }
    }
    eprintln!(
        "Ctrl-C twice: {round} recordings held inside their final flush until released, the \
         second SIGINT 1, 10 or 50 ms after the first or while held there: all finished with \
         an end marker"
    );
}

/// A `Cap*` line of a status file as a mask.
fn cap_field(status: &str, field: &str) -> u64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or_else(|| panic!("no {field} in {status}"))
}

fn field(status: &str, name: &str) -> String {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(|v| v.trim().to_string())
        .unwrap_or_else(|| panic!("no {name} in {status}"))
}

const CAP_DAC_READ_SEARCH: u32 = 2;
const CAP_SYS_PTRACE: u32 = 19;
const CAP_SYS_ADMIN: u32 = 21;
const CAP_SYSLOG: u32 = 34;
const CAP_BPF: u32 = 39;
const CAP_CHECKPOINT_RESTORE: u32 = 40;

#[test]
fn privileges_are_dropped_after_attach_and_unreadable_targets_still_resolve() {
    const NOBODY: u32 = 65534;
    let d = tmp();
    // The targets run as nobody from a directory only nobody may enter, as files only
    // nobody may read: the recorder needs CAP_SYS_PTRACE for their /proc entries and
    // CAP_DAC_READ_SEARCH (or map_files with CAP_CHECKPOINT_RESTORE) for their images.
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let private = d.path().join("private");
    std::fs::create_dir(&private).expect("mkdir");
    let mut bins = Vec::new();
    for name in ["execer", "busy"] {
        let dst = private.join(name);
        std::fs::copy(fixture(name), &dst).expect("copy fixture");
        std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        std::os::unix::fs::chown(&dst, Some(NOBODY), Some(NOBODY)).expect("chown");
        bins.push(dst.to_string_lossy().into_owned());
    }
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    std::os::unix::fs::chown(&private, Some(NOBODY), Some(NOBODY)).expect("chown");
    let out = d.path().join("priv.hsp");
    let log = d.path().join("priv.log");
    let _g = serial();
    let mut rec = spawn_recorder(
        &[],
        &out,
        &log,
        &[
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            &bins[0],
            "2",
            &bins[1],
            "1.5",
        ],
    );
    wait_for_first_block(&log, &mut rec);
    let pid = rec.id();
    let main_status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).expect("recorder status");
    let mut statuses = vec![main_status.clone()];
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).expect("tasks") {
        let task = task.expect("task").path();
        if let Ok(s) = std::fs::read_to_string(task.join("status")) {
            statuses.push(s);
        }
    }
    let res = rec.wait_with_output().expect("wait");
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let bit = |c: u32| 1u64 << c;
    let allowed = bit(CAP_DAC_READ_SEARCH)
        | bit(CAP_SYS_PTRACE)
        | bit(CAP_CHECKPOINT_RESTORE)
        | bit(CAP_SYSLOG)
        // Kept only where map reads through held descriptors need it (before 6.5).
        | bit(CAP_BPF);
    for s in &statuses {
        let eff = cap_field(s, "CapEff");
        let prm = cap_field(s, "CapPrm");
        let name = field(s, "Name");
        assert_eq!(
            eff & !allowed,
            0,
            "thread {name}: CapEff {eff:016x} keeps more"
        );
        assert_eq!(
            prm & !allowed,
            0,
            "thread {name}: CapPrm {prm:016x} keeps more"
        );
        assert_eq!(eff & bit(CAP_SYS_ADMIN), 0, "thread {name}");
        assert_ne!(
            eff & bit(CAP_SYS_PTRACE),
            0,
            "thread {name}: needs CAP_SYS_PTRACE"
        );
        assert_eq!(cap_field(s, "CapBnd"), 0, "thread {name}: bounding set");
        assert_eq!(cap_field(s, "CapAmb"), 0, "thread {name}: ambient set");
        assert_eq!(cap_field(s, "CapInh"), 0, "thread {name}: inheritable set");
        assert_eq!(field(s, "NoNewPrivs"), "1", "thread {name}");
    }
    assert!(
        statuses.len() >= 3,
        "the main thread and its tasks: {}",
        statuses.len()
    );
    // Both images were read after the drop: their functions have names.
    let c = Capture::open(&out).expect("opens");
    let folded = profile::fold(&c, &profile::Filter::default());
    let leaf_count = |leaf: &str| -> u64 {
        folded
            .stacks
            .iter()
            .filter(|(s, _)| s.last().is_some_and(|f| &*f.function == leaf))
            .map(|(_, n)| n)
            .sum()
    };
    assert!(
        leaf_count("exec_before_leaf") > 100,
        "{:?}",
        folded.stacks.keys().take(5).collect::<Vec<_>>()
    );
    assert!(leaf_count("busy_leaf") > 100);
    let execer = c
        .threads
        .values()
        .find(|t| t.names.iter().any(|(_, n)| n == "execer"));
    assert!(
        execer.is_some_and(|t| t.names.iter().any(|(_, n)| n == "busy")),
        "the exec'd target is followed: {:?}",
        c.threads
    );
}

#[test]
fn a_started_command_keeps_its_own_privileges() {
    let d = tmp();
    let out = d.path().join("child.hsp");
    let log = d.path().join("child.log");
    let ours = std::fs::read_to_string("/proc/self/status").expect("status");
    let _g = serial();
    let busy = private_fixture("busy", d.path());
    let mut rec = spawn_recorder(&[], &out, &log, &[&busy, "1.5"]);
    wait_for_first_block(&log, &mut rec);
    let children =
        std::fs::read_to_string(format!("/proc/{}/task/{}/children", rec.id(), rec.id()))
            .expect("children");
    let child: u32 = children
        .split_whitespace()
        .next()
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no child in {children:?}"));
    let theirs = std::fs::read_to_string(format!("/proc/{child}/status")).expect("child status");
    let recorder = std::fs::read_to_string(format!("/proc/{}/status", rec.id())).expect("status");
    run_ok_child(rec);
    assert_eq!(field(&theirs, "Name"), "busy");
    for f in ["CapEff", "CapPrm", "CapBnd"] {
        assert_eq!(
            cap_field(&theirs, f),
            cap_field(&ours, f),
            "the command's {f}"
        );
    }
    assert_eq!(field(&theirs, "NoNewPrivs"), field(&ours, "NoNewPrivs"));
    assert_ne!(
        cap_field(&recorder, "CapEff"),
        cap_field(&ours, "CapEff"),
        "the recorder itself did drop"
    );
}

fn run_ok_child(rec: Child) {
    let res = rec.wait_with_output().expect("wait");
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
}

/// `hotspot record -d 0.2 -o PATH -- true` with umask 0; its output.
fn record_to(path: &Path) -> Output {
    let _g = serial();
    let mut cmd = hotspot();
    cmd.args(["record", "-d", "0.2", "-o"])
        .arg(path)
        .args(["--", "true"]);
    // SAFETY: umask is async-signal-safe and only affects the child.
    unsafe {
        cmd.pre_exec(|| {
            libc::umask(0);
            Ok(())
        });
    }
    cmd.output().expect("run hotspot")
}

#[test]
fn the_output_file_is_never_reached_through_a_symlink_nor_left_readable() {
    let d = tmp();
    // A new capture is 0600 even with umask 0.
    let fresh = d.path().join("fresh.hsp");
    let res = record_to(&fresh);
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode(&fresh), 0o600);
    // An old capture left readable by all is replaced, and made private.
    std::fs::set_permissions(&fresh, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let res = record_to(&fresh);
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    assert_eq!(mode(&fresh), 0o600);
    assert!(Capture::open(&fresh).expect("opens").end.is_some());

    // A symlink at -o is refused, whether it points at a capture, at another file or
    // nowhere; what it points at is untouched and nothing is created.
    let precious = d.path().join("precious.txt");
    std::fs::write(&precious, "keep me").expect("write");
    let missing: PathBuf = d.path().join("would-be-created.hsp");
    for (name, target) in [
        ("to-capture.hsp", fresh.as_path()),
        ("to-file.hsp", precious.as_path()),
        ("dangling.hsp", missing.as_path()),
    ] {
        let link = d.path().join(name);
        std::os::unix::fs::symlink(target, &link).expect("symlink");
        let before = std::fs::read(target).ok();
        let res = record_to(&link);
        let err = String::from_utf8_lossy(&res.stderr);
        assert!(!res.status.success(), "{name}: followed the symlink");
        assert!(
            err.contains("symbolic link") || err.contains("symlink"),
            "{name}: {err}"
        );
        assert_eq!(std::fs::read(target).ok(), before, "{name}: target changed");
        assert!(
            std::fs::symlink_metadata(&link)
                .expect("link")
                .file_type()
                .is_symlink()
        );
    }
    assert!(!missing.exists(), "a dangling symlink's target was created");

    // An empty file (what a recorder killed during set-up leaves) is replaced.
    let empty = d.path().join("empty.hsp");
    std::fs::write(&empty, "").expect("write");
    let res = record_to(&empty);
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    assert!(Capture::open(&empty).expect("opens").end.is_some());
    assert_eq!(mode(&empty), 0o600);

    // A file that is not a capture is not overwritten.
    let res = record_to(&precious);
    assert!(!res.status.success());
    assert!(String::from_utf8_lossy(&res.stderr).contains("not a hotspot capture"));
    assert_eq!(std::fs::read_to_string(&precious).expect("read"), "keep me");
}
