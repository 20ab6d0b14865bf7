//! The recording loop: drain BPF events, normalise stacks, track processes, resolve
//! symbols off the sampling path, and flush capture blocks at a steady pace.
//! [`Recorder`] is what is set up before sampling starts; [`Recorder::run`] drives a
//! `Recording` (the tables, the writer, the counts) with events from an [`EventSource`],
//! one `handle_*` method per kind of event.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hotspot_format::{
    InlinedFn, Lost, LostMappings, LostOffCpu, OffCpu, OffCpuSample, ProcessExit, Record, Sample,
    SourceLoc, Symbol, ThreadState, UnwindMethod, Unwinding, Writer,
};

use crate::bpf::{EventSource, RawEvent, RawSample, RawThread, StackEnd};
use crate::error::RecordError;
use crate::kernel_names::KernelSymbols;
use crate::normalizer::{Normalizer, UserPart};
use crate::process_table::ProcessTable;
use crate::sink::Sink;
use crate::symbols::worker::{Loc, Resolved, SymbolWorker};
use crate::user_stack::UserSample;
use hotspot_unwind::{CopyEnd, Regs, StackCopy};

/// What to record and how.
#[derive(Debug, Clone)]
pub struct RecordConfig {
    pub targets: Vec<u32>,
    pub all_processes: bool,
    pub duration: Option<Duration>,
    /// How often a block is flushed (at most about this much is lost on a kill).
    pub flush_every: Duration,
    pub proc_root: PathBuf,
    pub sys_root: PathBuf,
    /// Where separate debug files are looked up by build-id.
    pub debug_dirs: Vec<PathBuf>,
    /// Bytes of user stack the kernel copies per sample, unwound here with call-frame
    /// information; 0: user stacks are the kernel's frame-pointer walk.
    pub stack_cap: u32,
    /// `--off-cpu`: the ns one off-CPU period stands for (the capture's `OffCpu`
    /// definition); `None`: the capture has no off-CPU data.
    pub off_cpu_period_ns: Option<u64>,
}

impl Default for RecordConfig {
    fn default() -> Self {
        RecordConfig {
            targets: Vec::new(),
            all_processes: false,
            duration: None,
            flush_every: Duration::from_secs(1),
            proc_root: PathBuf::from("/proc"),
            sys_root: PathBuf::from("/sys"),
            debug_dirs: vec![PathBuf::from("/usr/lib/debug")],
            stack_cap: 0,
            off_cpu_period_ns: None,
        }
    }
}

/// Running totals, reported while recording and at the end.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    pub elapsed: Duration,
    pub samples: u64,
    pub lost: u64,
    /// Mapping events the kernel dropped.
    pub lost_mappings: u64,
    /// `--off-cpu`: off-CPU samples written, and off-CPU records the kernel dropped.
    pub off_cpu_samples: u64,
    pub lost_off_cpu: u64,
    pub bytes: u64,
}

/// Why recording stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    Interrupted,
    TargetsExited,
    Duration,
}

/// The outcome of a recording.
#[derive(Debug, Clone)]
pub struct Summary {
    pub progress: Progress,
    pub reason: StopReason,
    pub processes: usize,
    pub threads: usize,
    pub stacks: usize,
    pub frames: usize,
    /// Kernel symbols were unreadable (no privilege): kernel frames are unnamed.
    pub kallsyms_missing: bool,
}

/// Everything a recording needs that takes time to set up (the symbol worker, the kernel
/// naming): built before sampling starts, so the first events are handled at once
/// and a short-lived target's /proc entries are still there to read.
#[derive(Debug)]
pub struct Recorder {
    cfg: RecordConfig,
    norm: Normalizer,
    worker: SymbolWorker,
    /// Records produced before the writer existed (processes tracked up front).
    pending: Vec<Record>,
    /// Commands the recorder started, and when it saw their exec done.
    before_exec: HashMap<u32, u64>,
}

