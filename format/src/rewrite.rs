//! Rewriting a capture through a new [`Writer`]: every record read, definitions once
//! (the new writer repeats them as it always does), samples in their order, the end as
//! the original had it. With a scrubbing writer this is `hotspot scrub`; the profile of
//! the copy equals the original's, whatever the block boundaries.

use std::io::Write;

use crate::definitions::Dedup;
use crate::error::FormatError;
use crate::reader::{Event, Reader};
use crate::records::{End, Record, Scrubbed, SessionHeader};
use crate::writer::Writer;

/// What a rewrite read and wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rewritten {
    /// The original ended cleanly (so the copy does too); otherwise the copy is cut
    /// where the original was.
    pub finished: bool,
    /// Damaged regions of the original skipped (their records are not in the copy).
    pub corrupt_regions: u64,
    /// Records of kinds this version does not know, dropped: they may hold what a scrub
    /// is meant to remove.
    pub unknown_records: u64,
    /// What the copy says was scrubbed: what this rewrite removed, with what the original
    /// had removed already.
    pub scrubbed: Scrubbed,
}

/// How many valid blocks are read looking for the session header before the copy starts
/// with an empty one: the writer puts it in block 0 and repeats it in block 1.
const SESSION_WITHIN_BLOCKS: u64 = 2;

/// Rewrites the capture `data` into `out`, scrubbed of `what`.
pub fn scrubbed<W: Write>(
    data: &[u8],
    out: W,
    what: Scrubbed,
) -> Result<(W, Rewritten), FormatError> {
    let mut stats = Rewritten::default();
    let mut dedup = Dedup::new();
    let mut copy = Copying::Starting {
        out,
        early: Vec::new(),
        session: None,
        before: Scrubbed::default(),
    };
    let mut blocks = 0u64;
    let mut end: Option<End> = None;
    for event in Reader::new(data)? {
        let block = match event {
            Event::Block(b) => b,
            Event::Corrupt { .. } => {
                stats.corrupt_regions += 1;
                continue;
            }
            Event::Truncated { .. } => continue,
        };
        blocks += 1;
        stats.unknown_records += block
            .unknown_kinds
            .iter()
            .map(|&(_, n)| u64::from(n))
            .sum::<u64>();
        for record in block.records {
            if !dedup.keep(&record) {
                continue;
            }
            match record {
                // The new writer writes its own.
                Record::Index(_) => {}
                Record::End(e) => end = Some(e),
                r => copy.take(r)?,
            }
        }
        if blocks >= SESSION_WITHIN_BLOCKS || copy.has_session() {
            copy = copy.start(what, &mut stats)?;
        }
    }
    let Copying::Writing(w) = copy.start(what, &mut stats)? else {
        return Err(FormatError::NotACapture {
            reason: "no block to rewrite",
        });
    };
    stats.finished = end.is_some();
    let out = match end {
        Some(e) => w.finish(e.end_wall_ns, e.end_mono_ns, e.lost)?,
        None => w.unfinished()?,
    };
    Ok((out, stats))
}

/// The copy: before its writer exists (the session header and what the original had
/// scrubbed are not known yet), then writing.
enum Copying<W: Write> {
    Starting {
        out: W,
        /// Records read before the session header.
        early: Vec<Record>,
        session: Option<SessionHeader>,
        /// What the original had scrubbed.
        before: Scrubbed,
    },
    /// Boxed: a writer is large beside the few fields of `Starting`.
    Writing(Box<Writer<W>>),
}

impl<W: Write> Copying<W> {
    fn has_session(&self) -> bool {
        matches!(
            self,
            Copying::Starting {
                session: Some(_),
                ..
            }
        )
    }

    /// One record of the original.
    fn take(&mut self, record: Record) -> Result<(), FormatError> {
        match (self, record) {
            (Copying::Starting { session, .. }, Record::Session(s)) => {
                session.get_or_insert(s);
            }
            (Copying::Starting { before, .. }, Record::Scrubbed(s)) => *before = before.union(s),
            (Copying::Starting { early, .. }, r) => early.push(r),
            // Said once, by the new writer, with what it removed too.
            (Copying::Writing(_), Record::Scrubbed(_)) => {}
            (Copying::Writing(w), r) => w.push(r)?,
        }
        Ok(())
    }

    /// The writer, started now if it was not (with an empty header if none was read).
    fn start(self, what: Scrubbed, stats: &mut Rewritten) -> Result<Self, FormatError> {
        let Copying::Starting {
            out,
            early,
            session,
            before,
        } = self
        else {
            return Ok(self);
        };
        stats.scrubbed = what.union(before);
        let mut w = Writer::scrubbing(out, session.unwrap_or_default(), stats.scrubbed)?;
        for r in early {
            w.push(r)?;
        }
        Ok(Copying::Writing(Box::new(w)))
    }
}
