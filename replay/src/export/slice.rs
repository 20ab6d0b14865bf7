//! What every output format and the diff are written from: the profile model
//! ([`crate::model`]) with a selection's weights in it, the capture's definitions, and what
//! the outputs say about where the selection came from ([`Extent`]). So they all agree,
//! and none of them depends on how the samples were read: a file scan supplies a slice
//! ([`Slice::new`]), and so does anything else that has interned a capture's stacks and
//! weighed a selection of them ([`Slice::from_model`]: the views' fold, a live tally).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt::Write;

use hotspot_format::StackId;

use super::error::ExportError;
use super::scan::Scan;
use super::selection::Selection;
use crate::capture::Capture;
use crate::clock::Clock;
use crate::metric::{Class, Metric};
use crate::model::aggregate::{self, FlatRow, Selected, Tree};
use crate::model::{Hide, Interned, Profile};
use crate::names::FrameName;
use crate::sanitize::display;
use crate::tally::Ordered;

/// Frame shown for samples whose stack has no frame left (for instance only kernel
/// frames, with `--no-kernel`), so stack formats keep the report's total.
pub const NO_FRAMES: &str = "[no frames]";
/// Frame shown for samples whose stack the capture does not define (a damaged block).
pub const LOST_STACK: &str = "[stack lost to damage]";

/// Which samples count.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Monotonic ns bounds, inclusive.
    pub from_ns: Option<u64>,
    pub to_ns: Option<u64>,
    pub tids: Option<HashSet<u32>>,
    pub pids: Option<HashSet<u32>>,
    /// Drop kernel frames (a sample taken in the kernel counts for its user caller).
    pub no_kernel: bool,
    /// Drop the interpreter's own frames from stacks with Python frames (their samples
    /// count for the Python frame, or the C extension's, that called them).
    pub no_interpreter: bool,
}

impl Filter {
    /// The frames the selected stacks are shown without.
    pub fn hide(&self) -> Hide {
        Hide {
            kernel: self.no_kernel,
            interpreter: self.no_interpreter,
        }
    }
}

/// Periods per (tid, capture stack, class): a selection's weights as its source counted
/// them.
pub type Weights = BTreeMap<(u32, StackId, Class), u64>;

/// Where a selection sits in its capture: what the outputs say besides the weights.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Extent {
    /// The clock offsets are given on ([`crate::clock`]).
    pub clock: Option<Clock>,
    /// The time window, inclusive monotonic ns; `None` where the selection has no bound.
    pub from_ns: Option<u64>,
    pub to_ns: Option<u64>,
    /// (first, last) time of the samples in the whole capture.
    pub span: Option<(u64, u64)>,
    /// (first, last) time of the samples inside the window, where the source knows it.
    pub window_span: Option<(u64, u64)>,
    /// The weight the metric counts in the whole capture (what a selection is a part of).
    pub capture_total: u64,
}

impl Extent {
    /// Seconds covered: the window if one was given (within the capture's sample span),
    /// else the capture's sample span.
    pub fn duration_s(&self) -> f64 {
        let span = match (self.from_ns, self.to_ns, self.span) {
            (None, None, s) => s,
            (f, t, Some((a, b))) => Some((f.unwrap_or(a).max(a), t.unwrap_or(b).min(b))),
            (_, _, None) => None,
        };
        span.map_or(0.0, |(a, b)| b.saturating_sub(a) as f64 / 1e9)
    }

    /// A scan's: its window as resolved on its clock, its spans and its total.
    pub fn of(scan: &Scan) -> Extent {
        Extent {
            clock: scan.clock,
            from_ns: scan.from_ns,
            to_ns: scan.to_ns,
            span: scan.span,
            window_span: scan.window_span,
            capture_total: scan.samples,
        }
    }
}

/// A selection over the profile model: its weights, where it sits, and the capture whose
/// names, threads and frames the outputs print.
#[derive(Debug)]
pub struct Slice<'a> {
    /// The capture's definitions (its samples are not read: the weights stand for them).
    pub capture: &'a Capture,
    pub selection: Selection,
    /// The selection resolved against the capture (thread names turned into tids).
    pub filter: Filter,
    pub extent: Extent,
    /// The window's weights, every thread's: [`Slice::tally`] keeps the selected ones.
    weights: Cow<'a, Weights>,
    /// Each sample of the window in file order, when the source kept them (a scan with
    /// [`ScanOptions::keep_order`](super::ScanOptions::keep_order)): speedscope's
    /// timeline. Without them, one entry per thread and stack.
    pub order: Option<&'a [Ordered]>,
    /// The model the selected stacks are interned in: the slice's own (a scan), or its
    /// source's (a view's fold, which interned them already).
    pub profile: Cow<'a, Profile>,
    /// The selected weight per interned stack.
    pub selected: Selected,
    /// Weight selected, stacks lost to damage included.
    pub total: u64,
    /// Weight of samples whose stack the capture does not define (a lost block).
    pub unknown_stacks: u64,
    /// Selected samples per thread.
    pub thread_samples: BTreeMap<u32, u64>,
}