impl Recorder {
    pub fn new(cfg: RecordConfig) -> Result<Self, RecordError> {
        // Read only if a kernel frame needs it and BPF naming is not set up.
        let kallsyms = KernelSymbols::from_file(cfg.proc_root.join("kallsyms"));
        let mut norm = Normalizer::new(ProcessTable::new(&cfg.proc_root), kallsyms, &cfg.sys_root);
        // How stacks are unwound comes first in the capture, after the session header.
        let mut defs = crate::sink::VecSink::default();
        let unwinding = if cfg.stack_cap > 0 {
            let markers = norm
                .enable_cfi(cfg.debug_dirs.clone(), &mut defs)
                .map_err(RecordError::from)?;
            Unwinding {
                method: UnwindMethod::Cfi,
                stack_cap: cfg.stack_cap,
                markers: Some(markers),
            }
        } else {
            Unwinding::default()
        };
        let mut pending = vec![Record::Unwinding(unwinding)];
        if let Some(period_ns) = cfg.off_cpu_period_ns {
            pending.push(Record::OffCpu(OffCpu { period_ns }));
        }
        pending.append(&mut defs.records);
        let worker = SymbolWorker::start(cfg.debug_dirs.clone(), cfg.proc_root.clone()).map_err(
            |source| RecordError::Io {
                path: "symbol worker thread".into(),
                source,
            },
        )?;
        Ok(Recorder {
            cfg,
            norm,
            worker,
            pending,
            before_exec: HashMap::new(),
        })
    }

    /// Names kernel frames through the kernel itself (see
    /// [`BpfKernelSymbols`](crate::kernel_names::BpfKernelSymbols)) instead of /proc/kallsyms.
    pub fn use_bpf_kernel_symbols(&mut self, bpf: crate::kernel_names::BpfKernelSymbols) {
        self.norm.use_bpf_kernel_symbols(bpf);
    }

    /// Reads /proc/kallsyms now (it is otherwise read at the first kernel frame): for
    /// when kernel frames will be named from it and privileges are about to be dropped.
    pub fn read_kallsyms_now(&mut self) {
        self.norm.read_kallsyms_now();
    }

    /// Reads a target's /proc entries now (call right after a command's exec): a
    /// command that exits quickly is gone before its first samples are drained.
    pub fn track(&mut self, pid: u32) {
        let now = crate::session::monotonic_ns();
        let (_, new) = self.norm.procs.ensure(pid, "", now);
        if let Some(p) = new {
            self.pending.push(Record::Process(p));
        }
        self.norm.maps.snapshot(pid);
    }

    /// [`Recorder::track`] for a command the recorder started, called once its exec is
    /// done: the command is a target from before its exec (so that its first instruction
    /// is sampled), and what is sampled of it until the exec renames it is the recorder's
    /// own fork, not the command (see `Traced::before_exec`).
    pub fn track_command(&mut self, pid: u32) {
        self.track(pid);
        self.before_exec.insert(pid, crate::session::monotonic_ns());
    }

