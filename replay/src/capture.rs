//! A capture read into memory: every definition, and what the reader had to skip. Reads
//! only the file; never /proc or the recorded binaries.
//!
//! The one way in: [`Capture::ingest`] splits each block, its definitions into the
//! capture's tables and its samples into a [`SampleSink`] the caller picks: a tally for
//! the reports ([`crate::tally::Tally`]), time buckets for the views (`hotspot-tui`'s
//! `model::Data`), or the plain vector [`Capture::samples`] that
//! [`Capture::open`] and [`Capture::from_bytes`] fill (tests, `info` of a capture in memory).

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use hotspot_format::definitions::Dedup;
use hotspot_format::{
    End, Event, FeatureOff, Frame, FrameId, InterpreterModule, InterpreterProcess, Mark, Module,
    ModuleId, OffCpu, OffCpuSample, Process, Reader, Record, Sample, Scrubbed, SessionHeader,
    StackId, StringId, Symbol, ThreadTimes, Unwinding,
};

use crate::error::ReplayError;
use crate::metric::{Class, Metric};

/// A region of the file the reader could not use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    pub offset: u64,
    pub bytes: u64,
    pub what: String,
}

/// A thread and the names it had.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ThreadInfo {
    pub tid: u32,
    pub pid: u32,
    /// (time, name) in the order seen; the first is the name at first sight.
    pub names: Vec<(u64, String)>,
}

impl ThreadInfo {
    /// The latest name.
    pub fn name(&self) -> &str {
        self.names.last().map_or("", |(_, n)| n.as_str())
    }
}

/// Where a capture's samples go as it is read.
pub trait SampleSink {
    /// Called before each block's samples, once that block's definitions are in the
    /// capture (the session header that places a time window may share a block with the
    /// first samples).
    fn defined(&mut self, _capture: &Capture) {}

    /// One sample, what kind of time it stands for, and how many periods of it: 1 for a
    /// CPU sample ([`SAMPLE_WEIGHT`]), the sample's `periods` for an off-CPU one. Which
    /// of them a sink counts is its [`crate::metric::Metric`]'s business.
    fn sample(&mut self, sample: &Sample, class: Class, periods: u64);
}

/// The plain vector: every CPU sample kept, in file order (off-CPU samples are not
/// kept: a `Vec<Sample>` has no room for their weight and state).
impl SampleSink for Vec<Sample> {
    fn sample(&mut self, sample: &Sample, class: Class, _periods: u64) {
        if class == Class::OnCpu {
            self.push(*sample);
        }
    }
}

/// Both kinds of samples kept, in file order: what [`Capture::apply`] fills.
struct Kept<'a> {
    samples: &'a mut Vec<Sample>,
    off_cpu: &'a mut Vec<OffCpuSample>,
}

impl SampleSink for Kept<'_> {
    fn sample(&mut self, sample: &Sample, class: Class, periods: u64) {
        match class {
            Class::OnCpu => self.samples.push(*sample),
            Class::OffCpu(state) => self.off_cpu.push(OffCpuSample {
                sample: *sample,
                periods: u32::try_from(periods).unwrap_or(u32::MAX),
                state,
            }),
        }
    }
}

/// What one CPU sample of the format weighs: one period.
pub const SAMPLE_WEIGHT: u64 = 1;