impl<'a> Slice<'a> {
    /// Checks the selection against the capture and folds what it keeps. Fails for a
    /// thread or process the capture does not have.
    pub fn new(scan: &'a Scan, selection: &Selection) -> Result<Slice<'a>, ExportError> {
        let capture = &scan.capture;
        if selection.metric != Metric::Cpu && capture.off_cpu.is_none() {
            return Err(ExportError::NoOffCpu(file_name(capture)));
        }
        let known_tids: BTreeSet<u32> = capture
            .threads
            .keys()
            .chain(scan.thread_samples.keys())
            .copied()
            .collect();
        let mut tids: BTreeSet<u32> = BTreeSet::new();
        for &tid in &selection.tids {
            if !known_tids.contains(&tid) {
                return Err(ExportError::UnknownThread(format!(
                    "--tid {tid}: the capture has {}",
                    thread_list(scan)
                )));
            }
            tids.insert(tid);
        }
        for name in &selection.threads {
            let matching: Vec<u32> = capture
                .threads
                .values()
                .filter(|t| t.names.iter().any(|(_, n)| n == name))
                .map(|t| t.tid)
                .collect();
            if matching.is_empty() {
                return Err(ExportError::UnknownThread(format!(
                    "'{}': the capture has {}",
                    display(name),
                    thread_list(scan)
                )));
            }
            tids.extend(matching);
        }
        let known_pids: BTreeSet<u32> = capture
            .processes
            .keys()
            .copied()
            .chain(capture.threads.values().map(|t| t.pid))
            .collect();
        for &pid in &selection.pids {
            if !known_pids.contains(&pid) {
                let list: Vec<String> = known_pids.iter().map(u32::to_string).collect();
                return Err(ExportError::UnknownProcess(format!(
                    "--pid {pid}: the capture has {}",
                    if list.is_empty() {
                        "no processes".to_string()
                    } else {
                        format!("pids {}", list.join(", "))
                    }
                )));
            }
        }
        let filter = Filter {
            from_ns: scan.from_ns,
            to_ns: scan.to_ns,
            tids: (!selection.tids.is_empty() || !selection.threads.is_empty())
                .then(|| tids.iter().copied().collect()),
            pids: (!selection.pids.is_empty()).then(|| selection.pids.iter().copied().collect()),
            no_kernel: selection.no_kernel,
            no_interpreter: selection.no_interpreter,
        };
        Ok(Slice::assemble(
            capture,
            Cow::Owned(Profile::default()),
            Cow::Borrowed(&scan.tally),
            scan.order.as_deref(),
            selection.clone(),
            filter,
            Extent::of(scan),
        ))
    }

    /// A slice over a model its source built: `profile` holds the stacks of `weights`
    /// as [`Profile::intern_class`] interns them (a stack it lacks counts as lost to
    /// damage, as one the capture does not define), `weights` are the window's periods
    /// of the selected threads, `selection` and `extent` what the outputs say of them.
    /// The views' fold is one such source; what a slice of it writes is what a scan of the
    /// same selection writes.
    pub fn from_model(
        capture: &'a Capture,
        profile: &'a Profile,
        weights: Weights,
        selection: Selection,
        extent: Extent,
    ) -> Slice<'a> {
        let filter = Filter {
            from_ns: extent.from_ns,
            to_ns: extent.to_ns,
            tids: (!selection.tids.is_empty()).then(|| selection.tids.iter().copied().collect()),
            pids: (!selection.pids.is_empty()).then(|| selection.pids.iter().copied().collect()),
            no_kernel: selection.no_kernel,
            no_interpreter: selection.no_interpreter,
        };
        Slice::assemble(
            capture,
            Cow::Borrowed(profile),
            Cow::Owned(weights),
            None,
            selection,
            filter,
            extent,
        )
    }

