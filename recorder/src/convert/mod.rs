//! The recording core: one [`Converter`] that turns [`Event`]s into a capture, one
//! `handle_*` method per kind of event, with the tables events are normalised against
//! (processes, mappings, modules, frames and stacks), the symbol worker and the writer.
//! It knows nothing of where events come from (no BPF) nor of the machine beyond what
//! its [`Host`] answers (no `/proc`): a source and a host are all a new way in needs.

pub(crate) mod departures;
pub(crate) mod frame_table;
pub(crate) mod mapping_table;
pub(crate) mod module_table;
pub(crate) mod normalizer;
pub(crate) mod process_table;
pub(crate) mod python;
mod symbols;
pub(crate) mod user_stack;

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use hotspot_format::{
    FeatureOff, FrameId, Lost, LostMappings, LostOffCpu, OffCpu, OffCpuSample, ProcessExit, Record,
    Sample, ThreadState, UnwindMethod, Unwinding, Writer, feature,
};
use hotspot_unwind::{CopyEnd, Regs, StackCopy};

use crate::error::RecorderError;
use crate::event::{
    BlockedSample, Event, Mapping, OpenThreadTimes, StackEnd, StackSample, comm_str,
};
use crate::host::Host;
use crate::sink::VecSink;
use crate::symbol_worker::SymbolWorker;
use departures::Departures;
use hotspot_format::ThreadTimes;
use mapping_table::MappingTable;
use normalizer::{Normalizer, Sampled, UserPart};
use process_table::ProcessTable;
use python::Pythons;
use user_stack::UserSample;

/// What the core is told besides its events.
#[derive(Debug, Clone)]
pub struct ConvertConfig {
    /// The processes recorded from the start (their forks join them).
    pub targets: Vec<u32>,
    /// Every process is recorded.
    pub all_processes: bool,
    /// Where separate debug files are looked up by build-id.
    pub debug_dirs: Vec<PathBuf>,
    /// Bytes of user stack copied per sample, unwound here with call-frame information;
    /// 0: user stacks are frame-pointer walks.
    pub stack_cap: u32,
    /// `--off-cpu`: the ns one off-CPU period stands for (the capture's `OffCpu`
    /// definition); `None`: the capture has no off-CPU data.
    pub off_cpu_period_ns: Option<u64>,
    /// What the source could not do on this machine and the recording goes without (the
    /// capture's `FeatureOff` definitions).
    pub features_off: Vec<FeatureOff>,
}

impl Default for ConvertConfig {
    fn default() -> Self {
        ConvertConfig {
            targets: Vec::new(),
            all_processes: false,
            debug_dirs: vec![PathBuf::from("/usr/lib/debug")],
            stack_cap: 0,
            off_cpu_period_ns: None,
            features_off: Vec::new(),
        }
    }
}

/// Why the source walks no Python frames, if the recording goes without them.
fn python_walk_off(features_off: &[FeatureOff]) -> Option<String> {
    features_off
        .iter()
        .find(|f| f.feature == feature::PYTHON_FRAMES)
        .map(|f| format!("python-frames is off: {}", f.reason))
}

/// Running totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub samples: u64,
    /// Samples the source lost.
    pub lost: u64,
    /// Mapping events the source lost.
    pub lost_mappings: u64,
    /// `--off-cpu`: off-CPU samples written, and off-CPU records the source lost.
    pub off_cpu_samples: u64,
    pub lost_off_cpu: u64,
}

/// What the finished capture holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub counts: Counts,
    pub processes: usize,
    pub threads: usize,
    pub stacks: usize,
    pub frames: usize,
    /// Kernel frames needed names and the host had none (no privilege).
    pub kernel_names_missing: bool,
    /// Bytes written.
    pub bytes: u64,
    /// The most the recorder held per process at once (each count's own peak).
    pub held_peak: Held,
}

/// How often (in event time, at most) the files of exited processes are let go of.
const FILES_RELEASE_NS: u64 = 5_000_000_000;

