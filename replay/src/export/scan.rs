//! One pass over a capture file for the headless outputs: definitions go into a
//! [`Capture`] (whose `samples` stays empty), samples are tallied per (thread, stack) as
//! they stream past, and every record's encoded size is measured for `info`.
//!
//! Memory is proportional to the distinct stacks and threads, not to the samples (the
//! file's compressed bytes are read whole, as [`Capture::open`] does). Only
//! [`ScanOptions::keep_order`] keeps one entry per sample, for speedscope's time-ordered view.

use std::collections::BTreeMap;
use std::path::Path;

use hotspot_format::codec::encode_record;
use hotspot_format::{Block, Event, Reader, Record, StackId};

use super::error::ExportError;
use super::time::{Clock, TimeSpec};
use crate::capture::Capture;
use crate::error::ReplayError;

/// What to keep while reading.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScanOptions {
    /// Samples before this are not tallied.
    pub from: Option<TimeSpec>,
    /// Samples after this are not tallied.
    pub to: Option<TimeSpec>,
    /// Keep every tallied sample as (time, tid, stack), in file order.
    pub keep_order: bool,
    /// Measure each record kind's encoded size ([`Scan::sizes`]) by re-encoding every
    /// record: `info` wants it, reports need not pay for it.
    pub measure_sizes: bool,
}

/// How much of the file one record kind takes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KindSize {
    pub records: u64,
    /// Encoded size before compression (framing included), measured by re-encoding each
    /// record with the format's codec.
    pub raw_bytes: u64,
    /// The kind's share of the blocks' bytes on disk (32-byte block headers included):
    /// each block's length split by the kinds' raw shares within it. An estimate, since
    /// zstd compresses some records better than others.
    pub disk_bytes: u64,
}

/// The file's size broken down by what holds it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sizes {
    pub file: u64,
    /// The 16-byte file header.
    pub file_header: u64,
    /// Record kind → its size.
    pub kinds: BTreeMap<u32, KindSize>,
    /// Bytes of valid blocks that hold no known record (only unknown kinds).
    pub unattributed: u64,
    /// Bytes skipped as corrupt or dropped as a torn tail.
    pub damaged: u64,
}

/// A capture read for reporting.
#[derive(Debug, Default)]
pub struct Scan {
    /// Every definition; `samples` is empty (see the tallies below).
    pub capture: Capture,
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
    /// Samples per stack, whole file.
    pub stack_samples: BTreeMap<StackId, u64>,
    /// Samples per thread, whole file.
    pub thread_samples: BTreeMap<u32, u64>,
    /// Samples inside the window per (tid, stack).
    pub tally: BTreeMap<(u32, StackId), u64>,
    /// Samples inside the window.
    pub window_samples: u64,
    /// (first, last) sample time inside the window.
    pub window_span: Option<(u64, u64)>,
    /// With [`ScanOptions::keep_order`]: (time, tid, stack) of each sample in the window.
    pub order: Option<Vec<(u64, u32, StackId)>>,
    pub sizes: Sizes,
}

