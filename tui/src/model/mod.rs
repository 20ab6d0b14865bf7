//! The views' model: the capture's samples counted into time buckets per thread and
//! stack ([`buckets`]), and each sampled stack interned once into the profile model
//! ([`hotspot_replay::model`]); the folds every view draws from ([`fold`](mod@fold),
//! [`timeline`](mod@timeline), [`stream`](mod@stream)) read both, so a refold is a pass
//! over buckets and tables, never over samples or names.
//!
//! Off-CPU samples (format 1.3) go into the same buckets under their own dense stack
//! indices, one per (capture stack, state), each remembering its [`Class`]: a fold
//! weighs a cell by its stack's class under the [`Metric`] asked for, so switching the
//! metric is a refold, never a re-read of the file.

pub mod buckets;
pub mod fold;
pub mod lanes;
pub mod slice;
pub mod stream;
pub mod timeline;

use std::collections::BTreeSet;

use hotspot_format::{Event, ModuleKind, ThreadState};
use rustc_hash::FxHashMap;

use buckets::Buckets;
use hotspot_replay::capture::{Capture, SampleSink};
use hotspot_replay::clock::Clock;
use hotspot_replay::metric::{self, Class, Metric};
use hotspot_replay::model::{Hide, Interned, Profile, Variants};
use hotspot_replay::names::FrameName;

pub use fold::{Fold, ensure_tree, fold, neighbours};
pub use lanes::{Lanes, lanes};
pub use slice::{slice, slices};
pub use stream::{Stream, stream};
pub use timeline::{Bucket, Timeline, timeline};

/// A thread the capture has samples of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadRow {
    pub tid: u32,
    pub pid: u32,
    pub name: String,
    /// CPU samples in the whole capture.
    pub samples: u64,
    /// Off-CPU periods in the whole capture, per state (in [`ThreadState::ALL`] order).
    pub off_cpu: [u64; 3],
}

/// Index of a state in [`ThreadState::ALL`] (and in [`ThreadRow::off_cpu`]).
pub fn state_index(state: ThreadState) -> usize {
    match state {
        ThreadState::Sleeping => 0,
        ThreadState::Uninterruptible => 1,
        ThreadState::Runnable => 2,
    }
}

/// A thread's time in the whole capture, in ns: on a CPU and off it per state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ThreadTotals {
    pub on_cpu_ns: u64,
    /// Off the CPU per state, in [`ThreadState::ALL`] order.
    pub off_cpu_ns: [u64; 3],
    /// From the kernel's exact accounting (`ThreadTimes`), not from samples.
    pub exact: bool,
}

impl ThreadTotals {
    /// On and off the CPU together.
    pub fn wall_ns(&self) -> u64 {
        self.off_cpu_ns
            .iter()
            .fold(self.on_cpu_ns, |a, &b| a.saturating_add(b))
    }
}

/// A thread is idle when it spent less than this percentage of its time on a CPU. An
/// idle pool thread that only waits sits near 0% (a wakeup to find its queue empty costs
/// microseconds); any thread doing work shows well above 1%; and 1% of a 10 s lifetime at
/// 99 Hz is about 10 samples, below which a thread's own CPU profile is noise anyway.
pub const IDLE_CPU_PERCENT: u64 = 1;

/// The capture, its samples in time order, and the name cache.
#[derive(Debug, Default)]
pub struct Data {
    /// Definitions; its `samples` are moved into [`Data::buckets`] as they arrive.
    pub capture: Capture,
    /// Every sample, counted per time bucket, thread and stack.
    pub buckets: Buckets,
    /// Dense thread index → thread, in order of first sample.
    pub threads: Vec<ThreadRow>,
    thread_index: FxHashMap<u32, u32>,
    /// Dense stack index → the capture's stack id, in order of first sample. The folds
    /// index stacks densely: a capture's ids are its writer's choice, and a crafted one
    /// (stack `u32::MAX`) must not size an array.
    pub stack_ids: Vec<u32>,
    stack_index: FxHashMap<u32, u32>,
    /// Dense stack index → what kind of time its samples stand for (off-CPU samples get
    /// their own dense index per (stack, state), so a cell never mixes classes).
    pub stack_class: Vec<Class>,
    /// (capture stack, state) → dense index, for off-CPU samples.
    off_index: FxHashMap<(u32, ThreadState), u32>,
    /// Off-CPU samples taken in.
    off_cpu_samples: u64,
    /// Bumped whenever samples or names change: the folds' cache key.
    pub generation: u64,
    symbols_seen: usize,
    /// (interpreter modules, interpreter images) when names were last cached: a frame's
    /// kind depends on them ([`hotspot_replay::kind::FrameKind::of`]).
    interpreters_seen: (usize, usize),
    /// The first sample's time, in arrival order (time 0 without a session header).
    first_sample: Option<u64>,
    /// Frames that `--symbols` has already been applied to.
    frames_resymbolized: usize,
    /// Functions, frames and stacks as tables (reset when names change).
    pub profile: Profile,
    /// Per dense stack index, the interned stack under each [`Hide`]; `None` until the
    /// capture defines it (live: it may come in a later block).
    interned: Vec<Option<Variants>>,
}