/// What the recorder holds per process now (see [`Converter::held`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Held {
    pub processes: usize,
    pub threads: usize,
    pub spaces: usize,
    pub departed: usize,
    pub modules: usize,
}

impl Held {
    /// Each count's larger value.
    fn max(self, o: Held) -> Held {
        Held {
            processes: self.processes.max(o.processes),
            threads: self.threads.max(o.threads),
            spaces: self.spaces.max(o.spaces),
            departed: self.departed.max(o.departed),
            modules: self.modules.max(o.modules),
        }
    }
}

/// The core before its capture exists: what takes time to set up (the symbol worker),
/// and what is learnt of the targets before the first event (see [`Core::track`]).
#[derive(Debug)]
pub struct Core {
    cfg: ConvertConfig,
    host: Box<dyn Host>,
    procs: ProcessTable,
    maps: MappingTable,
    norm: Normalizer,
    worker: SymbolWorker,
    /// Records made before the writer existed.
    pending: Vec<Record>,
    /// Commands the recorder started, and when it saw their exec done (see
    /// `Traced::before_exec`).
    before_exec: HashMap<u32, u64>,
    /// The Python processes among the traced ones.
    pythons: Pythons,
}

impl Core {
    pub fn new(cfg: ConvertConfig, mut host: Box<dyn Host>) -> Result<Self, RecorderError> {
        let vdso: Option<Arc<[u8]>> = host.vdso_image().map(Arc::from);
        let mut norm = Normalizer::default();
        // How stacks are unwound comes first in the capture, after the session header.
        let mut defs = VecSink::default();
        let unwinding = if cfg.stack_cap > 0 {
            let markers = norm.enable_cfi(cfg.debug_dirs.clone(), vdso.clone(), &mut defs)?;
            Unwinding {
                method: UnwindMethod::Cfi,
                stack_cap: cfg.stack_cap,
                markers: Some(markers),
            }
        } else {
            Unwinding::default()
        };
        let mut pending = preamble(&cfg, unwinding);
        pending.append(&mut defs.records);
        let worker = SymbolWorker::start(cfg.debug_dirs.clone(), vdso).map_err(|source| {
            RecorderError::Io {
                path: "symbol worker thread".into(),
                source,
            }
        })?;
        let pythons = Pythons::new(python_walk_off(&cfg.features_off));
        Ok(Core {
            cfg,
            host,
            procs: ProcessTable::default(),
            maps: MappingTable::default(),
            norm,
            worker,
            pending,
            before_exec: HashMap::new(),
            pythons,
        })
    }

    /// Asks the host about a target now (call right after a command's exec): a command
    /// that exits quickly is gone before its first samples are drained.
    pub fn track(&mut self, pid: u32) {
        let now = self.host.now_ns();
        let (_, new) = self.procs.ensure(pid, "", now, &mut *self.host);
        if let Some(p) = new {
            self.pending.push(Record::Process(p));
        }
        self.maps.snapshot(pid, &mut *self.host);
        // A Python command is registered before its first samples: a short one may be
        // gone before its first samples are drained.
        let mut sink = VecSink::default();
        let start = self.procs.start_ns(pid);
        // A VecSink cannot fail.
        let _ = self.pythons.consider(
            pid,
            start,
            self.maps.maps_of(pid),
            &mut *self.host,
            &mut sink,
        );
        self.pending.append(&mut sink.records);
    }

    /// [`Core::track`] for a command the recorder started, called once its exec is done:
    /// the command is a target from before its exec (so that its first instruction is
    /// sampled), and what is sampled of it until the exec renames it is the recorder's own
    /// fork, not the command (see `Traced::before_exec`).
    pub fn track_command(&mut self, pid: u32) {
        self.track(pid);
        let now = self.host.now_ns();
        self.before_exec.insert(pid, now);
    }

    /// The host's clock.
    pub fn now_ns(&self) -> u64 {
        self.host.now_ns()
    }
}

