//! Several captures as one: the segments of a flight recorder's history, in time order,
//! rewritten through one [`Writer`]. Each segment numbers its strings, modules, frames and
//! stacks from its own start, so every id is mapped into the new capture's, and
//! definitions equal in content are written once (a stack sampled in two segments is one
//! stack of the whole). Process, thread and the other keyed definitions keep the first
//! one, as a reader does within one capture (`definitions::Dedup`).
//!
//! With a [`Window`], only what happened inside it is kept: samples, off-CPU samples,
//! marks, losses, exits (and thread times overlapping it), from the segments holding a
//! sample or a mark in it, with those segments' definitions; the copy is self-contained.
//! `hotspot snapshot` writes it to a file, and a history read as one capture (`report DIR`)
//! is this without a window. A view follows a growing history through the same
//! [`Merger`], fed the newest segment block by block as it lands. The segments of a boot
//! after the oldest segment's are moved onto its clock ([`BootClock`]): CLOCK_MONOTONIC
//! starts again at a reboot.

mod clock;
mod span;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;

use crate::definitions::Dedup;
use crate::error::FormatError;
use crate::reader::{Event, Reader};
use crate::records::{
    End, Frame, FrameAddr, FrameId, InlinedFn, InterpreterModule, InterpreterProcess,
    InterpreterRole, Module, ModuleId, ModuleKind, OffCpuBatch, Record, SampleBatch, Scrubbed,
    SessionHeader, SourceLoc, Stack, StackId, StringId, Symbol, Unwinding,
};
use crate::writer::Writer;

pub use clock::BootClock;

/// A stretch of the samples' monotonic clock, both ends inclusive (as `--from`/`--to`
/// select); `None`: unbounded on that side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Window {
    pub from_ns: Option<u64>,
    pub to_ns: Option<u64>,
}

impl Window {
    /// Whether the instant `t` lies inside.
    pub fn holds(&self, t: u64) -> bool {
        self.from_ns.is_none_or(|f| t >= f) && self.to_ns.is_none_or(|e| t <= e)
    }

    /// Whether `[first, last]` meets the window.
    fn meets(&self, first: u64, last: u64) -> bool {
        self.from_ns.is_none_or(|f| last >= f) && self.to_ns.is_none_or(|e| first <= e)
    }
}

/// What a merge read and wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Merged {
    /// Segments given.
    pub segments: usize,
    /// Segments with something inside the window, whose records were written.
    pub used: usize,
    /// Segments decoded: with a window, a finished segment the window misses is placed on
    /// the clock from its first and last blocks and passed over.
    pub decoded: usize,
    /// Samples (CPU and off-CPU) written.
    pub samples: u64,
    /// The last segment used ended cleanly, so the copy does; otherwise the copy reads
    /// as cut where that segment was (a history's newest segment, still being written).
    pub finished: bool,
    /// Damaged regions of the segments skipped.
    pub corrupt_regions: u64,
    /// Records of kinds this version does not know, dropped.
    pub unknown_records: u64,
    /// Records naming an id their segment never defined (damage), dropped.
    pub unresolved: u64,
}

/// Writes the captures `segments` (oldest first) as one capture into `out`, keeping what
/// lies in `window`, scrubbed of `scrub` when given (the copy then says so).
pub fn merge<W: Write>(
    segments: &[&[u8]],
    out: W,
    window: Window,
    scrub: Option<Scrubbed>,
) -> Result<(W, Merged), FormatError> {
    let mut m = Merger::new(out, window, scrub);
    for data in segments {
        m.segment(data)?;
    }
    m.finish()
}

/// How much later each segment's times read in a merge of `segments` (oldest first): 0
/// but for the segments of a later boot than the oldest's ([`BootClock`]), so that a
/// window can be placed on the merged clock before merging.
pub fn clock_shifts(segments: &[&[u8]]) -> Result<Vec<u64>, FormatError> {
    let mut clock = BootClock::new();
    segments
        .iter()
        .map(|data| {
            if let Some(span) = span::of(data) {
                return Ok(clock.place(Some(&span.session), Some(span.last)));
            }
            let mut seen = Dedup::new();
            let mut records = Vec::new();
            for event in Reader::new(data)? {
                if let Event::Block(b) = event {
                    records.extend(b.records.into_iter().filter(|r| seen.keep(r)));
                }
            }
            Ok(clock.place(session(&records), clock::last_time(&records)))
        })
        .collect()
}