    /// Records until stopped; returns the summary and the finished output.
    pub fn run<S: EventSource, W: Write>(
        self,
        source: &mut S,
        writer: Writer<W>,
        stop: &AtomicBool,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<(Summary, W), RecordError> {
        let mut rec = Recording::new(self, writer)?;
        let flush_every = rec.cfg.flush_every;
        // The first block goes out early, so a capture is readable (and tailable) at once.
        let first = flush_every.min(Duration::from_millis(250));
        let mut last_flush = Instant::now()
            .checked_sub(flush_every - first)
            .unwrap_or_else(Instant::now);
        let mut events = Vec::new();
        let reason = loop {
            if stop.load(Ordering::Relaxed) {
                break StopReason::Interrupted;
            }
            if rec.cfg.duration.is_some_and(|d| rec.start.elapsed() >= d) {
                break StopReason::Duration;
            }
            let until_flush = flush_every.saturating_sub(last_flush.elapsed());
            source.poll(until_flush.min(Duration::from_millis(100)), &mut events)?;
            rec.handle(&mut events)?;
            // Names travel continuously rather than once per flush, so a block usually
            // carries the names of its own new frames: a killed recorder keeps them.
            rec.exchange_symbols()?;
            if last_flush.elapsed() >= flush_every {
                last_flush = Instant::now();
                rec.flush(source)?;
                rec.note_lost_mappings(source)?;
                rec.forget_exited_targets();
                on_progress(&rec.progress());
            }
            if rec.targets_gone() {
                break StopReason::TargetsExited;
            }
        };
        // Sampling stops first, so the lost counters read by the last flush are final (the
        // capture's lost count is then exactly the kernel's). A failure to detach must not
        // cost the capture its end: the links go when the source is dropped anyway.
        let _ = source.stop_sampling();
        rec.accounting_end = source.accounting_end();
        // What is already in the ring buffer still belongs to the recording. One drain takes
        // a whole ring's worth; a second picks up what arrived meanwhile (task events).
        for _ in 0..3 {
            source.poll(Duration::ZERO, &mut events)?;
            if events.is_empty() {
                break;
            }
            rec.handle(&mut events)?;
        }
        if rec.cfg.off_cpu_period_ns.is_some() {
            // Taken out of the kernel, then one more drain for the exits written before.
            let live = source.take_thread_times()?;
            source.poll(Duration::ZERO, &mut events)?;
            rec.handle(&mut events)?;
            rec.write_live_threads(live)?;
        }
        rec.note_lost_mappings(source)?;
        rec.flush(source)?;
        rec.finish(reason)
    }
}

/// Sets up a [`Recorder`] and runs it (for callers with nothing to track up front).
pub fn run<S: EventSource, W: Write>(
    source: &mut S,
    writer: Writer<W>,
    cfg: &RecordConfig,
    stop: &AtomicBool,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<(Summary, W), RecordError> {
    Recorder::new(cfg.clone())?.run(source, writer, stop, on_progress)
}

/// The processes whose events count.
struct Traced {
    /// The targets and the children they forked, while they live (checked once a
    /// flush too, in case an exit event was lost): recording ends when none is left.
    live: HashSet<u32>,
    /// The same until their exit event is handled: events still queued from a process
    /// that has just died count.
    known: HashSet<u32>,
    /// Every process (the recorder excepted) is traced.
    all: bool,
    me: u32,
    /// Commands the recorder started, until their exec: a tick in the exec before the
    /// kernel renames the process (most often while it frees the child's copy of the
    /// recorder's memory) is the recorder's fork, named after the recorder, its user stack
    /// in the recorder's image; it is the recorder's own time, never sampled elsewhere.
    /// The exec ends at the first exec event handled (events are in time order), or
    /// at the time kept here, when the recorder saw the exec done, should both be lost.
    before_exec: HashMap<u32, u64>,
}

impl Traced {
    fn has(&self, pid: u32) -> bool {
        pid != self.me && (self.all || self.known.contains(&pid))
    }

    /// True for a sample of a command the recorder started that was taken before its exec.
    fn before_exec(&mut self, pid: u32, time_ns: u64) -> bool {
        match self.before_exec.get(&pid) {
            Some(&done) if time_ns < done => true,
            Some(_) => {
                self.before_exec.remove(&pid);
                false
            }
            None => false,
        }
    }

    /// `pid` exec'd: what follows is the program it runs.
    fn exec(&mut self, pid: u32) {
        self.before_exec.remove(&pid);
    }
}

/// One recording in progress: the tables events are normalised against, the symbol
/// worker, the capture being written and the running counts. Events come in through
/// the `handle_*` methods, in time order; [`Recording::finish`] writes the end.
struct Recording<W: Write> {
    cfg: RecordConfig,
    norm: Normalizer,
    worker: SymbolWorker,
    writer: Writer<W>,
    traced: Traced,
    /// Scratch for one sample's frames.
    frames: Vec<u32>,
    /// Samples lost per CPU as last read, to write only what is new.
    lost_seen: Vec<u64>,
    lost_total: u64,
    lost_mappings: u64,
    samples: u64,
    off_cpu_samples: u64,
    lost_off_cpu: u64,
    /// When the kernel stopped accounting thread times, once it has.
    accounting_end: Option<u64>,
    /// Threads whose times were written accounted to the end (exits the kernel wrote after
    /// it stopped accounting): the live threads read at the end skip them.
    closed_at_end: HashSet<u32>,
    start: Instant,
}

/// What a sample stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SampleClass {
    /// A tick on the CPU: one period.
    OnCpu,
    /// Blocked time that crossed `periods` periods, in `state`.
    OffCpu { periods: u32, state: ThreadState },
}

impl<W: Write> Recording<W> {
    /// Starts writing: the records produced before the writer existed go first.
    fn new(recorder: Recorder, mut writer: Writer<W>) -> Result<Self, RecordError> {
        let Recorder {
            cfg,
            norm,
            worker,
            pending,
            before_exec,
        } = recorder;
        let start = Instant::now();
        for r in pending {
            writer.push(r)?;
        }
        let traced = Traced {
            live: cfg.targets.iter().copied().collect(),
            known: cfg.targets.iter().copied().collect(),
            all: cfg.all_processes,
            me: std::process::id(),
            before_exec,
        };
        Ok(Recording {
            cfg,
            norm,
            worker,
            writer,
            traced,
            frames: Vec::new(),
            lost_seen: Vec::new(),
            lost_total: 0,
            lost_mappings: 0,
            samples: 0,
            off_cpu_samples: 0,
            lost_off_cpu: 0,
            accounting_end: None,
            closed_at_end: HashSet::new(),
            start,
        })
    }