/// What a capture begins with, after the session header: how stacks are unwound, what
/// off-CPU samples stand for, what the source went without.
fn preamble(cfg: &ConvertConfig, unwinding: Unwinding) -> Vec<Record> {
    let mut out = vec![Record::Unwinding(unwinding)];
    if let Some(period_ns) = cfg.off_cpu_period_ns {
        out.push(Record::OffCpu(OffCpu { period_ns }));
    }
    out.extend(cfg.features_off.iter().cloned().map(Record::FeatureOff));
    out
}

/// The processes whose events count.
#[derive(Debug)]
struct Traced {
    /// The targets and the children they forked, while they live (checked once a
    /// flush too, in case an exit event was lost): recording ends when none is left.
    live: HashSet<u32>,
    /// The same until their exit event is handled: events still queued from a process
    /// that has just died count.
    known: HashSet<u32>,
    /// Every process is traced.
    all: bool,
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
        self.all || self.known.contains(&pid)
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

/// What a sample stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SampleClass {
    /// A tick on the CPU: one period.
    OnCpu,
    /// Blocked time that crossed `periods` periods, in `state`.
    OffCpu { periods: u32, state: ThreadState },
}

/// One capture in the making: events come in through the `handle_*` methods, in time
/// order; [`Converter::finish`] writes the end.
#[derive(Debug)]
pub struct Converter<W: Write> {
    core: Core,
    writer: Writer<W>,
    traced: Traced,
    /// Scratch for one sample's frames, and for them with Python frames merged in.
    frames: Vec<FrameId>,
    merged: Vec<FrameId>,
    /// This capture's counts.
    counts: Counts,
    /// The source's cumulative counts as last told, to write only what is new (a flight
    /// recorder's segments each hold their own).
    lost_seen: Vec<u64>,
    lost_mappings_seen: u64,
    lost_off_cpu_seen: u64,
    /// `--off-cpu` in a flight recorder: each live thread's times as written at the end
    /// of the last segment, so the next holds only what came after, and whether it was
    /// carried over a segment's end where the source did not list the thread.
    thread_baselines: HashMap<u32, (ThreadTimes, bool)>,
    /// When the source stopped accounting thread times, once it has.
    accounting_end: Option<u64>,
    /// Threads whose times were written accounted to the end (exits written after
    /// accounting stopped): the live threads at the end skip them.
    closed_at_end: HashSet<u32>,
    /// Exited processes, forgotten a grace period after their exit: what the recorder
    /// holds stays bounded by the processes alive (and those that just left), however
    /// many come and go.
    departures: Departures,
    /// Scratch for the pids due to be forgotten.
    due: Vec<u32>,
    /// The peak of [`Converter::held`], each count on its own.
    held_peak: Held,
    /// Event time of the last release of files no process maps any more.
    files_released_ns: u64,
}

impl<W: Write> Converter<W> {
    /// Starts writing: the records made before the writer existed go first.
    pub fn new(core: Core, mut writer: Writer<W>) -> Result<Self, RecorderError> {
        let mut core = core;
        for r in core.pending.drain(..) {
            writer.push(r)?;
        }
        let traced = Traced {
            live: core.cfg.targets.iter().copied().collect(),
            known: core.cfg.targets.iter().copied().collect(),
            all: core.cfg.all_processes,
            before_exec: std::mem::take(&mut core.before_exec),
        };
        Ok(Converter {
            core,
            writer,
            traced,
            frames: Vec::new(),
            merged: Vec::new(),
            counts: Counts::default(),
            lost_seen: Vec::new(),
            lost_mappings_seen: 0,
            lost_off_cpu_seen: 0,
            thread_baselines: HashMap::new(),
            accounting_end: None,
            closed_at_end: HashSet::new(),
            departures: Departures::default(),
            due: Vec::new(),
            held_peak: Held::default(),
            files_released_ns: 0,
        })
    }

