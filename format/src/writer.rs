//! Writing a capture: buffers records and samples into blocks, repeats definitions so that one
//! lost block loses only its own samples, and keeps the seek index.

use std::collections::HashMap;
use std::io::Write;

use crate::block;
use crate::codec;
use crate::definitions::def_key;
use crate::error::FormatError;
use crate::header::FileHeader;
use crate::limits::{
    self, MAX_BATCH_SAMPLES, MAX_BLOCK_RECORDS, MAX_RECORD_BODY, MAX_STRING_BYTES,
};
use crate::records::{
    End, Index, IndexEntry, OffCpuBatch, OffCpuSample, Record, Sample, SampleBatch, Scrubbed,
    SessionHeader, StringId,
};
use crate::scrub;

/// A block is written once its buffered raw size passes this.
pub const BLOCK_TARGET_RAW: usize = 1 << 20;
/// A block is written once it buffers this many samples.
pub const BLOCK_MAX_SAMPLES: usize = 65_536;
/// A partial index is written after every this many blocks, and the session header repeated
/// in every block whose sequence number is a multiple of it.
pub const INDEX_EVERY: u64 = 64;
/// The complete index is left out of the final block when its body would be larger (the
/// partial indexes remain).
pub const MAX_COMPLETE_INDEX_BODY: usize = 8 << 20;
/// Rough raw bytes a buffered sample will take, for the auto-flush decision only.
const SAMPLE_RAW_ESTIMATE: usize = 6;
/// Records of one block's own: half the block limit, since the next block repeats them.
const BLOCK_OWN_RECORDS: usize = MAX_BLOCK_RECORDS / 2 - 4;

/// What a [`Writer`] tells its block observer (see [`Writer::observe_blocks`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockEvent {
    /// A block is about to be written; once it is, the capture holds `samples` samples.
    Writing { samples: u64 },
    /// The block's bytes were handed to the output: the capture holds `samples` samples.
    Written { samples: u64 },
}

/// Called around every block write, the automatic ones included.
pub type BlockObserver = Box<dyn FnMut(BlockEvent) + Send>;

/// Writes a capture to any `Write`.
///
/// Dropping a writer without [`finish`](Writer::finish) leaves what a crash would: every
/// block written so far is complete and readable; what was buffered is lost. After an I/O
/// error the writer should be dropped: the failed block may be partly written.
/// `Index` and `End` records are written by the writer itself; pushing them is accepted
/// (they are copied verbatim) but only useful to tools that rewrite captures.
pub struct Writer<W: Write> {
    out: W,
    session: SessionHeader,
    compressor: block::Compressor,
    /// This block's records, in push order.
    body: Vec<u8>,
    body_records: usize,
    /// The definitions among them, encoded, to repeat at the start of the next block.
    defs: Vec<u8>,
    /// The previous block's definitions, repeated at the start of this one.
    prev_defs: Vec<u8>,
    samples: Vec<Sample>,
    /// This block's off-CPU samples (1.3), written after its samples.
    off_cpu: Vec<OffCpuSample>,
    strings: HashMap<String, StringId>,
    next_string: StringId,
    seq: u64,
    bytes_written: u64,
    samples_written: u64,
    /// Every block written so far.
    index: Vec<IndexEntry>,
    /// `index[index_since..]` is not yet covered by a partial index.
    index_since: usize,
    /// An error from `intern`, which cannot return one; reported by the next fallible call.
    deferred: Option<FormatError>,
    scratch: Vec<u8>,
    raw: Vec<u8>,
    payload: Vec<u8>,
    block: Vec<u8>,
    observer: Option<BlockObserver>,
    /// What every record loses on its way out (see [`Writer::scrubbing`]).
    scrub: Option<Scrubbed>,
}

