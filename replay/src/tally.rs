//! The reports' sample sink: samples summed per (thread, stack) as they stream past, for
//! the whole file and inside the `--from`/`--to` window, which is placed on the capture's
//! [`Clock`] when the first sample arrives.
//!
//! Memory follows the distinct (thread, stack, class) triples, not the samples; only
//! [`Tally::order`] (speedscope's time-ordered view) keeps one entry per sample.
//!
//! A tally counts what its [`Metric`] counts, in periods: the samples the metric leaves
//! out are not seen at all (not in the span, not in any total), so a `cpu` tally of a
//! capture with off-CPU data is the tally of the same capture without it.

use std::collections::BTreeMap;

use hotspot_format::{Sample, StackId, ThreadState};

use crate::capture::{Capture, SampleSink};
use crate::clock::Clock;
use crate::metric::{Class, Metric};
use crate::time::{TimeError, TimeSpec};

/// One sample of [`Tally::order`]: (time, tid, stack, class, periods).
pub type Ordered = (u64, u32, StackId, Class, u64);

/// Sample weights, in periods, summed as they are read (a CPU sample is one period, so
/// the sums of a `cpu` tally are sample counts).
#[derive(Debug, Default)]
pub struct Tally {
    /// What is counted.
    pub metric: Metric,
    /// The clock `--from`/`--to` were placed on (`None` for a capture without samples
    /// and without a session header).
    pub clock: Option<Clock>,
    /// The time window, inclusive monotonic ns, as resolved.
    pub from_ns: Option<u64>,
    pub to_ns: Option<u64>,
    /// Every sample in the file.
    pub samples: u64,
    /// (first, last) sample time of the whole file.
    pub span: Option<(u64, u64)>,
    /// Periods per capture stack (every class together), whole file.
    pub stack_samples: BTreeMap<StackId, u64>,
    /// Periods per thread, whole file.
    pub thread_samples: BTreeMap<u32, u64>,
    /// Periods inside the window per (tid, stack, class).
    pub tally: BTreeMap<(u32, StackId, Class), u64>,
    /// Samples inside the window.
    pub window_samples: u64,
    /// (first, last) sample time inside the window.
    pub window_span: Option<(u64, u64)>,
    /// When asked for: each sample in the window, in file order.
    pub order: Option<Vec<Ordered>>,
    /// Off-CPU (samples, periods) per state in the whole file, whatever the metric
    /// counts: what `info` reports of a capture it tallies under `cpu`.
    pub off_cpu_seen: BTreeMap<ThreadState, (u64, u64)>,
    window: (Option<TimeSpec>, Option<TimeSpec>),
    /// The clock the session header gives, known once its block is read.
    session_clock: Option<Clock>,
    placed: bool,
    error: Option<TimeError>,
}

impl Tally {
    /// A tally of the samples inside `from..=to` (both optional), keeping their order if
    /// asked.
    pub fn new(
        from: Option<TimeSpec>,
        to: Option<TimeSpec>,
        keep_order: bool,
        metric: Metric,
    ) -> Tally {
        Tally {
            metric,
            window: (from, to),
            order: keep_order.then(Vec::new),
            ..Tally::default()
        }
    }

    /// The whole-file CPU tally of a capture read into memory (its [`Capture::samples`]).
    pub fn of_samples(capture: &Capture) -> Tally {
        Tally::of_capture(capture, Metric::Cpu)
    }

    /// The whole-file tally under `metric` of a capture read into memory (its
    /// [`Capture::samples`] and [`Capture::off_cpu_samples`]).
    pub fn of_capture(capture: &Capture, metric: Metric) -> Tally {
        let mut t = Tally {
            metric,
            ..Tally::default()
        };
        t.defined(capture);
        for s in &capture.samples {
            t.sample(s, Class::OnCpu, crate::capture::SAMPLE_WEIGHT);
        }
        for s in &capture.off_cpu_samples {
            t.sample(&s.sample, Class::OffCpu(s.state), u64::from(s.periods));
        }
        // Without a window nothing can fail.
        let _ = t.finish(capture);
        t
    }