    /// Handles a batch of events (in time order), leaving `events` empty.
    fn handle(&mut self, events: &mut Vec<RawEvent>) -> Result<(), RecordError> {
        for ev in events.drain(..) {
            match ev {
                RawEvent::Sample(s) => self.handle_sample(&s, SampleClass::OnCpu)?,
                RawEvent::OffCpu(o) => self.handle_sample(
                    &o.sample,
                    SampleClass::OffCpu {
                        periods: o.periods,
                        state: o.state,
                    },
                )?,
                RawEvent::ThreadTimes { tid, times } => self.handle_thread_times(tid, &times)?,
                RawEvent::Fork {
                    time_ns,
                    parent,
                    child,
                } => self.handle_fork(time_ns, parent, child),
                RawEvent::Exec { time_ns, pid, comm } => self.handle_exec(time_ns, pid, &comm)?,
                RawEvent::Exit { time_ns, pid } => self.handle_exit(time_ns, pid)?,
                RawEvent::Mmap {
                    time_ns,
                    pid,
                    mapping,
                } => self.handle_mmap(time_ns, pid, mapping),
                RawEvent::NewImage { time_ns, pid } => self.handle_new_image(time_ns, pid),
            }
        }
        Ok(())
    }

    /// One sample (of either class: the stack is normalised the same way): its process
    /// and thread if new, its stack, the sample itself.
    fn handle_sample(&mut self, s: &RawSample, class: SampleClass) -> Result<(), RecordError> {
        if self.traced.before_exec(s.pid, s.time_ns) {
            return Ok(());
        }
        let (norm, writer) = (&mut self.norm, &mut self.writer);
        let comm = comm_str(&s.comm);
        let (_, new_proc) = norm.procs.ensure(s.pid, &comm, s.time_ns);
        if let Some(p) = new_proc {
            writer.push(Record::Process(p))?;
        }
        if let Some(t) = norm.procs.thread_seen(s.tid, s.pid, &comm, s.time_ns) {
            writer.push(Record::Thread(t))?;
        }
        self.frames.clear();
        let kernel = match class {
            SampleClass::OnCpu => &s.kernel[..],
            SampleClass::OffCpu { .. } => &s.kernel[norm.tracing_frames(&s.kernel)..],
        };
        norm.stack(
            s.pid,
            kernel,
            user_part(s),
            s.time_ns,
            writer,
            &mut self.frames,
        )?;
        let stack = norm.frames.stack(&self.frames, writer)?;
        let sample = Sample {
            time_ns: s.time_ns,
            tid: s.tid,
            cpu: s.cpu,
            stack,
        };
        match class {
            SampleClass::OnCpu => {
                writer.push_sample(sample)?;
                self.samples += 1;
            }
            SampleClass::OffCpu { periods, state } => {
                writer.push_off_cpu_sample(OffCpuSample {
                    sample,
                    periods,
                    state,
                })?;
                self.off_cpu_samples += 1;
            }
        }
        Ok(())
    }

    /// A thread exited: its exact times. One the kernel wrote after it stopped
    /// accounting is cut back to that end (and is no exit within the recording).
    fn handle_thread_times(&mut self, tid: u32, times: &RawThread) -> Result<(), RecordError> {
        let end = self
            .accounting_end
            .map_or(times.last_ns, |end| end.min(times.last_ns));
        let t = times.closed_at(tid, end, true);
        if !t.exited {
            self.closed_at_end.insert(tid);
        }
        self.writer.push(Record::ThreadTimes(t.record()))?;
        Ok(())
    }