impl<W: Write> std::fmt::Debug for Writer<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("seq", &self.seq)
            .field("bytes_written", &self.bytes_written)
            .field("samples_written", &self.samples_written)
            .field("pending_samples", &self.samples.len())
            .finish_non_exhaustive()
    }
}

impl<W: Write> Writer<W> {
    /// Writes the 16-byte file header now; `session` goes into the first block.
    pub fn new(out: W, session: SessionHeader) -> Result<Self, FormatError> {
        Self::with_scrub(out, session, None)
    }

    /// A writer that scrubs every record it writes of `what` ([`crate::scrub`]'s rule:
    /// the session header, interned strings and pushed records alike) and says so with a
    /// `Scrubbed` record right after the session header.
    pub fn scrubbing(out: W, session: SessionHeader, what: Scrubbed) -> Result<Self, FormatError> {
        Self::with_scrub(out, session, Some(what))
    }

    fn with_scrub(
        mut out: W,
        session: SessionHeader,
        scrub: Option<Scrubbed>,
    ) -> Result<Self, FormatError> {
        let session = match &scrub {
            Some(what) => scrub::session(what, &session),
            None => session,
        };
        limits::check_record(&Record::Session(session.clone()))?;
        let compressor = block::Compressor::new(block::DEFAULT_LEVEL)?;
        let header = FileHeader::default().to_bytes();
        out.write_all(&header)?;
        let mut w = Writer {
            out,
            session: session.clone(),
            compressor,
            body: Vec::new(),
            body_records: 0,
            defs: Vec::new(),
            prev_defs: Vec::new(),
            samples: Vec::new(),
            off_cpu: Vec::new(),
            strings: HashMap::new(),
            next_string: 0,
            seq: 0,
            bytes_written: header.len() as u64,
            samples_written: 0,
            index: Vec::new(),
            index_since: 0,
            deferred: None,
            scratch: Vec::new(),
            raw: Vec::new(),
            payload: Vec::new(),
            block: Vec::new(),
            observer: None,
            scrub,
        };
        w.append(&Record::Session(session))?;
        if let Some(what) = scrub {
            w.append(&Record::Scrubbed(what))?;
        }
        Ok(w)
    }

    /// The id of `text`, emitting a `String` record the first time it is seen. Text longer
    /// than [`MAX_STRING_BYTES`] is cut at a character boundary.
    pub fn intern(&mut self, text: &str) -> StringId {
        if let Some(&id) = self.strings.get(text) {
            return id;
        }
        let id = self.next_string;
        self.next_string = self.next_string.wrapping_add(1);
        self.strings.insert(text.to_owned(), id);
        let record = Record::String {
            id,
            text: truncate_str(text, MAX_STRING_BYTES).to_owned(),
        };
        if let Err(e) = self.append(&record)
            && self.deferred.is_none()
        {
            self.deferred = Some(e);
        }
        id
    }

    /// Adds any record. Definitions are repeated in the next block; a `Samples` record is
    /// split into the block batches like [`push_sample`](Self::push_sample).
    pub fn push(&mut self, record: Record) -> Result<(), FormatError> {
        self.take_deferred()?;
        if let Record::Samples(SampleBatch { samples }) = record {
            return samples.into_iter().try_for_each(|s| self.push_sample(s));
        }
        if let Record::OffCpuSamples(OffCpuBatch { samples }) = record {
            return samples
                .into_iter()
                .try_for_each(|s| self.push_off_cpu_sample(s));
        }
        limits::check_record(&record)?;
        if let Record::String { id, text } = &record {
            // Keep `intern` from handing out this id again or re-emitting this text.
            self.next_string = self.next_string.max(id.saturating_add(1));
            self.strings.entry(text.clone()).or_insert(*id);
        }
        self.append(&record)?;
        self.maybe_flush()
    }

    /// Buffers one sample into the current block's batch.
    pub fn push_sample(&mut self, sample: Sample) -> Result<(), FormatError> {
        self.take_deferred()?;
        self.samples.push(sample);
        self.maybe_flush()
    }