/// Everything a capture holds.
#[derive(Debug, Default)]
pub struct Capture {
    pub path: PathBuf,
    pub file_size: u64,
    pub version: (u16, u16),
    pub session: Option<SessionHeader>,
    /// How user stacks were unwound; `None` in captures unwound by frame pointers before
    /// the format said so (1.0).
    pub unwinding: Option<Unwinding>,
    /// Interned strings, shared: every name built from one (see [`crate::names`]) points
    /// at the same text rather than copying it.
    pub strings: HashMap<StringId, Arc<str>>,
    pub processes: BTreeMap<u32, Process>,
    pub exits: BTreeMap<u32, u64>,
    pub threads: BTreeMap<u32, ThreadInfo>,
    pub modules: BTreeMap<ModuleId, Module>,
    pub frames: HashMap<FrameId, Frame>,
    pub stacks: HashMap<StackId, Vec<FrameId>>,
    pub symbols: HashMap<FrameId, Symbol>,
    /// The samples, when read by [`Capture::open`], [`Capture::from_bytes`] or
    /// [`Capture::apply`]; empty when [`Capture::ingest`] sent them to another sink.
    pub samples: Vec<Sample>,
    /// The off-CPU samples (1.3), filled like `samples`.
    pub off_cpu_samples: Vec<OffCpuSample>,
    /// Present when the capture recorded off-CPU time (1.3).
    pub off_cpu: Option<OffCpu>,
    /// Exact on-CPU and blocked time per thread, measured in the kernel (1.3); a tid with
    /// several records (reused after an exit) has them summed.
    pub thread_times: BTreeMap<u32, ThreadTimes>,
    /// Off-CPU samples and thread-time records the kernel dropped (1.3).
    pub lost_off_cpu: u64,
    /// Modules whose frames are an interpreter's (1.5), by module.
    pub interpreter_modules: HashMap<ModuleId, InterpreterModule>,
    /// Interpreters the recorder recognised, by `(pid, start_ns)`: the last record of
    /// each (1.5).
    pub interpreters: BTreeMap<(u32, u64), InterpreterProcess>,
    /// The files walked interpreters run in (kind 22's `path` of each record whose status
    /// is Walked): what [`crate::kind::FrameKind`] calls the interpreter's own code.
    pub interpreter_images: BTreeSet<String>,
    /// Features the recording went without because the kernel could not load them
    /// (1.4), one per feature code, in the order written.
    pub features_off: Vec<FeatureOff>,
    pub lost: u64,
    /// Mapping events the kernel dropped while recording (1.2): frames of the processes
    /// they were about may be unnamed.
    pub lost_mappings: u64,
    /// Marks (1.5), in file order: what whoever recorded marked, and when.
    pub marks: Vec<Mark>,
    /// What was scrubbed from the capture before it was written (1.5); `None`: nothing.
    pub scrubbed: Option<Scrubbed>,
    pub end: Option<End>,
    pub blocks: u64,
    /// Corrupt regions skipped in the middle of the file.
    pub corrupt: Vec<Damage>,
    /// A torn tail (the writer was killed mid-block): offset and bytes dropped.
    pub truncated: Option<(u64, u64)>,
    /// Records of kinds this version does not know: kind → count.
    pub unknown_kinds: BTreeMap<u32, u64>,
    /// Records per kind (for `info`'s breakdown): kind → count.
    pub record_counts: BTreeMap<u32, u64>,
    /// Short names of the modules (file names of their paths), shared like `strings`.
    module_names: HashMap<ModuleId, Arc<str>>,
    /// The `Thread` definitions read, by their key (SPEC §7.2): the writer repeats a
    /// block's definitions in the next block, and a repeated version is no rename.
    thread_versions: Dedup,
    /// Reverse of `strings`, built on demand by [`Capture::intern`].
    string_ids: HashMap<String, StringId>,
    strings_indexed: usize,
}

impl Capture {
    /// Reads a finished (or cut) capture file.
    pub fn open(path: &Path) -> Result<Capture, ReplayError> {
        let (mut file, meta) = match crate::file::open_capture(path)? {
            crate::file::Source::File(f, m) => (f, m),
            crate::file::Source::History(data) => {
                let mut c = Capture::from_bytes(&data).map_err(|e| e.with_path(path))?;
                c.path = path.to_path_buf();
                return Ok(c);
            }
        };
        // A finished capture may be mapped; reading a copy is as good for small files
        // and immune to the file being truncated under the mapping.
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut file, &mut data).map_err(|source| ReplayError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let mut c = Capture::from_bytes(&data).map_err(|e| e.with_path(path))?;
        c.path = path.to_path_buf();
        c.file_size = meta.len();
        Ok(c)
    }