fn session(records: &[Record]) -> Option<&SessionHeader> {
    records.iter().find_map(|r| match r {
        Record::Session(s) => Some(s),
        _ => None,
    })
}

/// Adds a later segment's counts for the same process to `sum`; what the process is
/// (path, version, status) is the later segment's word.
fn add_counts(sum: &mut InterpreterProcess, later: &InterpreterProcess) {
    let counts = [
        (&mut sum.samples, later.samples),
        (&mut sum.merged, later.merged),
        (&mut sum.mismatched, later.mismatched),
        (&mut sum.without_frames, later.without_frames),
        (&mut sum.unresolved_frames, later.unresolved_frames),
        (&mut sum.cut, later.cut),
    ];
    for (total, n) in counts {
        *total = total.saturating_add(n);
    }
    sum.language = later.language;
    sum.path.clone_from(&later.path);
    sum.version.clone_from(&later.version);
    sum.status = later.status.clone();
}

/// Whether a segment's records hold a sample or a mark inside `window`.
fn window_has_something(records: &[Record], window: &Window) -> bool {
    records.iter().any(|r| match r {
        Record::Samples(b) => b.samples.iter().any(|s| window.holds(s.time_ns)),
        Record::OffCpuSamples(b) => b.samples.iter().any(|s| window.holds(s.sample.time_ns)),
        Record::Mark(k) => window.holds(k.time_ns),
        _ => false,
    })
}

/// Unreachable: `segment` starts the writer before anything is written.
const NOT_STARTED: FormatError = FormatError::NotACapture {
    reason: "merge wrote before its writer started",
};

/// A module's identity across segments: what it is, not the id a segment gave it.
type ModuleKey = (ModuleKind, String, Vec<u8>);

/// Merges segments one at a time into one capture written to `out`: whole segments
/// ([`Merger::segment`]), or the one still being written, block by block as it lands
/// ([`Merger::follow_segment`], then [`Merger::block`]), which is how a view follows a
/// history (`hotspot_replay::history::Growing`). What was merged reaches `out` as whole
/// blocks: at the writer's own pace, and at each [`Merger::flush`].
pub struct Merger<W: Write> {
    writer: Option<Box<Writer<W>>>,
    out: Option<W>,
    scrub: Option<Scrubbed>,
    /// Keyed definitions without ids of their own (sessions, processes, threads…).
    dedup: Dedup,
    modules: HashMap<ModuleKey, ModuleId>,
    frames: HashMap<(ModuleId, FrameAddr), FrameId>,
    stacks: HashMap<Vec<FrameId>, StackId>,
    /// New frame ids whose symbol is written.
    symbols: HashSet<FrameId>,
    /// Modules (new ids) whose frame addresses are numbers that only tell one segment's
    /// frames apart: an interpreter's frames (kind 21, role Frames), unwind markers.
    numbered: HashSet<ModuleId>,
    /// Frames of those written so far: the next one's address.
    numbered_frames: u64,
    window: Window,
    stats: Merged,
    /// The last used segment's end.
    end: Option<End>,
    /// Lost samples inside the window.
    lost: u64,
    /// The current segment's ids, mapped: a segment followed block by block defines an
    /// id in one block and uses it in the next.
    ids: Ids,
    /// The current segment's definitions seen (its writer repeats them per block).
    seen: Dedup,
    /// Places each segment's times on the oldest segment's clock.
    clock: BootClock,
    /// The session start of the segment before the current one, placed (0 before the
    /// first: the marks the oldest segment took may be from any time before it).
    previous_start: u64,
    /// Each interpreted process's counts over the segments before the current one: a
    /// segment counts only its own samples, so the history's are their sum.
    interpreters: BTreeMap<(u32, u64), InterpreterProcess>,
    /// The current segment's last word on each interpreted process.
    current_interpreters: HashMap<(u32, u64), InterpreterProcess>,
}

