//! `hotspot record --keep/--max-size -o DIR`: the flight recorder. This process only
//! supervises: for each segment it starts `hotspot record -d SEGMENT -o DIR/seg-….hsp`
//! with the same targets and options, waits for it, and applies
//! `recorder::live::history`'s budgets before each segment and at the end.
//!
//! A process per segment, because a recording drops its privileges once its BPF program
//! is attached (`recorder::privilege`), so one process cannot attach again for the next
//! segment without keeping them for days; and because it makes every segment a whole
//! capture (its own definitions) and the recorder's memory start over each segment, however
//! many processes came and went. The cost is a gap between segments while the next one
//! sets up (measured in the report of issue 28). This process parses nothing untrusted.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use hotspot_recorder::live::history::{self, Budget};
use hotspot_recorder::live::marks;

use crate::cli::{CallGraph, RecordArgs};
use crate::signals;

/// Records segments into `args.output` until stopped (Ctrl-C, SIGTERM), a segment's
/// recorder fails or its targets are gone, or `--duration` has passed.
pub fn run(args: &RecordArgs) -> anyhow::Result<()> {
    if !args.command.is_empty() {
        anyhow::bail!(
            "--keep and --max-size record running processes (-a or PIDs), not a command: each segment would start it again"
        );
    }
    let dir = &args.output;
    create_dir(dir)?;
    let budget = Budget {
        keep: args.keep,
        max_bytes: args.max_size,
    };
    let exe = std::env::current_exe().context("locating the hotspot executable")?;
    let start = Instant::now();
    let mut largest = 0u64;
    while !signals::STOP.load(Ordering::SeqCst) {
        // Room for the next segment: the largest so far and half again, since the next
        // may be busier (segments of a steady load varied by ±20% here).
        let gone = history::prune(dir, &budget, largest + largest / 2)?;
        if args.log_segments && !gone.is_empty() {
            eprintln!("hotspot: removed {} old segments", gone.len());
        }
        let left = args.duration.map(|d| d.saturating_sub(start.elapsed()));
        if left.is_some_and(|l| l < Duration::from_millis(10)) {
            break;
        }
        let length = left.map_or(args.segment, |l| l.min(args.segment));
        let path = history::segment_path(dir, SystemTime::now());
        let mut cmd = Command::new(&exe);
        cmd.arg("record").args(child_args(args)).arg("-d");
        cmd.arg(format!("{}ms", length.as_millis().max(1)));
        cmd.arg("-o").arg(&path);
        let began = Instant::now();
        let mut child = cmd
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting the recorder of {}", path.display()))?;
        // Its summary is shown on request (`--log-segments`), its error always; read as it
        // comes, so a full pipe never blocks it.
        let said = child.stderr.take().map(|mut e| {
            std::thread::spawn(move || {
                let mut s = String::new();
                let _ = e.read_to_string(&mut s);
                s
            })
        });
        let status = wait(child)?;
        let said = said.and_then(|t| t.join().ok()).unwrap_or_default();
        if args.log_segments || !status.success() {
            eprint!("{said}");
        }
        let bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
        largest = largest.max(bytes);
        if args.log_segments {
            eprintln!(
                "hotspot: segment {}: {:.1} KiB in {:.1} s",
                hotspot_replay::sanitize::display(&path.to_string_lossy()),
                bytes as f64 / 1024.0,
                began.elapsed().as_secs_f64()
            );
        }
        if !status.success() {
            anyhow::bail!(
                "the recorder of {} ended with {status}; the segments before it are kept",
                path.display()
            );
        }
        // A segment that ended early: its targets are gone (or it was stopped).
        if began.elapsed() + Duration::from_millis(200) < length {
            break;
        }
    }
    history::prune(dir, &budget, 0)?;
    Ok(())
}