    /// Reads a capture from memory.
    pub fn from_bytes(data: &[u8]) -> Result<Capture, ReplayError> {
        let reader = Reader::new(data)?;
        let mut c = Capture {
            version: (reader.header().major, reader.header().minor),
            file_size: data.len() as u64,
            ..Capture::default()
        };
        for event in reader {
            c.apply(event);
        }
        Ok(c)
    }

    /// Folds one reader event in, its samples into [`Capture::samples`].
    pub fn apply(&mut self, event: Event) {
        let mut samples = std::mem::take(&mut self.samples);
        let mut off_cpu = std::mem::take(&mut self.off_cpu_samples);
        self.ingest(
            event,
            &mut Kept {
                samples: &mut samples,
                off_cpu: &mut off_cpu,
            },
        );
        self.samples = samples;
        self.off_cpu_samples = off_cpu;
    }

    /// The time one period stands for when `metric` weighs the samples, in ns: the one
    /// rule every view and output turns periods into time by (with [`crate::metric::ns`], which
    /// multiplies saturating). Under `cpu`, 1e9 / the sampling frequency, rounded (as the
    /// outputs have always given it, so a CPU report reads the same with or without
    /// off-CPU data); under `off-cpu` and `wall`, the period the capture's off-CPU record
    /// states (its off-CPU samples were cut by it, and a CPU sample stands for the same
    /// time, SPEC.md §6.1), else the CPU period; 0 when neither is known.
    pub fn period_ns(&self, metric: Metric) -> u64 {
        match (metric, self.off_cpu) {
            (Metric::OffCpu | Metric::Wall, Some(o)) => o.period_ns,
            _ => match &self.session {
                Some(s) if s.freq_hz > 0 => (1e9 / f64::from(s.freq_hz)).round() as u64,
                _ => 0,
            },
        }
    }

    /// Folds one reader event in: definitions into the tables, then the block's samples
    /// into `sink`, in file order.
    pub fn ingest(&mut self, event: Event, sink: &mut dyn SampleSink) {
        match event {
            Event::Block(block) => {
                self.blocks += 1;
                for (kind, n) in block.unknown_kinds {
                    *self.unknown_kinds.entry(kind).or_default() += u64::from(n);
                }
                let mut batches = Vec::new();
                for r in block.records {
                    match r {
                        Record::Samples(_) | Record::OffCpuSamples(_) => {
                            *self.record_counts.entry(r.kind()).or_default() += 1;
                            batches.push(r);
                        }
                        other => self.add(other),
                    }
                }
                if batches.is_empty() {
                    return;
                }
                sink.defined(self);
                for b in batches {
                    match b {
                        Record::Samples(b) => {
                            for s in &b.samples {
                                sink.sample(s, Class::OnCpu, SAMPLE_WEIGHT);
                            }
                        }
                        Record::OffCpuSamples(b) => {
                            for s in &b.samples {
                                let class = Class::OffCpu(s.state);
                                sink.sample(&s.sample, class, u64::from(s.periods));
                            }
                        }
                        _ => {}
                    }
                }
            }
            Event::Corrupt {
                offset,
                skipped_bytes,
                reason,
            } => self.corrupt.push(Damage {
                offset,
                bytes: skipped_bytes,
                what: reason.to_string(),
            }),
            Event::Truncated {
                offset,
                dropped_bytes,
            } => self.truncated = Some((offset, dropped_bytes)),
        }
    }

