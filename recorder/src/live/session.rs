//! A recording of this machine's processes, from start to end: the targets checked (or
//! the command started, held at its gate), the BPF sampler loaded, the capture opened,
//! the core set up, the session header written, sampling attached, privileges dropped,
//! the command released, the recording loop run, and at the end the kernel's own lost
//! count held against the capture's and a command that outlived the recording ended.
//! `hotspot record`, `live` and `demo` all come through [`record`]; what it has to say
//! along the way goes to an [`Observer`], never to the terminal.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use hotspot_format::{BlockEvent, FeatureOff};

use super::flight::{Flight, FlightSegments, HeaderFacts};
use super::machine;
use super::proc_host::{ProcHost, process_exists};
use crate::bpf::{BpfSampler, SamplerOptions};
use crate::convert::ConvertConfig;
use crate::error::RecorderError;
use crate::launch::{Ending, GatedChild};
use crate::privilege::PrivilegeError;
use crate::recording::{Progress, RecordConfig, Recorder, StopReason, Summary};
use crate::source::EventSource;

/// What to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// These running processes (all their threads).
    Pids(Vec<u32>),
    /// Every process on the machine.
    All,
    /// A command started for the recording (argv), from its first instruction.
    Command(Vec<String>),
}

/// How a session records.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    pub target: Target,
    /// The capture file (an existing file is replaced only if it is a capture).
    pub output: PathBuf,
    /// Samples per second per CPU.
    pub freq: u32,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Follow processes the targets fork.
    pub follow_children: bool,
    /// Bytes of user stack copied per sample for CFI unwinding; 0: frame pointers only.
    pub stack_cap: u32,
    /// With `stack_cap > 0`: record frame-pointer stacks when the kernel refuses the
    /// stack copy (saying so: [`Warning::FeatureOff`] and the capture's `FeatureOff`)
    /// instead of failing. `hotspot record`'s default; an explicit `--call-graph dwarf`
    /// clears it.
    pub stack_fallback: bool,
    /// Also record off-CPU time.
    pub off_cpu: bool,
    /// Most Python frames per sample of a Python process (`--python-frames`).
    pub python_frames: u32,
    /// How often a block is written.
    pub flush_every: Duration,
    /// The kernel's sample buffer in bytes (default: sized for the rate and CPUs).
    pub ring_bytes: Option<u32>,
    /// End a started command that still runs when the recording stops (SIGTERM, then
    /// SIGKILL); false leaves it running.
    pub end_command: bool,
    /// Send a started command's stdout and stderr to this file and its stdin to
    /// /dev/null (the terminal is not its own).
    pub command_output: Option<PathBuf>,
    /// Testing: append `write N` / `done N` around every block write and the kernel's
    /// lost counters at the end to this file.
    pub flush_log: Option<PathBuf>,
    /// The command line the session header records.
    pub command_line: Vec<String>,
    /// Take marks dropped into this directory (`hotspot mark`) at every block.
    pub marks: Option<PathBuf>,
    /// Scrub the capture as it is written (`record --scrub`: `hotspot_format::scrub`).
    pub scrub: Option<hotspot_format::Scrubbed>,
    /// Record a flight recorder's history of segments into this directory instead of
    /// one capture at `output`.
    pub flight: Option<Flight>,
}

impl SessionOptions {
    /// A session recording `target` into `output` with the defaults of `hotspot record`.
    pub fn new(target: Target, output: impl Into<PathBuf>) -> Self {
        SessionOptions {
            target,
            output: output.into(),
            freq: 499,
            duration: None,
            follow_children: true,
            stack_cap: crate::bpf::abi::MAX_STACK as u32,
            stack_fallback: true,
            off_cpu: false,
            python_frames: crate::bpf::DEFAULT_PYTHON_FRAMES,
            flush_every: RecordConfig::default().flush_every,
            ring_bytes: None,
            end_command: true,
            command_output: None,
            flush_log: None,
            command_line: Vec::new(),
            scrub: None,
            marks: None,
            flight: None,
        }
    }
}

/// What a session has to tell its caller while it runs.
pub trait Observer {
    /// Sampling runs and the capture exists; `command` is the pid of the command started,
    /// if one was.
    fn started(&mut self, command: Option<u32>) {
        let _ = command;
    }
    /// About once a block.
    fn progress(&mut self, progress: &Progress) {
        let _ = progress;
    }
    /// Something the recording went on despite.
    fn warning(&mut self, warning: Warning) {
        let _ = warning;
    }
    /// A flight recorder's segment at `path` is finished: `bytes` long, written over
    /// `took`.
    fn segment_ended(&mut self, path: &Path, bytes: u64, took: Duration) {
        let _ = (path, bytes, took);
    }
    /// A flight recorder's budgets removed `count` old segments.
    fn segments_removed(&mut self, count: usize) {
        let _ = count;
    }
}