    /// Handles one event.
    pub fn handle(&mut self, ev: Event) -> Result<(), RecorderError> {
        self.forget_departed(ev.time_ns());
        let r = self.dispatch(ev);
        self.held_peak = self.held_peak.max(self.held());
        r
    }

    fn dispatch(&mut self, ev: Event) -> Result<(), RecorderError> {
        match ev {
            Event::Sample(s) => self.handle_sample(&s),
            Event::OffCpu(o) => self.handle_off_cpu(&o),
            Event::ThreadTimes { tid, times } => self.handle_thread_times(tid, &times),
            Event::Fork {
                time_ns,
                parent,
                child,
            } => {
                self.handle_fork(time_ns, parent, child);
                Ok(())
            }
            Event::Exec { time_ns, pid, comm } => self.handle_exec(time_ns, pid, &comm_str(&comm)),
            Event::Exit { time_ns, pid } => self.handle_exit(time_ns, pid),
            Event::Mmap {
                time_ns,
                pid,
                mapping,
            } => {
                self.handle_mmap(time_ns, pid, mapping);
                Ok(())
            }
            Event::NewImage { time_ns, pid } => {
                self.handle_new_image(time_ns, pid);
                Ok(())
            }
        }
    }

    /// A tick's sample: its process and thread if new, its stack, the sample itself.
    pub fn handle_sample(&mut self, s: &StackSample) -> Result<(), RecorderError> {
        self.sample(s, SampleClass::OnCpu)
    }

    /// An off-CPU sample: the same, minus the sampler's own frames at the kernel leaf.
    pub fn handle_off_cpu(&mut self, o: &BlockedSample) -> Result<(), RecorderError> {
        self.sample(
            &o.sample,
            SampleClass::OffCpu {
                periods: o.periods,
                state: o.state,
            },
        )
    }

    /// One sample of either class: the stack is normalised the same way.
    fn sample(&mut self, s: &StackSample, class: SampleClass) -> Result<(), RecorderError> {
        if self.traced.before_exec(s.pid, s.time_ns) {
            return Ok(());
        }
        let Core {
            host,
            procs,
            maps,
            norm,
            pythons,
            ..
        } = &mut self.core;
        let host = &mut **host;
        let writer = &mut self.writer;
        let comm = comm_str(&s.comm);
        let (_, new_proc) = procs.ensure(s.pid, &comm, s.time_ns, host);
        if let Some(p) = new_proc {
            let start = p.start_ns;
            writer.push(Record::Process(p))?;
            maps.snapshot(s.pid, host);
            pythons.consider(s.pid, start, maps.maps_of(s.pid), host, writer)?;
        } else if let Some(p) = procs.rewrite(s.pid) {
            // Known from an earlier segment: written again, not asked about again.
            writer.push(Record::Process(p))?;
            pythons.rewrite(s.pid, writer)?;
        }
        if let Some(t) = procs.thread_seen(s.tid, s.pid, &comm, s.time_ns) {
            writer.push(Record::Thread(t))?;
        }
        self.frames.clear();
        let kernel = match class {
            SampleClass::OnCpu => &s.kernel[..],
            SampleClass::OffCpu { .. } => &s.kernel[norm.tracing_frames(&s.kernel, host)..],
        };
        let sampled = Sampled {
            pid: s.pid,
            time_ns: s.time_ns,
            kernel,
            user: user_part(s),
            eval_loop: if s.python.is_some() {
                pythons.eval_loop(s.pid)
            } else {
                &[]
            },
        };
        norm.stack(sampled, maps, host, writer, &mut self.frames)?;
        let stack = match &s.python {
            Some(py) => {
                let eval = norm.eval_positions().to_vec();
                pythons.merge(
                    s.pid,
                    py,
                    &self.frames,
                    &eval,
                    host,
                    norm,
                    writer,
                    &mut self.merged,
                )?;
                norm.stack_id(&self.merged, writer)?
            }
            None => norm.stack_id(&self.frames, writer)?,
        };
        let sample = Sample {
            time_ns: s.time_ns,
            tid: s.tid,
            cpu: s.cpu,
            stack,
        };
        match class {
            SampleClass::OnCpu => {
                writer.push_sample(sample)?;
                self.counts.samples += 1;
            }
            SampleClass::OffCpu { periods, state } => {
                writer.push_off_cpu_sample(OffCpuSample {
                    sample,
                    periods,
                    state,
                })?;
                self.counts.off_cpu_samples += 1;
            }
        }
        Ok(())
    }