    /// Places the window if no sample did (a capture without samples), and hands back
    /// the first error met: a window that cannot be placed or is empty by construction.
    pub fn finish(&mut self, capture: &Capture) -> Result<(), TimeError> {
        if !self.placed {
            self.defined(capture);
            self.place(None);
        }
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The first error met so far (the read stops at it).
    pub fn take_error(&mut self) -> Option<TimeError> {
        self.error.take()
    }

    /// Places the window on the clock: at the first sample, or at the end for a capture
    /// without samples.
    fn place(&mut self, first_sample: Option<u64>) {
        self.placed = true;
        let clock = match self.session_clock {
            Some(c) => Some(c),
            None => Clock::of(None, first_sample),
        };
        let Some(clock) = clock else {
            return;
        };
        self.clock = Some(clock);
        let (from, to) = self.window;
        let resolved = from
            .map(|f| f.resolve(&clock))
            .transpose()
            .and_then(|f| Ok((f, to.map(|t| t.resolve(&clock)).transpose()?)));
        let (f, t) = match resolved {
            Ok(ft) => ft,
            Err(e) => {
                self.error.get_or_insert(e);
                return;
            }
        };
        self.from_ns = f;
        self.to_ns = t;
        if let (Some(f), Some(t)) = (f, t)
            && f >= t
        {
            let at = |spec: Option<TimeSpec>, ns: u64| match spec {
                Some(s @ TimeSpec::Offset(_)) => s.to_string(),
                Some(s) => format!("{s} ({:.3} s)", clock.offset_s(ns)),
                None => String::new(),
            };
            self.error.get_or_insert(TimeError::EmptyRange(format!(
                "--from {} is not before --to {}",
                at(from, f),
                at(to, t),
            )));
        }
    }

    /// Why a window holds no sample, with where the samples are.
    pub fn empty_range_message(&self) -> String {
        let clock = self.clock.unwrap_or(Clock {
            start_mono_ns: 0,
            start_wall_ns: None,
        });
        let (from_spec, to_spec) = self.window;
        let bound = |spec: Option<TimeSpec>, ns: Option<u64>| match (spec, ns) {
            (Some(s @ TimeSpec::Offset(_)), _) => s.to_string(),
            (Some(s), Some(ns)) => format!("{s} ({:.3} s)", clock.offset_s(ns)),
            _ => String::new(),
        };
        let (from, to) = (bound(from_spec, self.from_ns), bound(to_spec, self.to_ns));
        let range = match (from_spec.is_some(), to_spec.is_some()) {
            (true, true) => format!("between {from} and {to}"),
            (true, false) => format!("after {from}"),
            _ => format!("before {to}"),
        };
        let (a, b) = self.span.unwrap_or_default();
        format!(
            "no samples {range}; the capture's samples run from {:.3} s to {:.3} s",
            clock.offset_s(a),
            clock.offset_s(b),
        )
    }

    /// Whether a window was asked for.
    pub fn windowed(&self) -> bool {
        self.window.0.is_some() || self.window.1.is_some()
    }
}

impl SampleSink for Tally {
    fn defined(&mut self, capture: &Capture) {
        if self.session_clock.is_none() {
            self.session_clock = capture
                .session
                .as_ref()
                .and_then(|s| Clock::of(Some(s), None));
        }
    }

    fn sample(&mut self, s: &Sample, class: Class, periods: u64) {
        if let Class::OffCpu(state) = class {
            let seen = self.off_cpu_seen.entry(state).or_default();
            seen.0 = seen.0.saturating_add(1);
            seen.1 = seen.1.saturating_add(periods);
        }
        let weight = self.metric.periods(class, periods);
        if weight == 0 {
            return;
        }
        if !self.placed {
            self.place(Some(s.time_ns));
        }
        let (time, tid, stack) = (s.time_ns, s.tid, s.stack);
        self.samples += weight;
        self.span = Some(widen(self.span, time));
        *self.stack_samples.entry(stack).or_default() += weight;
        *self.thread_samples.entry(tid).or_default() += weight;
        if self.from_ns.is_some_and(|f| time < f) || self.to_ns.is_some_and(|t| time > t) {
            return;
        }
        self.window_samples += weight;
        self.window_span = Some(widen(self.window_span, time));
        *self.tally.entry((tid, stack, class)).or_default() += weight;
        if let Some(order) = &mut self.order {
            order.push((time, tid, stack, class, weight));
        }
    }
}

fn widen(span: Option<(u64, u64)>, t: u64) -> (u64, u64) {
    span.map_or((t, t), |(a, b)| (a.min(t), b.max(t)))
}