impl Data {
    /// A model over a capture read whole (its samples, CPU and off-CPU, are taken over).
    pub fn new(mut capture: Capture) -> Data {
        let samples = std::mem::take(&mut capture.samples);
        let off_cpu = std::mem::take(&mut capture.off_cpu_samples);
        let mut d = Data {
            capture,
            ..Data::default()
        };
        d.take_samples(samples);
        if !off_cpu.is_empty() {
            let mut sink = sink!(d);
            for s in &off_cpu {
                let class = Class::OffCpu(s.state);
                sink.sample(&s.sample, class, u64::from(s.periods));
            }
            sink.flush();
            d.names_arrived();
        }
        d.symbols_seen = d.capture.symbols.len();
        d.interpreters_seen = d.interpreters();
        d
    }

    /// Names frames that arrived since the last call again from `dirs` (`--symbols`);
    /// true if it ran, so names must be redrawn.
    pub fn resymbolize(&mut self, dirs: &[std::path::PathBuf]) -> bool {
        if dirs.is_empty() || self.capture.frames.len() == self.frames_resymbolized {
            return false;
        }
        self.frames_resymbolized = self.capture.frames.len();
        hotspot_replay::resymbolize::resymbolize(&mut self.capture, dirs);
        self.symbols_seen = self.capture.symbols.len();
        self.forget_names();
        self.generation += 1;
        true
    }

    /// Folds in what a reader or follower produced; true if anything visible changed.
    pub fn apply(&mut self, events: Vec<Event>) -> bool {
        if events.is_empty() {
            return false;
        }
        let mut sink = sink!(self);
        for e in events {
            // Each block's samples go straight into the buckets, and its decoded batch is
            // freed before the next block's: the capture never holds a poll's samples.
            self.capture.ingest(e, &mut sink);
        }
        sink.flush();
        self.names_arrived();
        if self.capture.symbols.len() != self.symbols_seen {
            // Names that arrived late (live mode) replace the `??` already cached.
            self.symbols_seen = self.capture.symbols.len();
            self.forget_names();
        }
        let interpreters = self.interpreters();
        if interpreters != self.interpreters_seen {
            // A live capture names a Python process's interpreter after its first native
            // stacks: their libpython frames are the interpreter's from now on.
            self.interpreters_seen = interpreters;
            self.forget_names();
        }
        self.generation += 1;
        true
    }

    /// Takes in samples directly (what [`Data::apply`] does with a block's samples).
    pub fn add_samples(&mut self, samples: Vec<hotspot_format::Sample>) {
        self.take_samples(samples);
        self.generation += 1;
    }

    fn take_samples(&mut self, samples: Vec<hotspot_format::Sample>) {
        let mut sink = sink!(self);
        for s in &samples {
            sink.sample(s, Class::OnCpu, hotspot_replay::capture::SAMPLE_WEIGHT);
        }
        sink.flush();
        self.names_arrived();
    }

    /// Thread names and pids may have arrived after the first sample.
    fn names_arrived(&mut self) {
        for t in &mut self.threads {
            if let Some(info) = self.capture.threads.get(&t.tid) {
                t.pid = info.pid;
                t.name = info.name().to_string();
            }
        }
    }

    /// Where time 0 is ([`hotspot_replay::clock`]): what every label of an instant counts from.
    pub fn clock(&self) -> Option<Clock> {
        Clock::of(self.capture.session.as_ref(), self.first_sample)
    }

    /// CPU samples taken in.
    pub fn samples(&self) -> u64 {
        self.buckets.samples() - self.off_cpu_samples
    }

    /// Off-CPU samples taken in.
    pub fn off_cpu_samples(&self) -> u64 {
        self.off_cpu_samples
    }

    /// Whether the capture holds Python frames (an interpreter's frames module, format
    /// 1.4): what the views' `P` is offered for.
    pub fn has_python(&self) -> bool {
        self.capture
            .interpreter_modules
            .values()
            .any(|m| m.role == hotspot_format::InterpreterRole::Frames)
    }

    fn interpreters(&self) -> (usize, usize) {
        (
            self.capture.interpreter_modules.len(),
            self.capture.interpreter_images.len(),
        )
    }