    /// A thread exited: its exact times. One the source wrote after it stopped
    /// accounting is cut back to that end (and is no exit within the recording).
    pub fn handle_thread_times(
        &mut self,
        tid: u32,
        times: &OpenThreadTimes,
    ) -> Result<(), RecorderError> {
        let end = self
            .accounting_end
            .map_or(times.last_ns, |end| end.min(times.last_ns));
        let mut t = times.closed_at(tid, end, true);
        if let Some((before, _)) = self.thread_baselines.remove(&tid) {
            t = crate::event::times_since(&t, &before);
        }
        if !t.exited {
            self.closed_at_end.insert(tid);
        }
        self.writer.push(Record::ThreadTimes(t))?;
        Ok(())
    }

    /// A flight recorder's segment ends at `end_ns`: the live threads' times so far
    /// (`live`, read from the source after `end_ns`, while it keeps accounting them) are
    /// written to it, each from where the last segment left it.
    pub fn handle_segment_threads(
        &mut self,
        live: Vec<(u32, OpenThreadTimes)>,
        end_ns: u64,
    ) -> Result<(), RecorderError> {
        let mut baselines = HashMap::with_capacity(live.len());
        for (tid, times) in live {
            // Each is cut where its state is known: from its last switch to when it was
            // read it was in the state read, and `end_ns` came before the read. One that
            // switched since `end_ns` is cut at that switch (microseconds later).
            let t = times.closed_at(tid, end_ns.max(times.last_ns), false);
            let written = match self.thread_baselines.get(&tid) {
                Some((before, _)) => crate::event::times_since(&t, before),
                None => t,
            };
            self.writer.push(Record::ThreadTimes(written))?;
            baselines.insert(tid, (t, false));
        }
        // A thread the source did not list exited before it was read, its exit on its way
        // behind this segment's end (or its value did not decode: read while sched_switch
        // wrote it): its exit, or the next segment's end, goes on from where it was left.
        // Once only, so a thread whose exit was lost is not kept for ever.
        for (tid, (before, carried)) in self.thread_baselines.drain() {
            if !carried && !baselines.contains_key(&tid) {
                baselines.insert(tid, (before, true));
            }
        }
        self.thread_baselines = baselines;
        Ok(())
    }

    /// The source stopped accounting thread times at `end_ns` (`None`: it never did).
    pub fn handle_accounting_end(&mut self, end_ns: Option<u64>) {
        self.accounting_end = end_ns;
    }

    /// The threads alive at the end, accounted to it.
    pub fn handle_live_threads(
        &mut self,
        live: Vec<(u32, OpenThreadTimes)>,
    ) -> Result<(), RecorderError> {
        let end = self
            .accounting_end
            .unwrap_or_else(|| self.core.host.now_ns());
        for (tid, times) in live {
            if self.closed_at_end.contains(&tid) {
                continue;
            }
            let mut t = times.closed_at(tid, end, false);
            if let Some((before, _)) = self.thread_baselines.remove(&tid) {
                t = crate::event::times_since(&t, &before);
            }
            self.writer.push(Record::ThreadTimes(t))?;
        }
        Ok(())
    }

    /// A traced process forked: the child is traced and inherits its mappings.
    pub fn handle_fork(&mut self, time_ns: u64, parent: u32, child: u32) {
        // A pid reused while its last process waits to be forgotten: that one's events
        // all came before this fork (it was reaped before its pid could be given again).
        if self.departures.reused(child) {
            self.forget(child);
        }
        self.traced.live.insert(child);
        self.traced.known.insert(child);
        self.core
            .maps
            .fork(parent, child, time_ns, &mut *self.core.host);
    }