    /// Buffers one off-CPU sample into the current block's off-CPU batch. `periods` must
    /// be at least 1 (a reader rejects a batch holding a 0).
    pub fn push_off_cpu_sample(&mut self, sample: OffCpuSample) -> Result<(), FormatError> {
        self.take_deferred()?;
        if sample.periods == 0 {
            return Err(FormatError::Limit {
                what: "off-CPU sample periods (at least 1)",
                value: 0,
                max: u64::from(u32::MAX),
            });
        }
        self.off_cpu.push(sample);
        self.maybe_flush()
    }

    /// Compresses and writes the current block if it holds anything new, then flushes `out`.
    pub fn flush_block(&mut self) -> Result<(), FormatError> {
        self.take_deferred()?;
        if self.body_records > 0 || !self.samples.is_empty() || !self.off_cpu.is_empty() {
            self.write_block(false, None)?;
        }
        self.out.flush()?;
        Ok(())
    }

    /// Calls `observer` before and after each block is written, so a test (or a debug log)
    /// knows exactly which sample counts a capture cut off at any moment can hold.
    pub fn observe_blocks(&mut self, observer: BlockObserver) {
        self.observer = Some(observer);
    }

    /// Samples buffered and not yet written.
    pub fn pending_samples(&self) -> usize {
        self.samples.len()
    }