    /// Adds one record; a repeated definition keeps the first one seen.
    pub(crate) fn add(&mut self, r: Record) {
        *self.record_counts.entry(r.kind()).or_default() += 1;
        if matches!(r, Record::Thread(_)) && !self.thread_versions.keep(&r) {
            return;
        }
        match r {
            Record::Session(s) => {
                self.session.get_or_insert(s);
            }
            Record::String { id, text } => {
                self.strings
                    .entry(id)
                    .or_insert_with(|| capped(text).into());
            }
            Record::Process(p) => {
                // A later record for the same pid is an exec: it replaces the earlier one.
                self.processes.insert(p.pid, p);
            }
            Record::ProcessExit(e) => {
                self.exits.entry(e.pid).or_insert(e.time_ns);
            }
            Record::Thread(t) => {
                let info = self.threads.entry(t.tid).or_insert_with(|| ThreadInfo {
                    tid: t.tid,
                    pid: t.pid,
                    names: Vec::new(),
                });
                if info.names.last().map(|(_, n)| n) != Some(&t.name) {
                    info.names.push((t.time_ns, t.name));
                }
            }
            Record::Module(m) => {
                self.module_names
                    .entry(m.id)
                    .or_insert_with(|| capped(short_module(&m.path)).into());
                self.modules.entry(m.id).or_insert(m);
            }
            Record::Frame(f) => {
                self.frames.entry(f.id).or_insert(f);
            }
            Record::Stack(s) => {
                self.stacks.entry(s.id).or_insert(s.frames);
            }
            // Taken apart by `ingest`; a batch reaching here is kept with the others.
            Record::Samples(b) => self.samples.extend(b.samples),
            Record::Symbol(s) => {
                self.symbols.entry(s.frame).or_insert(s);
            }
            Record::Lost(l) => self.lost = self.lost.saturating_add(l.count),
            Record::Index(_) => {}
            Record::End(e) => self.end = Some(e),
            Record::Unwinding(u) => {
                self.unwinding.get_or_insert(u);
            }
            Record::LostMappings(l) => {
                self.lost_mappings = self.lost_mappings.saturating_add(l.count);
            }
            Record::OffCpuSamples(b) => self.off_cpu_samples.extend(b.samples),
            Record::OffCpu(o) => {
                self.off_cpu.get_or_insert(o);
            }
            Record::ThreadTimes(t) => match self.thread_times.entry(t.tid) {
                Entry::Vacant(v) => {
                    v.insert(t);
                }
                Entry::Occupied(mut o) => merge_times(o.get_mut(), &t),
            },
            Record::LostOffCpu(l) => self.lost_off_cpu = self.lost_off_cpu.saturating_add(l.count),
            // The interpreted frames themselves are ordinary frames of their module.
            Record::InterpreterModule(m) => {
                self.interpreter_modules.entry(m.module).or_insert(m);
            }
            Record::InterpreterProcess(p) => {
                let mut p = p;
                p.path = capped(std::mem::take(&mut p.path));
                p.version = capped(std::mem::take(&mut p.version));
                if let hotspot_format::InterpreterStatus::Unsupported { reason } = &mut p.status {
                    *reason = capped(std::mem::take(reason));
                }
                if p.status == hotspot_format::InterpreterStatus::Walked
                    && !self.interpreter_images.contains(&p.path)
                {
                    self.interpreter_images.insert(p.path.clone());
                }
                self.interpreters.insert((p.pid, p.start_ns), p);
            }
            Record::FeatureOff(f) => {
                if !self.features_off.iter().any(|o| o.feature == f.feature) {
                    self.features_off.push(f);
                }
            }
            Record::Mark(m) => self.marks.push(Mark {
                text: capped(m.text),
                ..m
            }),
            Record::Scrubbed(s) => {
                self.scrubbed.get_or_insert(s);
            }
        }
    }

    /// Sample time span (first, last) in monotonic ns.
    pub fn time_range(&self) -> Option<(u64, u64)> {
        let min = self.samples.iter().map(|s| s.time_ns).min()?;
        let max = self.samples.iter().map(|s| s.time_ns).max()?;
        Some((min, max))
    }

    /// The id of `text`, adding it as a new string if the capture has none equal
    /// (re-symbolisation brings names the capture never had).
    pub fn intern(&mut self, text: &str) -> StringId {
        if self.strings_indexed != self.strings.len() {
            // First one wins for duplicate texts, as for every other definition.
            let mut ids: Vec<(&StringId, &Arc<str>)> = self.strings.iter().collect();
            ids.sort_unstable();
            self.string_ids = HashMap::new();
            for (id, s) in ids {
                self.string_ids.entry(s.to_string()).or_insert(*id);
            }
            self.strings_indexed = self.strings.len();
        }
        if let Some(&id) = self.string_ids.get(text) {
            return id;
        }
        let id = self.strings.keys().max().map_or(0, |m| m.saturating_add(1));
        self.strings.insert(id, text.into());
        self.string_ids.insert(text.to_string(), id);
        self.strings_indexed += 1;
        id
    }

