//! Faults while recording, with the real BPF program: the recorder SIGKILLed at random
//! moments, a ring buffer too small for the sampling rate, and Ctrl-C twice during the
//! final flush. They need root; without it they fail with hotspot's own message, never skip.
//! (Targets that exec, churn through threads or rename them are in `targets_e2e.rs`; the
//! privileges the recorder keeps and how it opens its output file in `privileges_e2e.rs`.)
//!
//! Several tests read the hidden `--flush-log`: before each block write the recorder
//! appends `write N` (the capture's sample count once the block is written), after it
//! `done N`, and at the end the kernel's lost counters (`hotspot_testkit::e2e::flush_log`).

mod common;

use common::fixture_arg as fixture;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use hotspot_replay::Capture;
use hotspot_testkit::Rng;
use hotspot_testkit::e2e::flush_log::*;
use hotspot_testkit::e2e::{hotspot, run_ok, serial, tmp};

#[test]
fn sigkill_at_random_moments_leaves_exactly_what_was_flushed() {
    const ROUNDS: usize = 50;
    let d = tmp();
    let busy = fixture("busy");
    let _g = serial();
    // Seeded from the clock unless HOTSPOT_KILL_SEED is set, so a failing run can be repeated.
    let (mut rng, seed) = Rng::from_env_or_clock("HOTSPOT_KILL_SEED");
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
    let busy = fixture("busy");
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
