//! A one-call consumer helper: every record of a capture, definitions deduplicated, with a
//! tally of what was damaged or skipped.

use crate::definitions::Dedup;
use crate::error::{CorruptReason, FormatError};
use crate::reader::{Event, Reader};
use crate::records::Record;

/// How many damaged regions [`Diagnostics::corrupt_regions`] lists in full.
pub const MAX_LISTED_REGIONS: usize = 64;

/// What [`read_all`] had to skip.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnostics {
    /// Valid blocks read.
    pub blocks: u64,
    /// Damaged regions skipped, and their bytes.
    pub corrupt_count: u64,
    pub corrupt_bytes: u64,
    /// The first [`MAX_LISTED_REGIONS`] damaged regions: `(offset, bytes, reason)`.
    pub corrupt_regions: Vec<(u64, u64, CorruptReason)>,
    /// `(offset, dropped bytes)` of a torn final block.
    pub truncated: Option<(u64, u64)>,
    /// Records of unknown kinds skipped: `(kind, count)`, by kind.
    pub unknown_kinds: Vec<(u32, u64)>,
    /// Repeated definitions dropped (normal: the writer repeats them on purpose).
    pub duplicate_definitions: u64,
    /// Whether the `End` record was read.
    pub finished: bool,
}

/// Reads every block of `data`. Returns the records in file order with repeated definitions
/// removed (first one wins), and what was skipped. Fails only when `data` is not a capture
/// this version reads.
pub fn read_all(data: &[u8]) -> Result<(Vec<Record>, Diagnostics), FormatError> {
    let mut diag = Diagnostics::default();
    let mut dedup = Dedup::new();
    let mut records = Vec::new();
    for event in Reader::new(data)? {
        match event {
            Event::Block(block) => {
                diag.blocks += 1;
                for (kind, count) in block.unknown_kinds {
                    match diag.unknown_kinds.binary_search_by_key(&kind, |&(k, _)| k) {
                        Ok(i) => diag.unknown_kinds[i].1 += u64::from(count),
                        Err(i) => diag.unknown_kinds.insert(i, (kind, u64::from(count))),
                    }
                }
                for record in block.records {
                    if matches!(record, Record::End(_)) {
                        diag.finished = true;
                    }
                    if dedup.keep(&record) {
                        records.push(record);
                    } else {
                        diag.duplicate_definitions += 1;
                    }
                }
            }
            Event::Corrupt {
                offset,
                skipped_bytes,
                reason,
            } => {
                diag.corrupt_count += 1;
                diag.corrupt_bytes += skipped_bytes;
                if diag.corrupt_regions.len() < MAX_LISTED_REGIONS {
                    diag.corrupt_regions.push((offset, skipped_bytes, reason));
                }
            }
            Event::Truncated {
                offset,
                dropped_bytes,
            } => diag.truncated = Some((offset, dropped_bytes)),
        }
    }
    Ok((records, diag))
}
