//! The recording loop: polls an [`EventSource`], hands what it drains to the
//! [`Converter`], and paces the capture: a block a second (the first sooner), the
//! source's lost counts with each, names as they come, the stop rules (a flag, a
//! duration, every target gone), and a flight recorder's segments. [`Recorder`] is what
//! is set up before sampling starts; [`Recorder::run`] (or [`Recorder::run_segments`]) is
//! the loop.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hotspot_format::Writer;

use crate::convert::{ConvertConfig, Converter, Core, Counts, Totals};
use crate::error::RecorderError;
use crate::host::Host;
use crate::source::EventSource;

/// What to record and how.
#[derive(Debug, Clone)]
pub struct RecordConfig {
    /// What the core is told (targets, unwinding, off-CPU).
    pub convert: ConvertConfig,
    pub duration: Option<Duration>,
    /// How often a block is flushed (at most about this much is lost on a kill).
    pub flush_every: Duration,
}

impl Default for RecordConfig {
    fn default() -> Self {
        RecordConfig {
            convert: ConvertConfig::default(),
            duration: None,
            flush_every: Duration::from_secs(1),
        }
    }
}

/// Where a recording stands, reported about once a block.
#[derive(Debug, Clone, Copy, Default)]
pub struct Progress {
    pub elapsed: Duration,
    pub counts: Counts,
    /// Bytes written.
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
#[derive(Debug, Clone, Copy)]
pub struct Summary {
    pub reason: StopReason,
    pub elapsed: Duration,
    /// What the capture holds.
    pub totals: Totals,
}

/// Everything a recording needs that takes time to set up (the symbol worker): built
/// before sampling starts, so the first events are handled at once and a short-lived
/// target's entries are still there to ask about.
#[derive(Debug)]
pub struct Recorder {
    cfg: RecordConfig,
    core: Core,
}

impl Recorder {
    /// Sets up a recording of the events of the machine `host` answers for.
    pub fn new(cfg: RecordConfig, host: Box<dyn Host>) -> Result<Self, RecorderError> {
        let core = Core::new(cfg.convert.clone(), host)?;
        Ok(Recorder { cfg, core })
    }

    /// Asks the host about a target now (see [`Core::track`]).
    pub fn track(&mut self, pid: u32) {
        self.core.track(pid);
    }

    /// Asks the host about a command the recorder started (see [`Core::track_command`]).
    pub fn track_command(&mut self, pid: u32) {
        self.core.track_command(pid);
    }