    /// Whether the capture recorded off-CPU time (its definition, or any off-CPU sample).
    pub fn has_off_cpu(&self) -> bool {
        self.capture.off_cpu.is_some() || self.off_cpu_samples > 0
    }

    /// Per dense stack, whether `metric` counts its samples; `None` when it counts every
    /// stack there is (a CPU-only capture under `cpu`, anything under `wall`), so the
    /// folds of a capture without off-CPU data pay nothing for the metric.
    pub fn counted(&self, metric: Metric) -> Option<Vec<bool>> {
        if metric == Metric::Wall || (metric == Metric::Cpu && self.off_index.is_empty()) {
            return None;
        }
        Some(self.stack_class.iter().map(|&c| metric.counts(c)).collect())
    }

    /// Thread `idx`'s (dense) time in the whole capture: exact from the kernel's
    /// thread-times records when the capture has them, else from its samples.
    pub fn thread_totals(&self, idx: usize) -> ThreadTotals {
        let Some(t) = self.threads.get(idx) else {
            return ThreadTotals::default();
        };
        if let Some(x) = self.capture.thread_times.get(&t.tid) {
            return ThreadTotals {
                on_cpu_ns: x.on_cpu_ns,
                off_cpu_ns: [x.sleeping_ns, x.uninterruptible_ns, x.runnable_ns],
                exact: true,
            };
        }
        // Time on and off the CPU side by side: the wall metric's period.
        let p = self.capture.period_ns(Metric::Wall);
        ThreadTotals {
            on_cpu_ns: metric::ns(t.samples, p),
            off_cpu_ns: t.off_cpu.map(|n| metric::ns(n, p)),
            exact: false,
        }
    }

    /// Whether thread `idx` (dense) is idle ([`IDLE_CPU_PERCENT`]): its CPU time against
    /// its wall time, or against the capture's span when the capture has no off-CPU data
    /// (its waits are unknown, so its lifetime is taken as the whole capture).
    pub fn is_idle(&self, idx: usize) -> bool {
        let t = self.thread_totals(idx);
        let wall = if self.has_off_cpu() {
            t.wall_ns()
        } else {
            self.span().map_or(0, |(a, b)| b - a)
        };
        u128::from(t.on_cpu_ns) * 100 < u128::from(wall) * u128::from(IDLE_CPU_PERCENT)
    }

    /// Thread ids of the idle threads.
    pub fn idle_threads(&self) -> BTreeSet<u32> {
        (0..self.threads.len())
            .filter(|&i| self.is_idle(i))
            .map(|i| self.threads[i].tid)
            .collect()
    }

    /// The capture's time span: from the session start (or first sample) to the end
    /// marker (or last sample), in monotonic ns.
    pub fn span(&self) -> Option<(u64, u64)> {
        let (first, last) = self.buckets.span()?;
        let start = self
            .capture
            .session
            .as_ref()
            .map(|s| s.start_mono_ns)
            .filter(|&s| s > 0 && s <= first && first - s < 3_600_000_000_000)
            .unwrap_or(first);
        let end = self
            .capture
            .end
            .map(|e| e.end_mono_ns)
            .filter(|&e| e >= last && e - last < 3_600_000_000_000)
            .unwrap_or(last);
        Some((start, end.max(start.saturating_add(1))))
    }

    /// User frames referenced by stacks that have no name yet.
    pub fn unnamed_frames(&self) -> usize {
        self.capture
            .frames
            .values()
            .filter(|f| {
                matches!(f.addr, hotspot_format::FrameAddr::FileOffset(_))
                    && !self.capture.symbols.contains_key(&f.id)
                    && self
                        .capture
                        .modules
                        .get(&f.module)
                        .is_some_and(|m| m.kind == ModuleKind::Elf)
            })
            .count()
    }

    /// Logical frames of a stack given by its dense index (root first), without the
    /// frames `hide` leaves out.
    pub fn stack_names(&mut self, stack: u32, hide: Hide) -> Option<Vec<FrameName>> {
        self.intern_stacks();
        let s = self.interned(stack, hide)?;
        let mut frames = Vec::new();
        self.profile.path(s, &mut frames);
        Some(frames.iter().map(|&f| self.profile.frame_name(f)).collect())
    }

    /// Names changed: the tables are built again on the next fold.
    fn forget_names(&mut self) {
        self.profile = Profile::default();
        self.interned.clear();
    }

    /// Interns every stack sampled so far that the capture defines.
    pub fn intern_stacks(&mut self) {
        let n = self.stack_ids.len();
        if self.interned.len() < n {
            self.interned.resize(n, None);
        }
        for ((slot, &real), &class) in self
            .interned
            .iter_mut()
            .zip(&self.stack_ids)
            .zip(&self.stack_class)
        {
            if slot.is_none() {
                *slot = self.profile.intern_class(&self.capture, real, class);
            }
        }
    }