    /// A process exec'd: its new name.
    pub fn handle_exec(&mut self, time_ns: u64, pid: u32, comm: &str) -> Result<(), RecorderError> {
        self.traced.exec(pid);
        let core = &mut self.core;
        if let Some(rec) = core.procs.exec(pid, comm, time_ns, &mut *core.host) {
            self.writer.push(Record::Process(rec))?;
            // The new image is looked at when it is known (the exec's own new-image
            // event and the mappings that follow).
            let start = core.procs.start_ns(pid);
            core.pythons.consider(
                pid,
                start,
                core.maps.maps_of(pid),
                &mut *core.host,
                &mut self.writer,
            )?;
        }
        Ok(())
    }

    pub fn handle_exit(&mut self, time_ns: u64, pid: u32) -> Result<(), RecorderError> {
        self.core.pythons.forget(pid, &mut self.writer)?;
        // Its entry, threads and mappings stay a little longer, for its last samples.
        self.departures.exited(pid, time_ns);
        self.traced.live.remove(&pid);
        self.traced.known.remove(&pid);
        self.writer
            .push(Record::ProcessExit(ProcessExit { pid, time_ns }))?;
        Ok(())
    }

    /// Forgets the processes that exited a grace period before `now_ns`.
    fn forget_departed(&mut self, now_ns: u64) {
        let mut due = std::mem::take(&mut self.due);
        self.departures.due(now_ns, &mut due);
        let forgot = !due.is_empty();
        for pid in due.drain(..) {
            self.forget(pid);
        }
        self.due = due;
        // Files are let go of in a sweep over them all, so not at every exit.
        if forgot && now_ns.saturating_sub(self.files_released_ns) >= FILES_RELEASE_NS {
            self.files_released_ns = now_ns;
            self.core.norm.release_unmapped_files();
        }
    }

    /// Drops what the recorder holds of exited process `pid`: its entry and threads, its
    /// mappings, its own modules.
    fn forget(&mut self, pid: u32) {
        let core = &mut self.core;
        core.procs.forget(pid);
        core.maps.exit(pid);
        core.norm.forget_process(pid);
    }

    /// What the recorder holds per process, to see that it stays bounded: processes,
    /// threads, mapping spaces, processes waiting to be forgotten.
    pub fn held(&self) -> Held {
        Held {
            processes: self.core.procs.process_count(),
            threads: self.core.procs.thread_count(),
            spaces: self.core.maps.space_count(),
            departed: self.departures.len(),
            modules: self.core.norm.module_count(),
        }
    }

    /// Mapping events come for every process on the machine: only traced ones count.
    pub fn handle_mmap(&mut self, time_ns: u64, pid: u32, mapping: Mapping) {
        if self.traced.has(pid) {
            let core = &mut self.core;
            let matters = core.pythons.maps_matter(pid, &mapping);
            core.maps.mmap(pid, mapping, time_ns, &mut *core.host);
            if matters {
                let start = core.procs.start_ns(pid);
                let maps = core.maps.maps_of(pid);
                // A failed write is the writer's to report at its next record.
                let _ = core
                    .pythons
                    .consider(pid, start, maps, &mut *core.host, &mut self.writer);
            }
        }
    }

    /// A traced process replaced its image (exec): its old mappings are gone.
    pub fn handle_new_image(&mut self, time_ns: u64, pid: u32) {
        self.traced.exec(pid);
        if self.traced.has(pid) {
            self.core.maps.exec(pid, time_ns);
            // The old image's interpreter, if any, is gone.
            let _ = self.core.pythons.exec(pid, time_ns, &mut self.writer);
        }
    }