    /// The threads alive at the end, accounted to it.
    fn write_live_threads(&mut self, live: Vec<(u32, RawThread)>) -> Result<(), RecordError> {
        let end = self
            .accounting_end
            .unwrap_or_else(crate::session::monotonic_ns);
        for (tid, times) in live {
            if self.closed_at_end.contains(&tid) {
                continue;
            }
            let t = times.closed_at(tid, end, false);
            self.writer.push(Record::ThreadTimes(t.record()))?;
        }
        Ok(())
    }

    /// A traced process forked: the child is traced and inherits its mappings.
    fn handle_fork(&mut self, time_ns: u64, parent: u32, child: u32) {
        self.traced.live.insert(child);
        self.traced.known.insert(child);
        self.norm.maps.fork(parent, child, time_ns);
    }

    /// A process exec'd: its new name.
    fn handle_exec(&mut self, time_ns: u64, pid: u32, comm: &[u8; 16]) -> Result<(), RecordError> {
        self.traced.exec(pid);
        if let Some(rec) = self.norm.procs.exec(pid, &comm_str(comm), time_ns) {
            self.writer.push(Record::Process(rec))?;
        }
        Ok(())
    }

    fn handle_exit(&mut self, time_ns: u64, pid: u32) -> Result<(), RecordError> {
        self.norm.maps.exit(pid);
        self.traced.live.remove(&pid);
        self.traced.known.remove(&pid);
        self.writer
            .push(Record::ProcessExit(ProcessExit { pid, time_ns }))?;
        Ok(())
    }

    /// Mapping events come for every process on the machine: only traced ones count.
    fn handle_mmap(&mut self, time_ns: u64, pid: u32, mapping: crate::proc_maps::Mapping) {
        if self.traced.has(pid) {
            self.norm.maps.mmap(pid, mapping, time_ns);
        }
    }

    /// A traced process replaced its image (exec): its old mappings are gone.
    fn handle_new_image(&mut self, time_ns: u64, pid: u32) {
        self.traced.exec(pid);
        if self.traced.has(pid) {
            self.norm.maps.exec(pid, time_ns);
        }
    }

    /// Sends new frames to the symboliser and writes the names that are ready.
    fn exchange_symbols(&mut self) -> Result<(), RecordError> {
        let norm = &mut self.norm;
        let batch: Vec<_> = norm
            .take_symbol_requests()
            .into_iter()
            .filter_map(|r| norm.modules.get(r.module).cloned().map(|m| (r, m)))
            .collect();
        self.worker.submit(batch);
        push_symbols(self.worker.ready(), &mut self.writer)
    }

    /// Sends new frames to the symboliser, writes the names that came back and the lost
    /// counts, and flushes a block.
    fn flush<S: EventSource>(&mut self, source: &mut S) -> Result<(), RecordError> {
        self.exchange_symbols()?;
        let lost = source.lost_per_cpu()?;
        let now = crate::session::monotonic_ns();
        let seen = &mut self.lost_seen;
        seen.resize(lost.len().max(seen.len()), 0);
        for (cpu, (&now_count, seen)) in lost.iter().zip(seen.iter_mut()).enumerate() {
            let delta = now_count.saturating_sub(*seen);
            if delta > 0 {
                *seen = now_count;
                self.lost_total += delta;
                self.writer.push(Record::Lost(Lost {
                    time_ns: now,
                    cpu: cpu as u32,
                    count: delta,
                }))?;
            }
        }
        let lost_off_cpu = source.lost_off_cpu()?;
        if lost_off_cpu > self.lost_off_cpu {
            self.writer.push(Record::LostOffCpu(LostOffCpu {
                time_ns: now,
                count: lost_off_cpu - self.lost_off_cpu,
            }))?;
            self.lost_off_cpu = lost_off_cpu;
        }
        self.writer.flush_block()?;
        Ok(())
    }