impl<W: Write> std::fmt::Debug for Merger<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Merger")
            .field("stats", &self.stats)
            .field("window", &self.window)
            .finish_non_exhaustive()
    }
}

/// One segment's ids mapped to the copy's.
#[derive(Default)]
struct Ids {
    strings: HashMap<StringId, StringId>,
    modules: HashMap<ModuleId, ModuleId>,
    frames: HashMap<FrameId, FrameId>,
    stacks: HashMap<StackId, StackId>,
}

impl<W: Write> Merger<W> {
    /// A merge into `out` of what lies in `window`, scrubbed of `scrub` when given.
    pub fn new(out: W, window: Window, scrub: Option<Scrubbed>) -> Self {
        Merger {
            writer: None,
            out: Some(out),
            scrub,
            dedup: Dedup::new(),
            modules: HashMap::new(),
            frames: HashMap::new(),
            stacks: HashMap::new(),
            symbols: HashSet::new(),
            numbered: HashSet::new(),
            numbered_frames: 0,
            window,
            stats: Merged::default(),
            end: None,
            lost: 0,
            ids: Ids::default(),
            seen: Dedup::new(),
            clock: BootClock::new(),
            previous_start: 0,
            interpreters: BTreeMap::new(),
            current_interpreters: HashMap::new(),
        }
    }

    /// Adds the next segment, whole (`data`, a capture, possibly cut short): left out
    /// unless it holds a sample or a mark in the window.
    pub fn segment(&mut self, data: &[u8]) -> Result<(), FormatError> {
        self.stats.segments += 1;
        if self.window != Window::default()
            && let Some(span) = span::of(data)
        {
            let mut clock = self.clock.clone();
            let by = clock.place(Some(&span.session), Some(span.last));
            let start = span.session.start_mono_ns.saturating_add(by);
            // What it can hold: its samples, and marks from its end back to the start
            // of the segment before it (a recorder takes the marks in the directory at
            // its first block, so a mark this one took was dropped after that).
            let first = span.first.saturating_add(by).min(self.previous_start);
            if !self.window.meets(first, span.last.saturating_add(by)) {
                self.clock = clock;
                self.previous_start = start;
                return Ok(());
            }
        }
        self.stats.decoded += 1;
        let mut seen = Dedup::new();
        let mut records = Vec::new();
        for event in Reader::new(data)? {
            records.extend(self.records(event, &mut seen));
        }
        self.place(&mut records);
        if let Some(s) = session(&records) {
            self.previous_start = s.start_mono_ns;
        }
        if !window_has_something(&records, &self.window) {
            return Ok(());
        }
        self.start_segment();
        self.chunk(records)
    }

    /// Starts the next segment, one still being written: its blocks follow through
    /// [`Merger::block`] as they land. It is used whatever it holds (nothing says yet
    /// whether it will hold something in the window).
    pub fn follow_segment(&mut self) {
        self.stats.segments += 1;
        self.stats.decoded += 1;
        self.seen = Dedup::new();
        self.start_segment();
    }

    /// Adds what a follower read next from the segment being followed: a block, or damage
    /// (counted).
    pub fn block(&mut self, event: Event) -> Result<(), FormatError> {
        let mut seen = std::mem::take(&mut self.seen);
        let mut records = self.records(event, &mut seen);
        self.seen = seen;
        self.place(&mut records);
        if let Some(s) = session(&records) {
            self.previous_start = s.start_mono_ns;
        }
        self.chunk(records)
    }

    /// Writes what is merged but buffered as a block, so that a reader of `out` has it.
    pub fn flush(&mut self) -> Result<(), FormatError> {
        match self.writer.as_deref_mut() {
            Some(w) => w.flush_block(),
            None => Ok(()),
        }
    }

