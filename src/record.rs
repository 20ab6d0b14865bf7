//! `hotspot record` and `hotspot demo`: wiring the recorder to the command line.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::Context;
use hotspot_format::BlockEvent;
use hotspot_recorder::bpf::{BpfSampler, EventSource, SamplerOptions};
use hotspot_recorder::launch::{Ending, GatedChild};
use hotspot_recorder::recording::process_exists;
use hotspot_recorder::{Progress, RecordConfig, RecordError, Recorder, StopReason, Summary};

use crate::cli::{DemoArgs, RecordArgs};
use crate::signals;

/// How to sample, whatever the target.
#[derive(Debug, Clone, Copy)]
pub struct Sampling {
    pub freq: u32,
    pub duration: Option<Duration>,
    /// Follow processes the targets fork.
    pub follow: bool,
    /// Bytes of user stack copied per sample for CFI unwinding; 0: frame pointers only.
    pub stack_cap: u32,
    /// Also record off-CPU time (`--off-cpu`).
    pub off_cpu: bool,
}

/// What `record` was asked to profile.
pub enum Target {
    Pids(Vec<u32>),
    All,
    Command(Vec<String>),
}

pub fn run(args: RecordArgs) -> anyhow::Result<()> {
    let target = if args.all {
        if !args.command.is_empty() {
            anyhow::bail!(
                "--all records every process; give either --all or a command after --, not both"
            );
        }
        Target::All
    } else if !args.command.is_empty() {
        if !args.pids.is_empty() {
            anyhow::bail!("give either PIDs or a command after --, not both");
        }
        Target::Command(args.command.clone())
    } else if !args.pids.is_empty() {
        Target::Pids(args.pids.clone())
    } else {
        anyhow::bail!(
            "nothing to record: give PIDs, --all, or a command after -- (e.g. hotspot record -o out.hsp -- ./myprog)"
        );
    };
    let sampling = Sampling {
        freq: args.freq,
        duration: args.duration,
        follow: !args.no_children,
        stack_cap: args.unwind.stack_cap(),
        off_cpu: args.off_cpu,
    };
    let knobs = Knobs {
        flush_log: args.flush_log.clone(),
        ring_bytes: args.ring_bytes,
        flush_every: args.flush_interval,
    };
    let summary = record(target, &args.output, sampling, knobs, !args.keep_running)?;
    print_summary(&summary, &args.output);
    Ok(())
}

/// `record`'s hidden testing options (see `RecordArgs`): they let tests force and check
/// faults (a tiny ring buffer, frequent blocks, a log of what was flushed).
#[derive(Debug, Default)]
pub struct Knobs {
    pub flush_log: Option<PathBuf>,
    pub ring_bytes: Option<u32>,
    pub flush_every: Option<Duration>,
}

/// `hotspot demo`: records the built-in workload and prints what the capture holds.
pub fn demo(args: DemoArgs) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("locating the hotspot executable")?;
    let secs = args
        .duration
        .unwrap_or(Duration::from_secs(5))
        .as_secs_f64();
    let cmd = vec![
        exe.to_string_lossy().into_owned(),
        "demo-workload".into(),
        format!("{secs}"),
    ];
    eprintln!(
        "hotspot: recording the built-in demo workload for {secs:.1} s at {} Hz…",
        args.freq
    );
    let sampling = Sampling {
        freq: args.freq,
        duration: None,
        follow: true,
        stack_cap: args.unwind.stack_cap(),
        off_cpu: false,
    };
    let summary = record(
        Target::Command(cmd),
        &args.output,
        sampling,
        Knobs::default(),
        true,
    )?;
    print_summary(&summary, &args.output);
    let capture = hotspot_replay::Capture::open(&args.output)?;
    print!("{}", hotspot_replay::info::text(&capture));
    Ok(())
}