impl Scan {
    /// Reads the capture at `path`. `progress` is told (bytes read, file size) after each
    /// block.
    pub fn open(
        path: &Path,
        options: ScanOptions,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<Scan, ExportError> {
        let io = |source| ReplayError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        // Checked on the file opened, not the path: nothing can swap it in between.
        let meta = file.metadata().map_err(io)?;
        ReplayError::check_file(path, &meta)?;
        // A finished capture is mapped, not read into memory, and the pages already
        // decoded are handed back as the scan moves on: memory then follows what the
        // capture defines, not how many samples it holds.
        // SAFETY: the mapping is read-only and only read while this function runs. The
        // recorder only ever appends (what is past the mapped length is not seen); a
        // file truncated under us by something else would fault, mmap's known hazard.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        let _ = map.advise(memmap2::Advice::Sequential);
        const PAGE: usize = 4096;
        let mut released = 0usize;
        let mut progress = |done: u64, total: u64| {
            progress(done, total);
            let upto = usize::try_from(done).unwrap_or(usize::MAX).min(map.len()) / PAGE * PAGE;
            if upto > released {
                // SAFETY: DONTNEED on a private, unmodified file mapping only drops our
                // copy of pages the reader has finished with (it decodes into owned
                // records and never looks back); a later access would read them again.
                let _ = unsafe {
                    map.unchecked_advise_range(
                        memmap2::UncheckedAdvice::DontNeed,
                        released,
                        upto - released,
                    )
                };
                released = upto;
            }
        };
        let mut scan = Scan::from_bytes(&map, options, &mut progress).map_err(|e| match e {
            ExportError::Replay(r) => ExportError::Replay(r.with_path(path)),
            other => other,
        })?;
        scan.capture.path = path.to_path_buf();
        Ok(scan)
    }

    /// Reads a capture held in memory.
    pub fn from_bytes(
        data: &[u8],
        options: ScanOptions,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<Scan, ExportError> {
        let mut reader = Reader::new(data).map_err(ReplayError::from)?;
        let header = reader.header();
        let mut capture = Capture::default();
        capture.version = (header.major, header.minor);
        capture.file_size = data.len() as u64;
        let mut scan = Scan {
            capture,
            order: options.keep_order.then(Vec::new),
            sizes: Sizes {
                file: data.len() as u64,
                file_header: reader.position(),
                ..Sizes::default()
            },
            ..Scan::default()
        };
        let total = data.len() as u64;
        let mut scratch = (Vec::new(), Vec::new());
        while let Some(event) = reader.next() {
            let end = reader.position();
            match event {
                Event::Block(block) => scan.block(block, end, &options, &mut scratch)?,
                Event::Corrupt { skipped_bytes, .. } => {
                    scan.sizes.damaged += skipped_bytes;
                    scan.capture.apply(event);
                }
                Event::Truncated { dropped_bytes, .. } => {
                    scan.sizes.damaged += dropped_bytes;
                    scan.capture.apply(event);
                }
            }
            progress(end, total);
        }
        if scan.clock.is_none() {
            scan.set_clock(None, &options)?;
        }
        if (options.from.is_some() || options.to.is_some())
            && scan.window_samples == 0
            && scan.samples > 0
        {
            return Err(ExportError::EmptyRange(scan.empty_range_message(&options)));
        }
        Ok(scan)
    }

    /// Takes one block apart: samples into the tallies, everything else into the capture.
    fn block(
        &mut self,
        block: Block,
        end: u64,
        options: &ScanOptions,
        scratch: &mut (Vec<u8>, Vec<u8>),
    ) -> Result<(), ExportError> {
        let mut raw: BTreeMap<u32, u64> = BTreeMap::new();
        let mut definitions = Vec::with_capacity(block.records.len());
        let mut batches = Vec::new();
        for record in block.records {
            scratch.0.clear();
            // Encoding what was just decoded cannot fail; a failure only loses the figure.
            if options.measure_sizes
                && encode_record(&record, &mut scratch.0, &mut scratch.1).is_ok()
            {
                *raw.entry(record.kind()).or_default() += scratch.0.len() as u64;
            }
            self.sizes.kinds.entry(record.kind()).or_default().records += 1;
            match record {
                Record::Samples(batch) => batches.push(batch),
                other => definitions.push(other),
            }
        }
        if options.measure_sizes {
            self.apportion(&raw, end.saturating_sub(block.offset));
        }
        // Definitions first: the session header that places the time window may share
        // its block with the first samples.
        self.capture.apply(Event::Block(Block {
            records: definitions,
            ..block
        }));
        for batch in batches {
            *self
                .capture
                .record_counts
                .entry(hotspot_format::kind::SAMPLES)
                .or_default() += 1;
            for s in batch.samples {
                if self.clock.is_none() {
                    self.set_clock(Some(s.time_ns), options)?;
                }
                self.sample(s.time_ns, s.tid, s.stack);
            }
        }
        Ok(())
    }

    fn sample(&mut self, time: u64, tid: u32, stack: StackId) {
        self.samples += 1;
        self.span = Some(widen(self.span, time));
        *self.stack_samples.entry(stack).or_default() += 1;
        *self.thread_samples.entry(tid).or_default() += 1;
        if self.from_ns.is_some_and(|f| time < f) || self.to_ns.is_some_and(|t| time > t) {
            return;
        }
        self.window_samples += 1;
        self.window_span = Some(widen(self.window_span, time));
        *self.tally.entry((tid, stack)).or_default() += 1;
        if let Some(order) = &mut self.order {
            order.push((time, tid, stack));
        }
    }

    /// Places the window once the clock is known: at the first sample (the session header
    /// comes before any), or at the end for a capture without samples.
    fn set_clock(
        &mut self,
        first_sample: Option<u64>,
        options: &ScanOptions,
    ) -> Result<(), ExportError> {
        let clock = match (&self.capture.session, first_sample) {
            (Some(s), _) => Some(Clock {
                start_mono_ns: s.start_mono_ns,
                start_wall_ns: Some(s.start_wall_ns),
            }),
            (None, Some(t)) => Some(Clock {
                start_mono_ns: t,
                start_wall_ns: None,
            }),
            (None, None) => None,
        };
        let Some(clock) = clock else {
            return Ok(());
        };
        self.clock = Some(clock);
        self.from_ns = options.from.map(|f| f.resolve(&clock)).transpose()?;
        self.to_ns = options.to.map(|t| t.resolve(&clock)).transpose()?;
        if let (Some(f), Some(t)) = (self.from_ns, self.to_ns)
            && f >= t
        {
            let at = |spec: Option<TimeSpec>, ns: u64| match spec {
                Some(s @ TimeSpec::Offset(_)) => s.to_string(),
                Some(s) => format!("{s} ({:.3} s)", clock.offset_s(ns)),
                None => String::new(),
            };
            return Err(ExportError::EmptyRange(format!(
                "--from {} is not before --to {}",
                at(options.from, f),
                at(options.to, t),
            )));
        }
        Ok(())
    }

    fn empty_range_message(&self, options: &ScanOptions) -> String {
        let clock = self.clock.unwrap_or(Clock {
            start_mono_ns: 0,
            start_wall_ns: None,
        });
        let bound = |spec: Option<TimeSpec>, ns: Option<u64>| match (spec, ns) {
            (Some(s @ TimeSpec::Offset(_)), _) => s.to_string(),
            (Some(s), Some(ns)) => format!("{s} ({:.3} s)", clock.offset_s(ns)),
            _ => String::new(),
        };
        let (from, to) = (
            bound(options.from, self.from_ns),
            bound(options.to, self.to_ns),
        );
        let range = match (options.from.is_some(), options.to.is_some()) {
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

    /// Splits a block's bytes on disk among its record kinds by their raw sizes; the
    /// rounding remainder goes to the kind with the most raw bytes.
    fn apportion(&mut self, raw: &BTreeMap<u32, u64>, disk: u64) {
        let total: u64 = raw.values().sum();
        if total == 0 {
            self.sizes.unattributed += disk;
            return;
        }
        let mut given = 0;
        for (&kind, &r) in raw {
            let share = (u128::from(disk) * u128::from(r) / u128::from(total)) as u64;
            let k = self.sizes.kinds.entry(kind).or_default();
            k.raw_bytes += r;
            k.disk_bytes += share;
            given += share;
        }
        let biggest = raw
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .map(|(k, _)| *k);
        if let Some(k) = biggest.and_then(|k| self.sizes.kinds.get_mut(&k)) {
            k.disk_bytes += disk - given;
        }
    }

    /// Monotonic ns of the start, for offsets in output.
    pub fn start_ns(&self) -> u64 {
        self.clock.map_or(0, |c| c.start_mono_ns)
    }
}

fn widen(span: Option<(u64, u64)>, t: u64) -> (u64, u64) {
    span.map_or((t, t), |(a, b)| (a.min(t), b.max(t)))
}