    /// Records until stopped; returns the summary and the finished output.
    pub fn run<S: EventSource, W: Write>(
        self,
        source: &mut S,
        writer: Writer<W>,
        stop: &AtomicBool,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<(Summary, W), RecorderError> {
        self.record(source, writer, None, stop, on_progress)
    }

    /// Records a flight recorder's history until stopped: a segment every
    /// `segments.length()`, each a whole capture (see [`Converter::next_capture`]), all
    /// from one set-up. The summary is the last segment's.
    pub fn run_segments<S: EventSource, W: Write>(
        self,
        source: &mut S,
        segments: &mut dyn Segments<W>,
        stop: &AtomicBool,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<Summary, RecorderError> {
        let first = segments.start()?;
        let (summary, out) = self.record(source, first, Some(segments), stop, on_progress)?;
        segments.ended(out, &summary.totals)?;
        Ok(summary)
    }

    fn record<S: EventSource, W: Write>(
        self,
        source: &mut S,
        writer: Writer<W>,
        mut segments: Option<&mut dyn Segments<W>>,
        stop: &AtomicBool,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<(Summary, W), RecorderError> {
        let Recorder { cfg, core } = self;
        let start = Instant::now();
        let mut segment_start = start;
        let mut conv = Converter::new(core, writer)?;
        let flush_every = cfg.flush_every;
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
            if cfg.duration.is_some_and(|d| start.elapsed() >= d) {
                break StopReason::Duration;
            }
            let until_flush = flush_every.saturating_sub(last_flush.elapsed());
            // A process that may be Python and is not decided yet is asked about at
            // every poll, and polls come every 5 ms meanwhile: a short script is
            // registered in its first milliseconds, not a poll later.
            let waiting = conv.recheck_pythons()?;
            python_registrations(&mut conv, source)?;
            // A Python process walked for a few seconds only may be a short script, whose
            // code objects must be read before it exits: every 100 ms then. Otherwise
            // nothing is due before the next flush or the end: the rings wake the
            // recorder when a quarter full, and the end of a chosen target at once
            // (hs_exit). Waking every 100 ms always cost an idle box 0.02% of a CPU.
            let until_end = cfg
                .duration
                .map_or(Duration::MAX, |d| d.saturating_sub(start.elapsed()));
            let most = if waiting {
                Duration::from_millis(5)
            } else if conv.python_starting() {
                Duration::from_millis(100)
            } else {
                until_end
            };
            let until_segment = segments.as_ref().map_or(Duration::MAX, |s| {
                s.length().saturating_sub(segment_start.elapsed())
            });
            source.poll(until_flush.min(most).min(until_segment), &mut events)?;
            handle_walking(&mut conv, &mut events, source)?;
            // Names travel continuously rather than once per flush, so a block usually
            // carries the names of its own new frames: a killed recorder keeps them.
            conv.exchange_symbols()?;
            if last_flush.elapsed() >= flush_every {
                last_flush = Instant::now();
                conv.take_marks()?;
                flush(&mut conv, source)?;
                conv.handle_lost_mappings(source.lost_mapping_events())?;
                conv.forget_exited_targets();
                on_progress(&progress(&conv, start));
            }
            // Not when the recording ends here: the next segment would be empty.
            if let Some(segs) = segments.as_deref_mut()
                && segment_start.elapsed() >= segs.length()
                && !conv.targets_gone()
                && !stop.load(Ordering::Relaxed)
                && cfg.duration.is_none_or(|d| start.elapsed() < d)
            {
                end_segment(
                    &mut conv,
                    source,
                    segs,
                    cfg.convert.off_cpu_period_ns.is_some(),
                )?;
                segment_start = Instant::now();
                // The next segment's first block goes out soon, as a first capture's does.
                last_flush = Instant::now()
                    .checked_sub(flush_every - first)
                    .unwrap_or_else(Instant::now);
            }
            if conv.targets_gone() {
                break StopReason::TargetsExited;
            }
        };
        // Sampling stops first, so the lost counters read by the last flush are final (the
        // capture's lost count is then exactly the source's). A failure to detach must not
        // cost the capture its end: the links go when the source is dropped anyway.
        let _ = source.stop_sampling();
        conv.handle_accounting_end(source.accounting_end());
        // What is already buffered still belongs to the recording. One drain takes a whole
        // ring's worth; a second picks up what arrived meanwhile (task events).
        for _ in 0..3 {
            source.poll(Duration::ZERO, &mut events)?;
            if events.is_empty() {
                break;
            }
            handle(&mut conv, &mut events)?;
        }
        if cfg.convert.off_cpu_period_ns.is_some() {
            // Taken out of the source, then one more drain for the exits written before.
            let live = source.take_thread_times()?;
            source.poll(Duration::ZERO, &mut events)?;
            handle(&mut conv, &mut events)?;
            conv.handle_live_threads(live)?;
        }
        conv.handle_lost_mappings(source.lost_mapping_events())?;
        conv.take_marks()?;
        flush(&mut conv, source)?;
        let (totals, out) = conv.finish()?;
        let summary = Summary {
            reason,
            elapsed: start.elapsed(),
            totals,
        };
        Ok((summary, out))
    }
}

/// Where a flight recorder's segments go: [`Recorder::run_segments`] ends one and starts
/// the next every [`Segments::length`].
pub trait Segments<W: Write> {
    /// How long a segment lasts.
    fn length(&self) -> Duration;
    /// The writer of a segment starting now, its session header written.
    fn start(&mut self) -> Result<Writer<W>, RecorderError>;
    /// A segment is finished: its output, and what it holds.
    fn ended(&mut self, out: W, totals: &Totals) -> Result<(), RecorderError>;
}

/// Ends the current segment and goes on in the next: what the source counted for it (its
/// lost counts, and with `off_cpu` the live threads' times) is written to it first.
fn end_segment<S: EventSource, W: Write>(
    conv: &mut Converter<W>,
    source: &mut S,
    segments: &mut dyn Segments<W>,
    off_cpu: bool,
) -> Result<(), RecorderError> {
    conv.take_marks()?;
    conv.handle_lost_mappings(source.lost_mapping_events())?;
    if off_cpu {
        // The end first: a thread's state is known from its last switch to its read.
        let end = conv.now_ns();
        let live = source.thread_times_now()?;
        conv.handle_segment_threads(live, end)?;
    }
    flush(conv, source)?;
    let next = segments.start()?;
    let (totals, out) = conv.next_capture(next)?;
    segments.ended(out, &totals)
}

/// Sets up a [`Recorder`] and runs it (for callers with nothing to track up front).
pub fn run<S: EventSource, W: Write>(
    source: &mut S,
    writer: Writer<W>,
    cfg: &RecordConfig,
    host: Box<dyn Host>,
    stop: &AtomicBool,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<(Summary, W), RecorderError> {
    Recorder::new(cfg.clone(), host)?.run(source, writer, stop, on_progress)
}

/// Hands a batch of events (in time order) to the converter, leaving `events` empty.
fn handle<W: Write>(
    conv: &mut Converter<W>,
    events: &mut Vec<crate::event::Event>,
) -> Result<(), RecorderError> {
    for ev in events.drain(..) {
        conv.handle(ev)?;
    }
    Ok(())
}

/// [`handle`], telling the source of each process to walk as Python as soon as it is
/// decided: every sample it takes before is one without Python frames.
fn handle_walking<S: EventSource, W: Write>(
    conv: &mut Converter<W>,
    events: &mut Vec<crate::event::Event>,
    source: &mut S,
) -> Result<(), RecorderError> {
    for ev in events.drain(..) {
        conv.handle(ev)?;
        if conv.python_registrations_pending() {
            python_registrations(conv, source)?;
        }
    }
    Ok(())
}

/// Tells the source which processes to walk as Python, as the converter decided.
fn python_registrations<S: EventSource, W: Write>(
    conv: &mut Converter<W>,
    source: &mut S,
) -> Result<(), RecorderError> {
    for (pid, entry) in conv.take_python_registrations() {
        source.walk_python(pid, entry.as_ref())?;
    }
    Ok(())
}

/// Sends new frames to the symboliser, writes the names that came back and the source's
/// lost counts, and flushes a block.
fn flush<S: EventSource, W: Write>(
    conv: &mut Converter<W>,
    source: &mut S,
) -> Result<(), RecorderError> {
    conv.exchange_symbols()?;
    conv.handle_lost_samples(&source.lost_per_cpu()?)?;
    conv.handle_lost_off_cpu(source.lost_off_cpu()?)?;
    conv.flush_block()
}

fn progress<W: Write>(conv: &Converter<W>, start: Instant) -> Progress {
    Progress {
        elapsed: start.elapsed(),
        counts: conv.counts(),
        bytes: conv.bytes_written(),
    }
}