    /// Writes the mapping events lost since the last call, and from the first loss on
    /// lets misses re-read `/proc`, which may still explain them.
    fn note_lost_mappings<S: EventSource>(&mut self, source: &mut S) -> Result<(), RecordError> {
        let now = source.lost_mapping_events();
        if now > self.lost_mappings {
            self.writer.push(Record::LostMappings(LostMappings {
                time_ns: crate::session::monotonic_ns(),
                count: now - self.lost_mappings,
            }))?;
            self.lost_mappings = now;
            self.norm.maps.events_were_lost();
        }
        Ok(())
    }

    /// Drops targets that are gone (in case their exit event was lost).
    fn forget_exited_targets(&mut self) {
        if !self.cfg.all_processes {
            self.traced.live.retain(|&pid| process_exists(pid));
        }
    }

    /// Every target (and every child) has exited.
    fn targets_gone(&self) -> bool {
        !self.cfg.all_processes && self.traced.live.is_empty()
    }

    fn progress(&self) -> Progress {
        Progress {
            elapsed: self.start.elapsed(),
            samples: self.samples,
            lost: self.lost_total,
            lost_mappings: self.lost_mappings,
            off_cpu_samples: self.off_cpu_samples,
            lost_off_cpu: self.lost_off_cpu,
            bytes: self.writer.bytes_written(),
        }
    }

    /// Waits for the last names, writes them and the capture's end.
    fn finish(mut self, reason: StopReason) -> Result<(Summary, W), RecordError> {
        let mut progress = self.progress();
        push_symbols(self.worker.finish(), &mut self.writer)?;
        progress.elapsed = self.start.elapsed();
        progress.bytes = self.writer.bytes_written();
        let norm = &self.norm;
        let summary = Summary {
            reason,
            processes: norm.procs.process_count(),
            threads: norm.procs.thread_count(),
            stacks: norm.frames.stack_count(),
            frames: norm.frames.frame_count(),
            kallsyms_missing: norm.kallsyms_empty(),
            progress,
        };
        let out = self.writer.finish(
            crate::session::wall_ns(),
            crate::session::monotonic_ns(),
            self.lost_total,
        )?;
        Ok((summary, out))
    }
}

/// The user side of a sample as the normaliser takes it.
fn user_part(s: &RawSample) -> UserPart<'_> {
    match s.regs {
        // Copied registers and stack: unwound here with call-frame information.
        Some(r) => UserPart::Copied(UserSample {
            pid: s.pid,
            time_ns: s.time_ns,
            regs: Regs::from(r),
            stack: StackCopy {
                base: r.sp,
                bytes: &s.stack,
                end: match s.stack_end {
                    StackEnd::MappingEnd => CopyEnd::MappingEnd,
                    StackEnd::Cap => CopyEnd::Cap,
                    StackEnd::Fault => CopyEnd::Fault,
                    // The stack pointer is in no mapping: nothing lies past the (empty) copy.
                    StackEnd::NoVma => CopyEnd::MappingEnd,
                },
            },
            fp_chain: &s.user,
        }),
        // Frame-pointer mode, or a task without user context.
        None => UserPart::FramePointers(&s.user),
    }
}

fn push_symbols<W: Write>(
    resolved: Vec<Resolved>,
    writer: &mut Writer<W>,
) -> Result<(), RecordError> {
    for r in resolved {
        let function = writer.intern(&r.function);
        let loc = source_loc(&r.loc, writer);
        let inlined = r
            .inlined
            .iter()
            .map(|(name, l)| InlinedFn {
                function: writer.intern(name),
                loc: source_loc(l, writer),
            })
            .collect();
        writer.push(Record::Symbol(Symbol {
            frame: r.frame,
            function,
            loc,
            inlined,
        }))?;
    }
    Ok(())
}

fn source_loc(l: &Loc, sink: &mut impl Sink) -> SourceLoc {
    SourceLoc {
        file: l.file.as_deref().map(|f| sink.intern(f)),
        line: l.line,
    }
}

/// A thread name as the kernel keeps it: up to 16 bytes, NUL padded, not always UTF-8.
pub fn comm_str(comm: &[u8; 16]) -> String {
    let end = comm.iter().position(|&b| b == 0).unwrap_or(comm.len());
    String::from_utf8_lossy(&comm[..end]).into_owned()
}

/// True while `pid` exists (zombies included, which are about to be reaped).
pub fn process_exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks for existence and permission.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}