/// How a recording runs besides what it records: `record`/`demo` flush once a second,
/// show progress on stderr and stop on Ctrl-C; live mode flushes often (a view tails the
/// file), keeps stderr quiet (the view owns the terminal) and stops when the view quits.
pub struct Run<'a> {
    pub flush_every: Duration,
    pub progress: bool,
    pub stop: &'a AtomicBool,
    /// Called once sampling runs and the capture file exists, with the pid of the
    /// command started (if any).
    pub started: &'a mut dyn FnMut(Option<u32>),
    /// End a started command that still runs when the recording stops (`--duration`,
    /// Ctrl-C, or the user quit the live view); false with `record --keep-running`.
    pub end_command: bool,
    /// Send a started command's stdout and stderr to this file and its stdin to
    /// /dev/null (live mode: the terminal belongs to the view).
    pub command_output: Option<&'a Path>,
    pub knobs: Knobs,
}

fn record(
    target: Target,
    output: &Path,
    sampling: Sampling,
    knobs: Knobs,
    end_command: bool,
) -> anyhow::Result<Summary> {
    let run = Run {
        flush_every: knobs
            .flush_every
            .unwrap_or(RecordConfig::default().flush_every),
        progress: true,
        stop: &signals::STOP,
        started: &mut |_| {},
        end_command,
        command_output: None,
        knobs,
    };
    record_with(target, output, sampling, run)
}