    pub fn string(&self, id: StringId) -> Option<&str> {
        self.strings.get(&id).map(|s| &**s)
    }

    /// The string `id`, shared.
    pub fn shared_string(&self, id: StringId) -> Option<Arc<str>> {
        self.strings.get(&id).cloned()
    }

    /// The short name of module `id` (the file name of its path), shared; `None` when the
    /// capture does not define it.
    pub fn module_name(&self, id: ModuleId) -> Option<Arc<str>> {
        match self.module_names.get(&id) {
            Some(n) => Some(n.clone()),
            // Defined by hand rather than read (tests, benches).
            None => self
                .modules
                .get(&id)
                .map(|m| capped(short_module(&m.path)).into()),
        }
    }
}

/// Adds a later thread-times record of the same tid (the tid was reused) to `sum`.
fn merge_times(sum: &mut ThreadTimes, t: &ThreadTimes) {
    sum.pid = t.pid;
    sum.first_ns = sum.first_ns.min(t.first_ns);
    sum.last_ns = sum.last_ns.max(t.last_ns);
    sum.on_cpu_ns = sum.on_cpu_ns.saturating_add(t.on_cpu_ns);
    sum.sleeping_ns = sum.sleeping_ns.saturating_add(t.sleeping_ns);
    sum.uninterruptible_ns = sum.uninterruptible_ns.saturating_add(t.uninterruptible_ns);
    sum.runnable_ns = sum.runnable_ns.saturating_add(t.runnable_ns);
    sum.exited = t.exited;
}

/// The short name of a module: the file name of its path
/// (`/usr/lib/x86_64-linux-gnu/libc.so.6` → `libc.so.6`). The capture keeps one per
/// module; names, reports and views print it.
pub fn short_module(path: &str) -> String {
    path.rsplit('/').next().unwrap_or(path).to_string()
}

/// Longest name kept from a capture, in bytes: what the views and reports show of a name
/// (the format allows 64 KiB). Every frame of every distinct stack is named, hashed and
/// printed, so this bounds what a small capture of deep stacks can expand to.
pub const MAX_NAME_BYTES: usize = 1024;

/// `text` cut to [`MAX_NAME_BYTES`] at a character boundary, ending in `…` when cut.
pub fn capped(mut text: String) -> String {
    if text.len() > MAX_NAME_BYTES {
        let mut at = MAX_NAME_BYTES - '…'.len_utf8();
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        text.truncate(at);
        text.push('…');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_rule_turns_periods_into_ns_under_each_metric() {
        // 1e9 / 7 = 142,857,142.86: the CPU period rounds, the off-CPU record (written by
        // the recorder as 1e9 / freq, truncated) is taken as it is.
        let mut c = Capture {
            session: Some(SessionHeader {
                freq_hz: 7,
                ..SessionHeader::default()
            }),
            ..Capture::default()
        };
        for m in Metric::ALL {
            assert_eq!(c.period_ns(m), 142_857_143, "{m} without off-CPU data");
        }
        c.off_cpu = Some(OffCpu {
            period_ns: 142_857_142,
        });
        assert_eq!(c.period_ns(Metric::Cpu), 142_857_143);
        assert_eq!(c.period_ns(Metric::OffCpu), 142_857_142);
        assert_eq!(c.period_ns(Metric::Wall), 142_857_142);
        c.off_cpu = None;
        c.session = None;
        assert_eq!(c.period_ns(Metric::Wall), 0, "nothing to go by");
        assert_eq!(crate::metric::ns(3, u64::MAX), u64::MAX, "saturates");
    }
}