    /// Ends the copy: with an end marker when the last segment used ended cleanly (at the
    /// window's end, if sooner), otherwise as cut there; hands back `out`.
    pub fn finish(self) -> Result<(W, Merged), FormatError> {
        let Some(writer) = self.writer else {
            return Err(FormatError::NotACapture {
                reason: "no segment holds anything in the window",
            });
        };
        let window = self.window;
        let out = match self.end {
            Some(e) if self.stats.finished => {
                let end_mono = window.to_ns.map_or(e.end_mono_ns, |t| e.end_mono_ns.min(t));
                let end_wall = e
                    .end_wall_ns
                    .saturating_sub(e.end_mono_ns.saturating_sub(end_mono));
                writer.finish(end_wall, end_mono, self.lost)?
            }
            _ => writer.unfinished()?,
        };
        Ok((out, self.stats))
    }

    /// What a merge has read and written so far.
    pub fn stats(&self) -> Merged {
        self.stats
    }

    /// A segment's records in `event`, first definitions only (its writer repeated them
    /// per block; `seen` holds the segment's); damage and unknown kinds counted.
    fn records(&mut self, event: Event, seen: &mut Dedup) -> Vec<Record> {
        match event {
            Event::Block(b) => {
                self.stats.unknown_records += b
                    .unknown_kinds
                    .iter()
                    .map(|&(_, n)| u64::from(n))
                    .sum::<u64>();
                b.records.into_iter().filter(|r| seen.keep(r)).collect()
            }
            Event::Corrupt { .. } => {
                self.stats.corrupt_regions += 1;
                Vec::new()
            }
            Event::Truncated { .. } => Vec::new(),
        }
    }

    /// Moves a segment's records (all of it, or a block of one followed) onto the merged
    /// clock: the shift is its boot's, decided by the header in its first block.
    fn place(&mut self, records: &mut [Record]) {
        let by = self
            .clock
            .place(session(records), clock::last_time(records));
        records.iter_mut().for_each(|r| clock::shift(r, by));
    }

    /// A new segment: its ids start over; it has not ended yet.
    fn start_segment(&mut self) {
        for (key, p) in self.current_interpreters.drain() {
            self.interpreters
                .entry(key)
                .and_modify(|sum| add_counts(sum, &p))
                .or_insert(p);
        }
        self.stats.used += 1;
        self.stats.finished = false;
        self.ids = Ids::default();
    }

    /// The writer, started with this session header (scrubbed as asked, and of what the
    /// segment had scrubbed already) if it was not.
    fn writer(&mut self, records: &[Record]) -> Result<&mut Writer<W>, FormatError> {
        if self.writer.is_none() {
            let session = records
                .iter()
                .find_map(|r| match r {
                    Record::Session(s) => Some(s.clone()),
                    _ => None,
                })
                .unwrap_or_else(SessionHeader::default);
            let before = records.iter().find_map(|r| match r {
                Record::Scrubbed(s) => Some(*s),
                _ => None,
            });
            let out = self.out.take().ok_or(FormatError::NotACapture {
                reason: "merge output taken twice",
            })?;
            let w = match self.scrub {
                Some(what) => {
                    Writer::scrubbing(out, session, what.union(before.unwrap_or_default()))?
                }
                None => Writer::new(out, session)?,
            };
            self.writer = Some(Box::new(w));
        }
        self.writer.as_deref_mut().ok_or(NOT_STARTED)
    }

    /// Writes records of the current segment (all of it, or a block of one followed): the
    /// id-bearing definitions first (so that every reference, the `Unwinding` record's
    /// marker module included, finds its new id), then the rest in order.
    fn chunk(&mut self, records: Vec<Record>) -> Result<(), FormatError> {
        if records.is_empty() {
            return Ok(());
        }
        self.writer(&records)?;
        let mut ids = std::mem::take(&mut self.ids);
        // Strings and modules first: frames refer to them, and whether a module's frame
        // addresses are only numbers (interpreted frames, unwind markers) decides how its
        // frames merge.
        let mut later = Vec::new();
        for r in records {
            match r {
                Record::String { id, text } => {
                    let new = self.writer(&[])?.intern(&text);
                    ids.strings.insert(id, new);
                }
                Record::Module(m) => self.module(m, &mut ids)?,
                other => later.push(other),
            }
        }
        for r in &later {
            let numbered = match r {
                Record::InterpreterModule(m) if m.role == InterpreterRole::Frames => Some(m.module),
                Record::Unwinding(u) => u.markers,
                _ => None,
            };
            if let Some(&module) = numbered.and_then(|m| ids.modules.get(&m)) {
                self.numbered.insert(module);
            }
        }
        let mut rest = Vec::new();
        for r in later {
            match r {
                Record::Frame(f) => self.frame(f, &mut ids)?,
                Record::Stack(s) => self.stack(s, &mut ids)?,
                Record::Symbol(s) => self.symbol(s, &ids)?,
                other => rest.push(other),
            }
        }
        let mut end = None;
        for r in rest {
            match r {
                Record::InterpreterProcess(p) => self.interpreter(p)?,
                r => self.other(r, &ids, &mut end)?,
            }
        }
        self.ids = ids;
        if end.is_some() {
            self.stats.finished = true;
            self.end = end;
        }
        Ok(())
    }