/// Waits for a segment's recorder, blocked: a stop is passed on to it by the signal
/// handler (`signals::FORWARD`). Polling instead (every 50 ms) woke this process 20 times
/// a second, and on an idle box its samples were most of what a segment had to name: the
/// recorder parsed hotspot's own debug information for them, segment after segment.
fn wait(mut child: Child) -> anyhow::Result<std::process::ExitStatus> {
    let pid = libc::pid_t::try_from(child.id()).unwrap_or(0);
    signals::FORWARD.store(pid, Ordering::SeqCst);
    // A stop that came before the line above was not passed on.
    if pid > 0 && signals::STOP.load(Ordering::SeqCst) {
        // SAFETY: kill(2) on our own child's pid, not yet reaped.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
    let exited = if pid > 0 {
        exited_unreaped(pid)
    } else {
        Ok(())
    };
    // Before reaping: afterwards the pid may be another process's.
    signals::FORWARD.store(0, Ordering::SeqCst);
    exited.context("waiting for a segment's recorder")?;
    child.wait().context("waiting for a segment's recorder")
}

/// Blocks until child `pid` has exited, leaving it to be reaped (waitid with WNOWAIT).
fn exited_unreaped(pid: libc::pid_t) -> std::io::Result<()> {
    loop {
        // SAFETY: waitid(2) writes only the siginfo_t it is given.
        let r = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// The options of `record` a segment's recorder takes over (all but the flight
/// recorder's own, the output and the duration).
fn child_args(a: &RecordArgs) -> Vec<String> {
    let mut v = Vec::new();
    if a.all {
        v.push("-a".to_string());
    }
    v.extend(a.pids.iter().map(u32::to_string));
    for p in &a.pid {
        v.push("-p".into());
        v.push(p.clone());
    }
    v.push("-F".into());
    v.push(a.freq.to_string());
    if a.no_children {
        v.push("--no-children".into());
    }
    if a.off_cpu {
        v.push("--off-cpu".into());
    }
    if a.scrub {
        v.push("--scrub".into());
    }
    // Passed on only when given: left out, each segment's recorder picks the default
    // (and degrades to frame pointers where the kernel refuses the stack copy, and says so).
    if let Some(g) = a.unwind.call_graph {
        v.push("--call-graph".into());
        v.push(
            match g {
                CallGraph::Dwarf => "dwarf",
                CallGraph::Fp => "fp",
            }
            .into(),
        );
    }
    if let Some(cap) = a.unwind.stack_cap {
        v.push("--stack-cap".into());
        v.push(cap.to_string());
    }
    if let Some(r) = a.ring_bytes {
        v.push("--ring-bytes".into());
        v.push(r.to_string());
    }
    v.push("--marks-from".into());
    v.push(a.output.to_string_lossy().into_owned());
    if let Some(f) = a.flush_interval {
        v.push("--flush-interval".into());
        v.push(format!("{}ms", f.as_millis().max(1)));
    }
    v
}

/// `hotspot mark DIR TEXT`: drops a mark, now, for the recorder writing DIR's segments.
pub fn mark(args: &crate::cli::MarkArgs) -> anyhow::Result<()> {
    let dir = &args.dir;
    if !std::fs::metadata(dir).is_ok_and(|m| m.is_dir()) {
        anyhow::bail!(
            "{} is not a flight recorder's directory: give the -o DIR of `hotspot record --keep`",
            dir.display()
        );
    }
    if history::segments(dir)?.is_empty() {
        anyhow::bail!(
            "{} holds no segments: is a flight recorder (`hotspot record --keep … -o DIR`) writing there?",
            dir.display()
        );
    }
    marks::drop_mark(dir, marks::now_ns(), &args.text)?;
    Ok(())
}

/// The history's directory: created (mode 0700: segments hold command lines and paths)
/// if missing; a file there is refused.
fn create_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => anyhow::bail!(
            "{} is not a directory: --keep and --max-size record into a directory of segments",
            dir.display()
        ),
        Err(_) => std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("creating {}", dir.display())),
    }
}