    /// A stack given by its dense index as interned (see [`Data::intern_stacks`]); `None`
    /// if the capture does not define it.
    pub fn interned(&self, stack: u32, hide: Hide) -> Option<Interned> {
        self.interned
            .get(stack as usize)
            .copied()
            .flatten()
            .map(|v| v[hide.index()])
    }
}

/// The views' sample sink over a model's buckets and indices (borrowed field by field,
/// so the capture stays free for [`Capture::ingest`]).
macro_rules! sink {
    ($d:expr) => {
        Sink {
            buckets: &mut $d.buckets,
            threads: &mut $d.threads,
            thread_index: &mut $d.thread_index,
            stack_ids: &mut $d.stack_ids,
            stack_index: &mut $d.stack_index,
            stack_class: &mut $d.stack_class,
            off_index: &mut $d.off_index,
            off_cpu_samples: &mut $d.off_cpu_samples,
            first_sample: &mut $d.first_sample,
            pending: Vec::new(),
            last: None,
        }
    };
}
use sink;

/// The views' sample sink: each sample's thread and stack get dense indices (in order of
/// first sample), then samples go into the buckets in block-sized batches.
struct Sink<'a> {
    buckets: &'a mut Buckets,
    threads: &'a mut Vec<ThreadRow>,
    thread_index: &'a mut FxHashMap<u32, u32>,
    stack_ids: &'a mut Vec<u32>,
    stack_index: &'a mut FxHashMap<u32, u32>,
    stack_class: &'a mut Vec<Class>,
    off_index: &'a mut FxHashMap<(u32, ThreadState), u32>,
    off_cpu_samples: &'a mut u64,
    first_sample: &'a mut Option<u64>,
    pending: Vec<(u64, u32, u32, u64)>,
    /// The last sample's (tid, dense thread): samples come in runs of one thread.
    last: Option<(u32, u32)>,
}

/// Samples handed to the buckets at once: a capture taken in whole (not block by block,
/// as the viewer reads it) meets the buckets' cell budget as it goes, not once at the end.
const BATCH: usize = 1 << 16;

impl Sink<'_> {
    fn flush(&mut self) {
        if !self.pending.is_empty() {
            self.buckets.extend_weighted(self.pending.drain(..));
        }
    }
}

impl SampleSink for Sink<'_> {
    fn sample(&mut self, s: &hotspot_format::Sample, class: Class, weight: u64) {
        self.first_sample.get_or_insert(s.time_ns);
        let thread = match self.last {
            Some((tid, idx)) if tid == s.tid => idx,
            _ => {
                let threads = &mut *self.threads;
                let idx = *self.thread_index.entry(s.tid).or_insert_with(|| {
                    threads.push(ThreadRow {
                        tid: s.tid,
                        pid: 0,
                        name: String::new(),
                        samples: 0,
                        off_cpu: [0; 3],
                    });
                    (threads.len() - 1) as u32
                });
                self.last = Some((s.tid, idx));
                idx
            }
        };
        let row = &mut self.threads[thread as usize];
        let (stack_ids, stack_class) = (&mut *self.stack_ids, &mut *self.stack_class);
        let dense = || {
            stack_ids.push(s.stack);
            stack_class.push(class);
            (stack_ids.len() - 1) as u32
        };
        let stack = match class {
            Class::OnCpu => {
                row.samples += weight;
                *self.stack_index.entry(s.stack).or_insert_with(dense)
            }
            Class::OffCpu(state) => {
                row.off_cpu[state_index(state)] += weight;
                *self.off_cpu_samples += 1;
                *self.off_index.entry((s.stack, state)).or_insert_with(dense)
            }
        };
        self.pending.push((s.time_ns, thread, stack, weight));
        if self.pending.len() >= BATCH {
            self.flush();
        }
    }
}

/// What a fold selects: the samples in `[from_ns, to_ns]` of the threads not excluded,
/// weighed by `metric`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Query {
    pub from_ns: u64,
    pub to_ns: u64,
    /// Thread ids left out.
    pub excluded: BTreeSet<u32>,
    pub no_kernel: bool,
    /// The interpreter's own frames left out where Python frames stand for them.
    pub no_interpreter: bool,
    pub metric: Metric,
}

impl Query {
    /// The frames the fold leaves out.
    pub fn hide(&self) -> Hide {
        Hide {
            kernel: self.no_kernel,
            interpreter: self.no_interpreter,
        }
    }

    fn mask(&self, data: &Data) -> Vec<bool> {
        data.threads
            .iter()
            .map(|t| self.excluded.contains(&t.tid))
            .collect()
    }
}