/// [`record`] with the knobs live mode needs (see [`Run`]).
pub fn record_with(
    target: Target,
    output: &Path,
    sampling: Sampling,
    run: Run<'_>,
) -> anyhow::Result<Summary> {
    let Sampling {
        freq,
        duration,
        follow,
        stack_cap,
        off_cpu,
    } = sampling;
    let pids = match &target {
        Target::Pids(p) => {
            for &pid in p {
                if !process_exists(pid) || pid == 0 {
                    return Err(RecordError::NoSuchProcess(pid).into());
                }
            }
            p.clone()
        }
        _ => Vec::new(),
    };
    let opts = SamplerOptions {
        freq_hz: u64::from(freq),
        all_processes: matches!(target, Target::All),
        follow_children: follow,
        self_tgid: std::process::id(),
        ring_bytes: run.knobs.ring_bytes.unwrap_or_else(|| {
            hotspot_recorder::bpf::ring_bytes_for(
                u64::from(freq),
                std::thread::available_parallelism().map_or(1, |n| n.get() as u64),
                stack_cap,
            )
        }),
        stack_cap,
        off_cpu,
    };
    let mut sampler = BpfSampler::load(&opts)?;
    // An empty file is what a recorder killed during set-up leaves (the file exists
    // before its header is written): replacing it loses nothing.
    let file = hotspot_recorder::capture_file::open_capture(output, |b| {
        b.is_empty() || b.starts_with(&hotspot_format::header::MAGIC)
    })?;
    let mut flush_log = match &run.knobs.flush_log {
        Some(p) => Some(open_log(p)?),
        None => None,
    };
    let mut child = match &target {
        Target::Command(argv) => Some(match run.command_output {
            Some(out) => with_std_fds(out, || GatedChild::spawn(argv))??,
            None => GatedChild::spawn(argv)?,
        }),
        _ => None,
    };
    let mut targets = pids;
    if let Some(c) = &child {
        targets.push(c.pid());
    }
    for &pid in &targets {
        sampler.add_target(pid)?;
    }
    let cfg = RecordConfig {
        targets: targets.clone(),
        all_processes: opts.all_processes,
        duration,
        flush_every: run.flush_every,
        stack_cap,
        // One period: what a CPU sample stands for (the kernel's period_ns).
        off_cpu_period_ns: off_cpu.then(|| 1_000_000_000 / u64::from(freq)),
        ..RecordConfig::default()
    };
    // The set-up (symbol worker, kernel naming) happens before sampling starts, so the
    // first events are drained at once.
    let mut recorder = signals::not_for_new_threads(|| Recorder::new(cfg))?;
    match sampler.take_kernel_symbols() {
        Some(bpf) => recorder.use_bpf_kernel_symbols(bpf),
        // While still privileged: once privileges drop the file shows no addresses.
        None => recorder.read_kallsyms_now(),
    }
    for &pid in &targets {
        if child.as_ref().is_none_or(|c| c.pid() != pid) {
            recorder.track(pid);
        }
    }
    let command_line: Vec<String> = std::env::args().collect();
    let header = hotspot_recorder::session::header(
        Path::new("/proc"),
        freq,
        &targets,
        opts.all_processes,
        command_line,
    );
    // Threads are accounted from the session's start (time 0 of the capture).
    sampler.set_session_start(header.start_mono_ns);
    let mut writer = hotspot_format::Writer::new(file, header)?;
    if let Some(log) = &flush_log {
        let mut log = log.try_clone().context("duplicating the flush log")?;
        writer.observe_blocks(Box::new(move |e| {
            let line = match e {
                BlockEvent::Writing { samples } => format!("write {samples}\n"),
                BlockEvent::Written { samples } => format!("done {samples}\n"),
            };
            // One write(2) per line: a SIGKILL leaves whole lines only. A failing debug
            // log must not fail the recording.
            let _ = log.write_all(line.as_bytes());
        }));
    }
    signals::install();
    sampler.start()?;
    // Loaded and attached: from here on the recorder only reads its targets and writes the
    // files it has open. Failing to drop is worth a warning, not the recording.
    if let Err(e) =
        hotspot_recorder::privilege::drop_after_attach(|| sampler.lost_per_cpu().is_ok())
        && run.progress
    {
        eprintln!("hotspot: warning: {}", crate::format_error(&e.into()));
    }
    if let Some(c) = &mut child {
        c.release()?;
        // Read the command's /proc entries right after its exec: a short command can be
        // gone before its first samples are drained.
        recorder.track_command(c.pid());
    }
    (run.started)(child.as_ref().map(GatedChild::pid));
    let tty = run.progress && std::io::stderr().is_terminal();
    let mut on_progress = |p: &Progress| {
        // Reap a finished command so the recorder sees it gone.
        if let Some(c) = &mut child {
            c.try_wait();
        }
        if tty {
            eprint!("\r\x1b[2K{}", progress_line(p));
        }
    };
    let result = recorder.run(&mut sampler, writer, run.stop, &mut on_progress);
    if tty {
        eprint!("\r\x1b[2K");
    }
    let (summary, file) = result?;
    file.sync_all()
        .with_context(|| format!("syncing {}", output.display()))?;
    // Sampling has stopped: the kernel's counters no longer move. Read them apart from the
    // recorder's own accounting, so a test can hold the capture's lost count against them.
    let kernel_lost: u64 = sampler.lost_per_cpu()?.iter().sum();
    if let Some(log) = &mut flush_log {
        let tail = format!(
            "bpf-lost {kernel_lost}\nbpf-lost-task-events {}\nmalformed {}\ncapture-lost {}\nlost-mapping-events {}\nmalformed-mapping-events {}\nbpf-lost-off-cpu {}\ncapture-lost-off-cpu {}\nunseen-switches {}\n",
            sampler.lost_task_events()?,
            sampler.malformed_records(),
            summary.progress.lost,
            summary.progress.lost_mappings,
            sampler.mapping_events_malformed(),
            sampler.lost_off_cpu()?,
            summary.progress.lost_off_cpu,
            sampler.unseen_switches()?
        );
        let _ = log.write_all(tail.as_bytes());
    }
    if kernel_lost != summary.progress.lost && run.progress {
        eprintln!(
            "hotspot: warning: the kernel counted {kernel_lost} lost samples, the capture holds {}",
            summary.progress.lost
        );
    }
    if let Some(c) = &mut child
        && c.try_wait().is_none()
    {
        if run.end_command {
            end_command(c, summary.reason, run.progress);
        } else if run.progress {
            // --keep-running: the command goes on unprofiled; say so.
            eprintln!(
                "hotspot: the command (pid {}) is still running, no longer profiled (--keep-running)",
                c.pid()
            );
        }
    }
    Ok(summary)
}

/// How long a command may take to exit by itself after a Ctrl-C (the terminal sent it
/// the signal too), and then to exit on SIGTERM before it is killed.
const SETTLE: Duration = Duration::from_millis(500);
const GRACE: Duration = Duration::from_secs(2);