    /// Bytes written to `out` so far, file header included.
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written
    }

    /// Samples written to `out` so far (not counting pending ones).
    pub fn samples_written(&self) -> u64 {
        self.samples_written
    }

    /// Writes the pending block, then a final block with the complete index and the `End`
    /// record, flushes, and hands back `out`.
    pub fn finish(
        mut self,
        end_wall_ns: u64,
        end_mono_ns: u64,
        lost_total: u64,
    ) -> Result<W, FormatError> {
        self.flush_block()?;
        let end = End {
            samples: self.samples_written,
            lost: lost_total,
            blocks: self.seq + 1,
            end_wall_ns,
            end_mono_ns,
        };
        self.write_block(true, Some(end))?;
        self.out.flush()?;
        Ok(self.out)
    }

    /// Writes what is buffered and hands back `out` without an `End`: the capture reads as
    /// one cut off here (for a rewrite of a capture that was).
    pub fn unfinished(mut self) -> Result<W, FormatError> {
        self.flush_block()?;
        Ok(self.out)
    }

    pub fn get_ref(&self) -> &W {
        &self.out
    }

    fn take_deferred(&mut self) -> Result<(), FormatError> {
        match self.deferred.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// What this writer scrubs from every record, if it scrubs.
    pub fn scrubbed(&self) -> Option<Scrubbed> {
        self.scrub
    }

    /// Encodes `record` (scrubbed, for a scrubbing writer) into the current block (and
    /// its definitions list).
    fn append(&mut self, record: &Record) -> Result<(), FormatError> {
        let record = match &self.scrub {
            // The session header was scrubbed once, at construction.
            Some(what) if !matches!(record, Record::Session(_)) => scrub::record(what, record),
            _ => std::borrow::Cow::Borrowed(record),
        };
        let record = record.as_ref();
        let start = self.body.len();
        codec::encode_record(record, &mut self.body, &mut self.scratch)?;
        if self.scratch.len() > MAX_RECORD_BODY {
            self.body.truncate(start);
            return Err(FormatError::Limit {
                what: "record body size",
                value: self.scratch.len() as u64,
                max: MAX_RECORD_BODY as u64,
            });
        }
        self.body_records += 1;
        if def_key(record).is_some() {
            self.defs.extend_from_slice(&self.body[start..]);
        }
        Ok(())
    }

    fn maybe_flush(&mut self) -> Result<(), FormatError> {
        let buffered = self.samples.len() + self.off_cpu.len();
        let raw_estimate = self.prev_defs.len() + self.body.len() + buffered * SAMPLE_RAW_ESTIMATE;
        if buffered >= BLOCK_MAX_SAMPLES
            || raw_estimate >= BLOCK_TARGET_RAW
            || self.body_records >= BLOCK_OWN_RECORDS
        {
            self.flush_block()?;
        }
        Ok(())
    }

    /// Assembles and writes one block: session (every 64th), the previous block's
    /// definitions, a pending partial index, this block's records, its samples. The final
    /// block carries the complete index and `end` instead of a partial index.
    fn write_block(&mut self, last: bool, end: Option<End>) -> Result<(), FormatError> {
        debug_assert!(self.samples.len() + self.off_cpu.len() <= MAX_BATCH_SAMPLES as usize);
        let mut raw = std::mem::take(&mut self.raw);
        raw.clear();
        if self.seq > 0 && self.seq.is_multiple_of(INDEX_EVERY) {
            codec::encode_record(
                &Record::Session(self.session.clone()),
                &mut raw,
                &mut self.scratch,
            )?;
        }
        raw.extend_from_slice(&self.prev_defs);
        if last {
            let index = Record::Index(Index {
                complete: true,
                entries: self.index.clone(),
            });
            let before = raw.len();
            codec::encode_record(&index, &mut raw, &mut self.scratch)?;
            if self.scratch.len() > MAX_COMPLETE_INDEX_BODY {
                raw.truncate(before);
            }
        } else if self.index.len() - self.index_since >= INDEX_EVERY as usize {
            let index = Record::Index(Index {
                complete: false,
                entries: self.index[self.index_since..].to_vec(),
            });
            codec::encode_record(&index, &mut raw, &mut self.scratch)?;
            self.index_since = self.index.len();
        }
        raw.extend_from_slice(&self.body);
        let mut splits = Vec::new();
        let mut entry = IndexEntry {
            offset: self.bytes_written,
            seq: self.seq,
            ..IndexEntry::default()
        };
        // The time range covers both kinds of samples, so that seeking to a time finds
        // the off-CPU samples there too; `samples` counts the CPU samples only, as before.
        let times = self
            .samples
            .iter()
            .map(|s| s.time_ns)
            .chain(self.off_cpu.iter().map(|s| s.sample.time_ns));
        entry.first_ns = times.clone().min().unwrap_or(0);
        entry.last_ns = times.max().unwrap_or(0);
        if !self.samples.is_empty() {
            entry.samples = self.samples.len() as u32;
            splits = codec::encode_samples(&self.samples, &mut raw, &mut self.scratch);
        }
        if !self.off_cpu.is_empty() {
            let batch = Record::OffCpuSamples(OffCpuBatch {
                samples: std::mem::take(&mut self.off_cpu),
            });
            codec::encode_record(&batch, &mut raw, &mut self.scratch)?;
        }
        if let Some(end) = end {
            codec::encode_record(&Record::End(end), &mut raw, &mut self.scratch)?;
        }
        self.block.clear();
        let encoded = block::encode_block(
            &mut self.compressor,
            self.seq,
            &raw,
            &splits,
            &mut self.payload,
            &mut self.block,
        );
        self.raw = raw;
        encoded?;
        let after = self.samples_written + self.samples.len() as u64;
        if let Some(observe) = &mut self.observer {
            observe(BlockEvent::Writing { samples: after });
        }
        self.out.write_all(&self.block)?;
        if let Some(observe) = &mut self.observer {
            observe(BlockEvent::Written { samples: after });
        }

        self.bytes_written += self.block.len() as u64;
        self.samples_written = after;
        self.index.push(entry);
        self.seq += 1;
        self.samples.clear();
        std::mem::swap(&mut self.prev_defs, &mut self.defs);
        self.defs.clear();
        self.body.clear();
        self.body_records = 0;
        Ok(())
    }
}

fn truncate_str(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}