    /// The source's count of lost samples per CPU, cumulative: what is new is written.
    pub fn handle_lost_samples(&mut self, per_cpu: &[u64]) -> Result<(), RecorderError> {
        let now = self.core.host.now_ns();
        let seen = &mut self.lost_seen;
        seen.resize(per_cpu.len().max(seen.len()), 0);
        for (cpu, (&now_count, seen)) in per_cpu.iter().zip(seen.iter_mut()).enumerate() {
            let delta = now_count.saturating_sub(*seen);
            if delta > 0 {
                *seen = now_count;
                self.counts.lost += delta;
                self.writer.push(Record::Lost(Lost {
                    time_ns: now,
                    cpu: cpu as u32,
                    count: delta,
                }))?;
            }
        }
        Ok(())
    }

    /// The source's count of lost off-CPU records, cumulative.
    pub fn handle_lost_off_cpu(&mut self, total: u64) -> Result<(), RecorderError> {
        if total > self.lost_off_cpu_seen {
            let count = total - self.lost_off_cpu_seen;
            self.writer.push(Record::LostOffCpu(LostOffCpu {
                time_ns: self.core.host.now_ns(),
                count,
            }))?;
            self.lost_off_cpu_seen = total;
            self.counts.lost_off_cpu += count;
        }
        Ok(())
    }

    /// The source's count of lost mapping events, cumulative. From the first loss on,
    /// a lookup that misses may ask the host, which may still explain it.
    pub fn handle_lost_mappings(&mut self, total: u64) -> Result<(), RecorderError> {
        if total > self.lost_mappings_seen {
            let count = total - self.lost_mappings_seen;
            self.writer.push(Record::LostMappings(LostMappings {
                time_ns: self.core.host.now_ns(),
                count,
            }))?;
            self.lost_mappings_seen = total;
            self.counts.lost_mappings += count;
            self.core.maps.events_were_lost();
        }
        Ok(())
    }

    /// What the source is to walk as Python from now on (`Some`: the process's
    /// `hs_python_proc`) or no longer (`None`), since the last call.
    pub fn take_python_registrations(&mut self) -> Vec<(u32, Option<[u8; 48]>)> {
        self.core.pythons.take_registrations()
    }

    /// Decides the processes that map a file named like Python and were not decided yet,
    /// from the host's mappings now (see `Pythons::recheck`); true while some still wait.
    pub fn recheck_pythons(&mut self) -> Result<bool, RecorderError> {
        let core = &mut self.core;
        if !core.pythons.undecided() {
            return Ok(false);
        }
        let procs = &core.procs;
        core.pythons
            .recheck(|pid| procs.start_ns(pid), &mut *core.host, &mut self.writer)?;
        Ok(core.pythons.undecided())
    }

    /// Whether a Python process started being walked in the last few seconds: while one
    /// did, samples are read often (a script of 0.2 s lost every frame's name when they
    /// waited for the next flush, a second later, after it exited).
    pub fn python_starting(&mut self) -> bool {
        const RECENT_NS: u64 = 5_000_000_000;
        let now = self.core.host.now_ns();
        self.core.pythons.walked_since(now, RECENT_NS)
    }

    /// Whether [`Converter::take_python_registrations`] has something.
    pub fn python_registrations_pending(&self) -> bool {
        self.core.pythons.registrations_pending()
    }

    /// Sends new frames to the symboliser and writes the names that are ready.
    pub fn exchange_symbols(&mut self) -> Result<(), RecorderError> {
        let batch = self.core.norm.take_symbol_requests();
        self.core.worker.submit(batch);
        symbols::push(self.core.worker.ready(), &mut self.writer)
    }

    /// Ends the current block: what was written so far is on disk.
    /// Writes the marks dropped for this recording since the last look (`hotspot mark`,
    /// through the host).
    pub fn take_marks(&mut self) -> Result<(), RecorderError> {
        for m in self.core.host.take_marks() {
            self.writer.push(Record::Mark(m))?;
        }
        Ok(())
    }

    pub fn flush_block(&mut self) -> Result<(), RecorderError> {
        self.writer.flush_block()?;
        Ok(())
    }

