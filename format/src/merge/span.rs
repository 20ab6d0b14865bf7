//! What a finished segment can hold, from its first and last blocks alone: the session
//! header (block 0), and the last time its index and end give. A merge with a window
//! places such a segment on the clock and passes over it, undecoded, when the window
//! misses it: cutting 10 minutes of a 30-minute history then decodes a third of it.

use crate::header::FileHeader;
use crate::reader::{first_session, last_block};
use crate::records::{Record, SessionHeader};

/// A finished segment's session header, the first time a sample of it has (an off-CPU
/// sample is timed when its thread blocked, possibly before the segment started) and the
/// last monotonic time it holds (as [`super::clock::last_time`] would find by decoding it
/// whole).
#[derive(Debug, Clone)]
pub(crate) struct Span {
    pub session: SessionHeader,
    pub first: u64,
    pub last: u64,
}

/// Index entries count off-CPU samples' times since 1.3 (SPEC.md, kind 12).
const INDEX_HAS_OFF_CPU: (u16, u16) = (1, 3);

/// The span of a segment that ended cleanly (a complete index and an end in its last
/// block, a session header in its first); `None` for any other, which is then decoded.
pub(crate) fn of(data: &[u8]) -> Option<Span> {
    let header = FileHeader::parse(data).ok()?;
    if (header.major, header.minor) < INDEX_HAS_OFF_CPU {
        return None;
    }
    let last_records = last_block(data)?;
    let index = last_records.iter().find_map(|r| match r {
        Record::Index(i) if i.complete => Some(i),
        _ => None,
    })?;
    let end = last_records.iter().find_map(|r| match r {
        Record::End(e) => Some(e),
        _ => None,
    })?;
    let session = first_session(data)?;
    let first = index
        .entries
        .iter()
        .filter(|e| e.last_ns > 0)
        .map(|e| e.first_ns)
        .chain([session.start_mono_ns])
        .min()
        .unwrap_or(0);
    // Marks are not in the index: one taken by this segment is timed before its end.
    let last = index
        .entries
        .iter()
        .map(|e| e.last_ns)
        .chain([session.start_mono_ns, end.end_mono_ns])
        .max()
        .unwrap_or(0);
    Some(Span {
        session,
        first,
        last,
    })
}