    fn assemble(
        capture: &'a Capture,
        profile: Cow<'a, Profile>,
        weights: Cow<'a, Weights>,
        order: Option<&'a [Ordered]>,
        selection: Selection,
        filter: Filter,
        extent: Extent,
    ) -> Slice<'a> {
        let mut slice = Slice {
            capture,
            selection,
            filter,
            extent,
            weights,
            order,
            profile,
            selected: Selected::default(),
            total: 0,
            unknown_stacks: 0,
            thread_samples: BTreeMap::new(),
        };
        slice.fold();
        slice
    }

    /// Whether samples of `tid` are selected (the time window was applied while reading).
    pub fn keeps(&self, tid: u32) -> bool {
        if self.filter.tids.as_ref().is_some_and(|t| !t.contains(&tid)) {
            return false;
        }
        match &self.filter.pids {
            Some(pids) => self
                .capture
                .threads
                .get(&tid)
                .is_some_and(|t| pids.contains(&t.pid)),
            None => true,
        }
    }

    /// Selected periods per (tid, stack, class), in that order.
    pub fn tally(&self) -> impl Iterator<Item = (u32, StackId, Class, u64)> + '_ {
        self.weights
            .iter()
            .filter(|((tid, _, _), _)| self.keeps(*tid))
            .map(|(&(tid, stack, class), &n)| (tid, stack, class, n))
    }

    /// Sums the selected weight per stack and thread; interns each stack into the slice's
    /// own model, or finds it in its source's.
    fn fold(&mut self) {
        let mut per_stack: BTreeMap<(StackId, Class), u64> = BTreeMap::new();
        let mut threads: BTreeMap<u32, u64> = BTreeMap::new();
        for (tid, stack, class, n) in self.tally() {
            *per_stack.entry((stack, class)).or_default() += n;
            *threads.entry(tid).or_default() += n;
        }
        let (capture, hide) = (self.capture, self.filter.hide());
        for ((id, class), n) in per_stack {
            self.total += n;
            let interned = match &mut self.profile {
                Cow::Owned(p) => p.stack_of_class(capture, id, class, hide),
                Cow::Borrowed(p) => p.interned_class(id, class).map(|v| v[hide.index()]),
            };
            match interned {
                Some(s) => self.selected.add(s, n),
                None => self.unknown_stacks += n,
            }
        }
        self.thread_samples = threads;
    }

    /// The flat profile of the selection.
    pub fn flat(&self) -> Vec<FlatRow> {
        aggregate::flat(&self.profile, &self.selected)
    }

    /// The call tree of the selection.
    pub fn tree(&self) -> Tree {
        aggregate::tree(&self.profile, &self.selected)
    }

    /// Distinct stacks of names selected (an empty one included).
    pub fn distinct_stacks(&self) -> usize {
        self.selected.sampled.len() + usize::from(self.selected.empty > 0)
    }

    /// The logical frames of a selected stack, root first, without the frames the filter
    /// hides (`--no-kernel`, `--no-interpreter`); `None` when the capture does not define
    /// the stack.
    pub fn names(&self, id: StackId, class: Class) -> Option<Vec<FrameName>> {
        let s = self.profile.interned_class(id, class)?[self.filter.hide().index()];
        Some(self.frame_names(s))
    }

    fn frame_names(&self, s: Interned) -> Vec<FrameName> {
        let mut frames = Vec::new();
        self.profile.path(s, &mut frames);
        frames.iter().map(|&f| self.profile.frame_name(f)).collect()
    }

    /// The selected stacks by their names with every selected sample placed: an empty
    /// stack becomes [`NO_FRAMES`] and an undefined one [`LOST_STACK`], so totals match
    /// the report.
    pub fn stacks(&self) -> BTreeMap<Vec<FrameName>, u64> {
        let mut out = BTreeMap::new();
        for &s in &self.selected.sampled {
            let n = self.selected.leaf[s as usize];
            *out.entry(self.frame_names(Interned::Stack(s))).or_default() += n;
        }
        if self.selected.empty > 0 {
            *out.entry(vec![FrameName::placeholder(NO_FRAMES)])
                .or_default() += self.selected.empty;
        }
        if self.unknown_stacks > 0 {
            *out.entry(vec![FrameName::placeholder(LOST_STACK)])
                .or_default() += self.unknown_stacks;
        }
        out
    }

    /// The time one period stands for in ns, by the capture's one rule under the slice's
    /// metric ([`Capture::period_ns`](crate::Capture::period_ns)).
    pub fn period_ns(&self) -> u64 {
        self.capture.period_ns(self.metric())
    }

    /// What the slice weighs (`--metric`).
    pub fn metric(&self) -> Metric {
        self.selection.metric
    }

    /// The capture's file name, sanitised (what titles show).
    pub fn file_name(&self) -> String {
        file_name(self.capture)
    }

    /// Seconds covered ([`Extent::duration_s`]).
    pub fn duration_s(&self) -> f64 {
        self.extent.duration_s()
    }

    /// "name (tid N)" for a thread, sanitised.
    pub fn thread_label(&self, tid: u32) -> String {
        match self.capture.threads.get(&tid) {
            Some(t) if !t.name().is_empty() => format!("{} (tid {tid})", display(t.name())),
            _ => format!("tid {tid}"),
        }
    }
}

/// The capture's file name, sanitised.
pub fn file_name(capture: &Capture) -> String {
    super::summary::capture_info_of(capture).file
}

/// The capture's threads, busiest first, for error messages.
fn thread_list(scan: &Scan) -> String {
    let mut threads: Vec<(u64, u32)> = scan
        .capture
        .threads
        .keys()
        .map(|&tid| (scan.thread_samples.get(&tid).copied().unwrap_or(0), tid))
        .collect();
    threads.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    if threads.is_empty() {
        return "no threads".to_string();
    }
    let mut s = String::from("threads ");
    for (i, (_, tid)) in threads.iter().enumerate() {
        if i == 8 {
            let _ = write!(s, ", … ({} in all)", threads.len());
            break;
        }
        if i > 0 {
            s.push_str(", ");
        }
        let name = scan.capture.threads.get(tid).map_or("", |t| t.name());
        let _ = write!(s, "{} (tid {tid})", display(name));
    }
    s
}
