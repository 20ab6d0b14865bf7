//! One pass over a capture file for the headless outputs: [`Capture::ingest`] puts the
//! definitions into a [`Capture`] (whose `samples` stays empty) and the samples into a
//! [`Tally`], and every record's encoded size is measured for `info`.
//!
//! Memory is proportional to the distinct stacks and threads, not to the samples (the
//! file's compressed bytes are read whole, as [`Capture::open`] does). Only
//! [`ScanOptions::keep_order`] keeps one entry per sample, for speedscope's time-ordered view.

use std::collections::BTreeMap;
use std::path::Path;

use hotspot_format::codec::encode_record;
use hotspot_format::{Block, Event, Reader};

use super::error::ExportError;
use crate::capture::Capture;
use crate::error::ReplayError;
use crate::metric::Metric;
use crate::tally::Tally;
use crate::time::{TimeError, TimeSpec};

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
    /// What the tally counts.
    pub metric: Metric,
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

/// A capture read for reporting: its definitions, its samples tallied, its sizes. The
/// tally's fields read as the scan's own (`scan.samples`, `scan.tally`, `scan.clock`…).
#[derive(Debug, Default)]
pub struct Scan {
    /// Every definition; `samples` is empty (see [`Scan::counts`]).
    pub capture: Capture,
    /// The samples, summed per (thread, stack), whole file and inside the window.
    pub counts: Tally,
    pub sizes: Sizes,
}

impl std::ops::Deref for Scan {
    type Target = Tally;

    fn deref(&self) -> &Tally {
        &self.counts
    }
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
        let file = match crate::file::open_capture(path)? {
            crate::file::Source::File(f, _) => f,
            crate::file::Source::History(data) => {
                let mut scan = Scan::from_bytes(&data, options, progress).map_err(|e| match e {
                    ExportError::Replay(r) => ExportError::Replay(r.with_path(path)),
                    other => other,
                })?;
                scan.capture.path = path.to_path_buf();
                return Ok(scan);
            }
        };
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
            counts: Tally::new(options.from, options.to, options.keep_order, options.metric),
            sizes: Sizes {
                file: data.len() as u64,
                file_header: reader.position(),
                ..Sizes::default()
            },
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
        scan.counts.finish(&scan.capture)?;
        if scan.counts.windowed() && scan.window_samples == 0 && scan.samples > 0 {
            return Err(TimeError::EmptyRange(scan.counts.empty_range_message()).into());
        }
        Ok(scan)
    }

    /// Measures one block's records, then hands it to the capture: definitions into its
    /// tables, samples into the tally.
    fn block(
        &mut self,
        block: Block,
        end: u64,
        options: &ScanOptions,
        scratch: &mut (Vec<u8>, Vec<u8>),
    ) -> Result<(), ExportError> {
        let mut raw: BTreeMap<u32, u64> = BTreeMap::new();
        for record in &block.records {
            scratch.0.clear();
            // Encoding what was just decoded cannot fail; a failure only loses the figure.
            if options.measure_sizes
                && encode_record(record, &mut scratch.0, &mut scratch.1).is_ok()
            {
                *raw.entry(record.kind()).or_default() += scratch.0.len() as u64;
            }
            self.sizes.kinds.entry(record.kind()).or_default().records += 1;
        }
        if options.measure_sizes {
            self.apportion(&raw, end.saturating_sub(block.offset));
        }
        self.capture.ingest(Event::Block(block), &mut self.counts);
        match self.counts.take_error() {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
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