/// An observer that wants to hear nothing.
impl Observer for () {}

/// What a session went on despite.
#[derive(Debug)]
pub enum Warning {
    /// Privileges could not be dropped after attach; the recording kept them.
    PrivilegesKept(PrivilegeError),
    /// The kernel's count of lost samples differs from the capture's.
    LostCountsDiffer { kernel: u64, capture: u64 },
    /// The command started outlived the recording and was ended (`how`, after `grace`
    /// for a kill).
    CommandEnded {
        pid: u32,
        how: Ending,
        grace: Duration,
    },
    /// The command started outlived the recording and runs on, no longer profiled.
    CommandLeftRunning { pid: u32 },
    /// The kernel could not load a feature and the recording goes on without it (said
    /// once, before sampling starts; the capture records it too).
    FeatureOff(FeatureOff),
}

/// How long a command may take to exit by itself after a Ctrl-C (the terminal sent it
/// the signal too), and then to exit on SIGTERM before it is killed.
const SETTLE: Duration = Duration::from_millis(500);
const GRACE: Duration = Duration::from_secs(2);

/// Records until `stop` is set, the duration is reached or every target has exited.
pub fn record(
    opts: &SessionOptions,
    stop: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<Summary, RecorderError> {
    let pids = match &opts.target {
        Target::Pids(p) => {
            for &pid in p {
                if !process_exists(pid) || pid == 0 {
                    return Err(RecorderError::NoSuchProcess(pid));
                }
            }
            p.clone()
        }
        _ => Vec::new(),
    };
    let all_processes = matches!(opts.target, Target::All);
    let sampler_opts = SamplerOptions {
        freq_hz: u64::from(opts.freq),
        all_processes,
        follow_children: opts.follow_children,
        self_tgid: std::process::id(),
        ring_bytes: opts.ring_bytes.unwrap_or_else(|| {
            crate::bpf::ring_bytes_for(
                u64::from(opts.freq),
                std::thread::available_parallelism().map_or(1, |n| n.get() as u64),
                opts.stack_cap,
            )
        }),
        stack_cap: opts.stack_cap,
        stack_fallback: opts.stack_fallback,
        off_cpu: opts.off_cpu,
        python_frames: opts.python_frames,
    };
    if let Some(f) = &opts.flight {
        super::flight::check_dir(&f.dir)?;
    }
    let sampler = BpfSampler::load(&sampler_opts)?;
    for off in sampler.features_off() {
        observer.warning(Warning::FeatureOff(off.clone()));
    }
    let output = match &opts.flight {
        Some(_) => Output::Segments,
        None => {
            // An empty file is what a recorder killed during set-up leaves (the file
            // exists before its header is written): replacing it loses nothing.
            let file = crate::capture_file::open_capture(&opts.output, |b| {
                b.is_empty() || b.starts_with(&hotspot_format::header::MAGIC)
            })?;
            // Until sampling runs, a failure removes the file: a recording that did not
            // start leaves no capture behind.
            let unstarted = Unstarted::new(&opts.output, &file);
            Output::File(file, unstarted)
        }
    };
    start_and_run(opts, stop, pids, sampler, output, observer)
}

/// Where a session's capture goes.
enum Output {
    /// One file, open; what the session does before sampling starts is undone by the
    /// [`Unstarted`] if it fails.
    File(File, Unstarted),
    /// `opts.flight`'s segments, each created when it starts (after privileges drop).
    Segments,
}

/// The rest of [`record`], once the sampler is loaded and the capture file open.
fn start_and_run(
    opts: &SessionOptions,
    stop: &AtomicBool,
    pids: Vec<u32>,
    mut sampler: BpfSampler,
    output: Output,
    observer: &mut dyn Observer,
) -> Result<Summary, RecorderError> {
    let all_processes = matches!(opts.target, Target::All);
    let mut flush_log = match &opts.flush_log {
        Some(p) => Some(open_log(p)?),
        None => None,
    };
    let mut child = match &opts.target {
        Target::Command(argv) => Some(match &opts.command_output {
            Some(out) => GatedChild::spawn_with_output(argv, out)?,
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
        convert: ConvertConfig {
            targets: targets.clone(),
            all_processes,
            // What the kernel took, which a fallback may have made 0.
            stack_cap: sampler.stack_cap(),
            // One period: what a CPU sample stands for (the kernel's period_ns).
            off_cpu_period_ns: opts.off_cpu.then(|| 1_000_000_000 / u64::from(opts.freq)),
            features_off: sampler.features_off().to_vec(),
            ..ConvertConfig::default()
        },
        duration: opts.duration,
        flush_every: opts.flush_every,
    };
    let mut host = ProcHost::live();
    if let Some(dir) = &opts.marks {
        host.take_marks_from(dir.clone());
    }
    match sampler.take_kernel_symbols() {
        Some(bpf) => host.use_bpf_kernel_symbols(bpf),
        // While still privileged: once privileges drop the file shows no addresses.
        None => host.read_kallsyms_now(),
    }
    // The set-up (symbol worker) happens before sampling starts, so the first events
    // are drained at once.
    let mut recorder = without_stop_signals(|| Recorder::new(cfg, Box::new(host)))?;
    for &pid in &targets {
        if child.as_ref().is_none_or(|c| c.pid() != pid) {
            recorder.track(pid);
        }
    }
    let facts = HeaderFacts {
        freq: opts.freq,
        targets: targets.clone(),
        all: all_processes,
        command_line: opts.command_line.clone(),
    };
    let (file, mut unstarted) = match output {
        Output::File(file, unstarted) => (file, unstarted),
        Output::Segments => {
            // Threads are accounted from the first segment's start; each segment holds its
            // part of their times (`Converter::handle_segment_threads`).
            sampler.set_session_start(machine::monotonic_ns());
            return run_segments(opts, stop, sampler, recorder, facts, child, observer);
        }
    };
    let header = machine::header(
        Path::new("/proc"),
        facts.freq,
        &facts.targets,
        facts.all,
        facts.command_line,
    );
    // Threads are accounted from the session's start (time 0 of the capture).
    sampler.set_session_start(header.start_mono_ns);
    let mut writer = match opts.scrub {
        Some(what) => hotspot_format::Writer::scrubbing(file, header, what)?,
        None => hotspot_format::Writer::new(file, header)?,
    };
    if let Some(log) = &flush_log {
        let mut log = log.try_clone().map_err(|source| RecorderError::Io {
            path: opts.flush_log.clone().unwrap_or_default(),
            source,
        })?;
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
    start_sampling(&mut sampler, &mut child, &mut recorder, observer)?;
    unstarted.started();
    observer.started(child.as_ref().map(GatedChild::pid));
    let mut on_progress = |p: &Progress| {
        // Reap a finished command so the recorder sees it gone.
        if let Some(c) = &mut child {
            c.try_wait();
        }
        observer.progress(p);
    };
    let (summary, file) = recorder.run(&mut sampler, writer, stop, &mut on_progress)?;
    file.sync_all().map_err(|source| RecorderError::Sync {
        path: opts.output.clone(),
        source,
    })?;
    // Sampling has stopped: the kernel's counters no longer move. Read them apart from the
    // recorder's own accounting, so a test can hold the capture's lost count against them.
    let kernel_lost: u64 = sampler.lost_per_cpu()?.iter().sum();
    if let Some(log) = &mut flush_log {
        let tail = format!(
            "bpf-lost {kernel_lost}\nbpf-lost-task-events {}\nmalformed {}\ncapture-lost {}\nlost-mapping-events {}\nmalformed-mapping-events {}\nbpf-lost-off-cpu {}\ncapture-lost-off-cpu {}\nunseen-switches {}\n",
            sampler.lost_task_events()?,
            sampler.malformed_records(),
            summary.totals.counts.lost,
            summary.totals.counts.lost_mappings,
            sampler.mapping_events_malformed(),
            sampler.lost_off_cpu()?,
            summary.totals.counts.lost_off_cpu,
            sampler.unseen_switches()?
        );
        let _ = log.write_all(tail.as_bytes());
    }
    if kernel_lost != summary.totals.counts.lost {
        observer.warning(Warning::LostCountsDiffer {
            kernel: kernel_lost,
            capture: summary.totals.counts.lost,
        });
    }
    outlived(&mut child, opts, summary.reason, observer);
    Ok(summary)
}

/// Starts sampling, drops privileges, and releases the command started, if any.
fn start_sampling(
    sampler: &mut BpfSampler,
    child: &mut Option<GatedChild>,
    recorder: &mut Recorder,
    observer: &mut dyn Observer,
) -> Result<(), RecorderError> {
    sampler.start()?;
    // Loaded and attached: from here on the recorder only reads its targets and writes the
    // files it has open (or, a flight recorder, creates in its own directory). Failing to
    // drop is worth a warning, not the recording.
    if let Err(e) = crate::privilege::drop_after_attach(|| sampler.lost_per_cpu().is_ok()) {
        observer.warning(Warning::PrivilegesKept(e));
    }
    if let Some(c) = child {
        c.release()?;
        // Read the command's /proc entries right after its exec: a short command can be
        // gone before its first samples are drained. What was sampled of it before its
        // exec is the recorder's own fork (issue 23).
        recorder.track_command(c.pid());
    }
    Ok(())
}

/// [`start_and_run`] for a flight recorder: sampling starts, then the segments follow
/// one another until the recording ends (see [`Recorder::run_segments`]).
fn run_segments(
    opts: &SessionOptions,
    stop: &AtomicBool,
    mut sampler: BpfSampler,
    mut recorder: Recorder,
    facts: HeaderFacts,
    mut child: Option<GatedChild>,
    observer: &mut dyn Observer,
) -> Result<Summary, RecorderError> {
    let Some(flight) = &opts.flight else {
        return Err(RecorderError::Other("no flight recorder directory".into()));
    };
    start_sampling(&mut sampler, &mut child, &mut recorder, observer)?;
    observer.started(child.as_ref().map(GatedChild::pid));
    let mut on_progress = |_: &Progress| {
        // Reap a finished command so the recorder sees it gone.
        if let Some(c) = &mut child {
            c.try_wait();
        }
    };
    let mut segments = FlightSegments::new(flight, facts, opts.scrub, observer);
    let summary = recorder.run_segments(&mut sampler, &mut segments, stop, &mut on_progress)?;
    segments.close()?;
    outlived(&mut child, opts, summary.reason, observer);
    Ok(summary)
}

/// A command the session started that still runs when the recording stops: ended
/// ([`end_command`]), or left running with `end_command` off, and said so.
fn outlived(
    child: &mut Option<GatedChild>,
    opts: &SessionOptions,
    reason: StopReason,
    observer: &mut dyn Observer,
) {
    if let Some(c) = child
        && c.try_wait().is_none()
    {
        if opts.end_command {
            end_command(c, reason, observer);
        } else {
            observer.warning(Warning::CommandLeftRunning { pid: c.pid() });
        }
    }
}

/// Ends a command the session started that outlived the recording, as perf does
/// (SIGTERM), then SIGKILL if it ignores that: a run bounded by a duration leaves
/// nothing behind.
fn end_command(c: &mut GatedChild, reason: StopReason, observer: &mut dyn Observer) {
    // After a Ctrl-C the command has the terminal's SIGINT: let it act on it first.
    let settle = if reason == StopReason::Interrupted {
        SETTLE
    } else {
        Duration::ZERO
    };
    let how = c.end(settle, GRACE);
    if how != Ending::Exited {
        observer.warning(Warning::CommandEnded {
            pid: c.pid(),
            how,
            grace: GRACE,
        });
    }
}

/// The capture file of a recording not started yet: dropped before [`Unstarted::started`],
/// it removes the file, if the path still names the file it opened (a file put there
/// since, by whoever can write the directory, is left alone).
struct Unstarted {
    path: PathBuf,
    /// The opened file's (device, inode), or `None` once started.
    id: Option<(u64, u64)>,
}

impl Unstarted {
    fn new(path: &Path, file: &File) -> Self {
        use std::os::unix::fs::MetadataExt;
        Unstarted {
            path: path.to_path_buf(),
            id: file.metadata().ok().map(|m| (m.dev(), m.ino())),
        }
    }

    /// Sampling runs: the file stays, whatever happens next.
    fn started(&mut self) {
        self.id = None;
    }
}

impl Drop for Unstarted {
    fn drop(&mut self) {
        use std::os::unix::fs::MetadataExt;
        let Some(id) = self.id else {
            return;
        };
        if std::fs::symlink_metadata(&self.path).is_ok_and(|m| (m.dev(), m.ino()) == id) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Opens the flush log for appending (created 0600, like captures).
fn open_log(path: &Path) -> Result<File, RecorderError> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|source| RecorderError::Io {
            path: path.to_path_buf(),
            source,
        })
}

/// Runs `f` with SIGINT and SIGTERM blocked in the calling thread, so the threads it
/// starts (the symbol worker) inherit a mask without them: the signals then go to the
/// recording thread, whose wait they cut short (a helper thread taking one would leave
/// the loop to notice a stop flag at its next wake-up, up to 100 ms later).
fn without_stop_signals<T>(f: impl FnOnce() -> T) -> T {
    // SAFETY: sigset_t is plain data, filled by sigemptyset/sigaddset before use;
    // pthread_sigmask only changes this thread's mask, and the old one is put back.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        let r = f();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        r
    }
}