    fn module(&mut self, m: Module, ids: &mut Ids) -> Result<(), FormatError> {
        let key = (m.kind, m.path.clone(), m.build_id.clone());
        let next = self.modules.len() as ModuleId;
        let new = *self.modules.entry(key).or_insert(next);
        ids.modules.insert(m.id, new);
        if new == next {
            self.writer(&[])?
                .push(Record::Module(Module { id: new, ..m }))?;
        }
        Ok(())
    }

    fn frame(&mut self, f: Frame, ids: &mut Ids) -> Result<(), FormatError> {
        let Some(&module) = ids.modules.get(&f.module) else {
            self.stats.unresolved += 1;
            return Ok(());
        };
        let addr = match f.addr {
            FrameAddr::FileOffset(o) => FrameAddr::FileOffset(o),
            FrameAddr::KernelSymbol { symbol, offset } => match ids.strings.get(&symbol) {
                Some(&symbol) => FrameAddr::KernelSymbol { symbol, offset },
                None => {
                    self.stats.unresolved += 1;
                    return Ok(());
                }
            },
        };
        // An interpreted frame's or an unwind marker's address only tells its segment's
        // frames apart (SPEC.md, kinds 21 and 14), its symbol says what it is: the same
        // number is another function or reason in another segment, so each segment's are
        // frames of their own, numbered anew in the copy.
        let addr = if self.numbered.contains(&module) {
            self.numbered_frames += 1;
            FrameAddr::FileOffset(self.numbered_frames)
        } else {
            addr
        };
        let next = self.frames.len() as FrameId;
        let new = *self.frames.entry((module, addr.clone())).or_insert(next);
        ids.frames.insert(f.id, new);
        if new == next {
            self.writer(&[])?.push(Record::Frame(Frame {
                id: new,
                module,
                addr,
            }))?;
        }
        Ok(())
    }

    fn stack(&mut self, s: Stack, ids: &mut Ids) -> Result<(), FormatError> {
        let Some(frames) = s
            .frames
            .iter()
            .map(|f| ids.frames.get(f).copied())
            .collect::<Option<Vec<_>>>()
        else {
            self.stats.unresolved += 1;
            return Ok(());
        };
        let next = self.stacks.len() as StackId;
        let new = *self.stacks.entry(frames.clone()).or_insert(next);
        ids.stacks.insert(s.id, new);
        if new == next {
            self.writer(&[])?
                .push(Record::Stack(Stack { id: new, frames }))?;
        }
        Ok(())
    }

    fn symbol(&mut self, s: Symbol, ids: &Ids) -> Result<(), FormatError> {
        let string = |id: StringId| ids.strings.get(&id).copied();
        let loc = |l: SourceLoc| -> Option<SourceLoc> {
            Some(SourceLoc {
                file: match l.file {
                    Some(f) => Some(string(f)?),
                    None => None,
                },
                line: l.line,
            })
        };
        let mapped = (|| {
            Some(Symbol {
                frame: *ids.frames.get(&s.frame)?,
                function: string(s.function)?,
                loc: loc(s.loc)?,
                inlined: s
                    .inlined
                    .into_iter()
                    .map(|i| {
                        Some(InlinedFn {
                            function: string(i.function)?,
                            loc: loc(i.loc)?,
                        })
                    })
                    .collect::<Option<Vec<_>>>()?,
            })
        })();
        match mapped {
            // The first segment to name a frame names it, as within one capture.
            Some(sym) if self.symbols.insert(sym.frame) => {
                self.writer(&[])?.push(Record::Symbol(sym))?;
            }
            Some(_) => {}
            None => self.stats.unresolved += 1,
        }
        Ok(())
    }