/// Ends a command hotspot started that outlived the recording, as perf does (SIGTERM),
/// then SIGKILL if it ignores that: a run bounded by `--duration` leaves nothing behind.
fn end_command(c: &mut GatedChild, reason: StopReason, progress: bool) {
    // After a Ctrl-C the command has the terminal's SIGINT: let it act on it first.
    let settle = if reason == StopReason::Interrupted {
        SETTLE
    } else {
        Duration::ZERO
    };
    let how = match c.end(settle, GRACE) {
        Ending::Exited => return,
        Ending::Terminated => "ended it (SIGTERM)".to_string(),
        Ending::Killed => format!(
            "ended it (SIGKILL: still running {:.0} s after SIGTERM)",
            GRACE.as_secs_f64()
        ),
    };
    if progress {
        eprintln!(
            "hotspot: the command (pid {}) outlived the recording: {how}; --keep-running leaves it running",
            c.pid()
        );
    }
}

/// Opens the `--flush-log` file for appending (created 0600, like captures).
fn open_log(path: &Path) -> anyhow::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))
}

/// Runs `f` (which forks) with stdin on /dev/null and stdout/stderr on `out`, so the
/// child inherits those; hotspot's own descriptors are put back afterwards.
fn with_std_fds<T>(out: &Path, f: impl FnOnce() -> T) -> anyhow::Result<T> {
    use std::os::fd::AsRawFd;
    let log = std::fs::File::create(out).with_context(|| format!("creating {}", out.display()))?;
    let null = std::fs::File::open("/dev/null").context("opening /dev/null")?;
    let mut saved = [-1; 3];
    for (fd, slot) in saved.iter_mut().enumerate() {
        // SAFETY: dup of a standard descriptor; the copy is closed below.
        *slot = unsafe { libc::dup(fd as libc::c_int) };
    }
    // SAFETY: dup2 onto the standard descriptors from files that stay open meanwhile.
    unsafe {
        libc::dup2(null.as_raw_fd(), 0);
        libc::dup2(log.as_raw_fd(), 1);
        libc::dup2(log.as_raw_fd(), 2);
    }
    let r = f();
    for (fd, &copy) in saved.iter().enumerate() {
        if copy >= 0 {
            // SAFETY: restoring from the copies made above, then closing them.
            unsafe {
                libc::dup2(copy, fd as libc::c_int);
                libc::close(copy);
            }
        }
    }
    Ok(r)
}

fn progress_line(p: &Progress) -> String {
    format!(
        "recording: {:.1} s, {} samples, {} lost, {} written",
        p.elapsed.as_secs_f64(),
        p.samples,
        p.lost,
        human_bytes(p.bytes)
    )
}

pub fn print_summary(s: &Summary, output: &Path) {
    let size = std::fs::metadata(output)
        .map(|m| m.len())
        .unwrap_or(s.progress.bytes);
    let why = match s.reason {
        StopReason::Interrupted => "interrupted",
        StopReason::TargetsExited => "every target exited",
        StopReason::Duration => "duration reached",
    };
    eprintln!(
        "hotspot: {} samples ({} lost) from {} process{}, {} thread{} in {:.1} s; {} distinct stacks; {} written to {} ({why})",
        s.progress.samples,
        s.progress.lost,
        s.processes,
        if s.processes == 1 { "" } else { "es" },
        s.threads,
        if s.threads == 1 { "" } else { "s" },
        s.progress.elapsed.as_secs_f64(),
        s.stacks,
        human_bytes(size),
        output.display(),
    );
    if s.progress.off_cpu_samples > 0 || s.progress.lost_off_cpu > 0 {
        eprintln!(
            "hotspot: {} off-CPU samples ({} off-CPU records lost)",
            s.progress.off_cpu_samples, s.progress.lost_off_cpu
        );
    }
    if s.progress.lost_mappings > 0 {
        eprintln!(
            "hotspot: warning: the kernel dropped {} mapping events (its ring was full): frames of the processes they were about may be unnamed",
            s.progress.lost_mappings
        );
    }
    if s.kallsyms_missing {
        eprintln!(
            "hotspot: warning: /proc/kallsyms gave no addresses (kptr_restrict?): kernel frames are unnamed"
        );
    }
}

fn human_bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1} GiB", n as f64 / (1u64 << 30) as f64),
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}