    /// Drops targets the host says are gone (in case their exit event was lost).
    pub fn forget_exited_targets(&mut self) {
        if !self.traced.all {
            let host = &mut self.core.host;
            self.traced.live.retain(|&pid| host.alive(pid));
        }
    }

    /// Every target (and every child) has exited.
    pub fn targets_gone(&self) -> bool {
        !self.traced.all && self.traced.live.is_empty()
    }

    /// The host's clock.
    pub fn now_ns(&self) -> u64 {
        self.core.host.now_ns()
    }

    pub fn counts(&self) -> Counts {
        self.counts
    }

    pub fn bytes_written(&self) -> u64 {
        self.writer.bytes_written()
    }

    /// Ends the current capture and goes on in `next` (a flight recorder's next
    /// segment, its session header written): the names of the frames sampled so far
    /// and each interpreter's counts go to the ending capture, which is finished and
    /// returned with what it holds. The next one defines again, as they are met, every
    /// process, thread, module, frame and stack its samples need, so it opens alone;
    /// what takes time to learn (the processes and their mappings, the files read, the
    /// interpreters decided, the symboliser) carries over.
    pub fn next_capture(&mut self, next: Writer<W>) -> Result<(Totals, W), RecorderError> {
        self.exchange_symbols()?;
        symbols::push(self.core.worker.drain(), &mut self.writer)?;
        self.core.pythons.next_capture(&mut self.writer)?;
        let totals = self.totals();
        let ending = std::mem::replace(&mut self.writer, next);
        let host = &self.core.host;
        let out = ending.finish(host.wall_ns(), host.now_ns(), self.counts.lost)?;
        let core = &mut self.core;
        core.worker.next_capture();
        core.procs.next_capture();
        core.maps.forget_modules();
        // In the order a first capture has them: the `Unwinding` record first, then the
        // marker module it names.
        let mut defs = VecSink::default();
        let markers = core.norm.next_capture(&mut defs)?;
        let unwinding = match markers {
            Some(m) => Unwinding {
                method: UnwindMethod::Cfi,
                stack_cap: core.cfg.stack_cap,
                markers: Some(m),
            },
            None => Unwinding::default(),
        };
        for r in preamble(&core.cfg, unwinding)
            .into_iter()
            .chain(defs.records)
        {
            self.writer.push(r)?;
        }
        self.counts = Counts::default();
        self.held_peak = Held::default();
        Ok((totals, out))
    }

    /// What the current capture holds so far.
    fn totals(&self) -> Totals {
        let core = &self.core;
        Totals {
            counts: self.counts,
            processes: core.procs.processes_seen(),
            threads: core.procs.threads_seen(),
            stacks: core.norm.stack_count(),
            frames: core.norm.frame_count(),
            kernel_names_missing: core.host.kernel_names_missing(),
            bytes: self.writer.bytes_written(),
            held_peak: self.held_peak,
        }
    }

    /// Waits for the last names, writes them and the capture's end.
    pub fn finish(self) -> Result<(Totals, W), RecorderError> {
        let Converter {
            core,
            mut writer,
            counts,
            held_peak,
            ..
        } = self;
        let Core {
            host,
            procs,
            norm,
            worker,
            mut pythons,
            ..
        } = core;
        pythons.finish(&mut writer)?;
        symbols::push(worker.finish(), &mut writer)?;
        let totals = Totals {
            counts,
            processes: procs.processes_seen(),
            threads: procs.threads_seen(),
            stacks: norm.stack_count(),
            frames: norm.frame_count(),
            kernel_names_missing: host.kernel_names_missing(),
            bytes: writer.bytes_written(),
            held_peak,
        };
        let out = writer.finish(host.wall_ns(), host.now_ns(), counts.lost)?;
        Ok((totals, out))
    }
}

/// The user side of a sample as the normaliser takes it.
fn user_part(s: &StackSample) -> UserPart<'_> {
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