    /// A segment's word on an interpreted process (the last of a segment's holds, SPEC.md),
    /// written as the earlier segments' counts plus this one's: whatever is read last of
    /// the copy, whole or followed, is the sum so far.
    fn interpreter(&mut self, p: InterpreterProcess) -> Result<(), FormatError> {
        let key = (p.pid, p.start_ns);
        let sum = match self.interpreters.get(&key) {
            Some(before) => {
                let mut sum = before.clone();
                add_counts(&mut sum, &p);
                sum
            }
            None => p.clone(),
        };
        self.current_interpreters.insert(key, p);
        if let Some(w) = self.writer.as_deref_mut() {
            w.push(Record::InterpreterProcess(sum))?;
        }
        Ok(())
    }

    /// Everything but the id-bearing definitions: kept definitions once, events inside
    /// the window, samples with their stacks mapped.
    fn other(&mut self, r: Record, ids: &Ids, end: &mut Option<End>) -> Result<(), FormatError> {
        let window = self.window;
        // Keyed by a module id: the segment's id is mapped like a frame's before the
        // record is compared with those already kept, and a module the merged capture did
        // not take leaves it out.
        let r = match r {
            Record::InterpreterModule(m) => match ids.modules.get(&m.module) {
                Some(&module) => Record::InterpreterModule(InterpreterModule { module, ..m }),
                None => return Ok(()),
            },
            r => r,
        };
        let keep = match &r {
            // The writer writes its own: the first used segment's session header.
            Record::Index(_) | Record::Session(_) => false,
            Record::End(e) => {
                *end = Some(*e);
                false
            }
            // The writer writes its own, with what it scrubs.
            Record::Scrubbed(_) if self.scrub.is_some() => false,
            Record::Samples(_) | Record::OffCpuSamples(_) => true,
            Record::Lost(l) => window.holds(l.time_ns),
            Record::LostMappings(l) => window.holds(l.time_ns),
            Record::LostOffCpu(l) => window.holds(l.time_ns),
            Record::ProcessExit(e) => window.holds(e.time_ns),
            Record::Mark(k) => window.holds(k.time_ns),
            Record::ThreadTimes(t) => window.meets(t.first_ns, t.last_ns),
            _ => self.dedup.keep(&r),
        };
        if !keep {
            return Ok(());
        }
        let stats = &mut self.stats;
        let w = self.writer.as_deref_mut().ok_or(NOT_STARTED)?;
        match r {
            Record::Samples(SampleBatch { samples }) => {
                for mut s in samples {
                    if !window.holds(s.time_ns) {
                        continue;
                    }
                    match ids.stacks.get(&s.stack) {
                        Some(&new) => s.stack = new,
                        None => {
                            stats.unresolved += 1;
                            continue;
                        }
                    }
                    stats.samples += 1;
                    w.push_sample(s)?;
                }
            }
            Record::OffCpuSamples(OffCpuBatch { samples }) => {
                for mut s in samples {
                    if !window.holds(s.sample.time_ns) {
                        continue;
                    }
                    match ids.stacks.get(&s.sample.stack) {
                        Some(&new) => s.sample.stack = new,
                        None => {
                            stats.unresolved += 1;
                            continue;
                        }
                    }
                    stats.samples += 1;
                    w.push_off_cpu_sample(s)?;
                }
            }
            Record::Unwinding(u) => w.push(Record::Unwinding(Unwinding {
                markers: u.markers.and_then(|m| ids.modules.get(&m).copied()),
                ..u
            }))?,
            Record::Lost(l) => {
                self.lost = self.lost.saturating_add(l.count);
                w.push(Record::Lost(l))?;
            }
            other => w.push(other)?,
        }
        Ok(())
    }
}
