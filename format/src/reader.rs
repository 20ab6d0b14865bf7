//! Reading a whole capture held in memory: an iterator of blocks and of the damage between
//! them, plus the seek index.

use crate::block::{self, BLOCK_HEADER_LEN, Probe, Unpacker};
use crate::error::{CorruptReason, FormatError};
use crate::header::{FileHeader, HEADER_LEN};
use crate::records::{Index, Record};

/// One valid block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// Byte offset of the block's sync marker.
    pub offset: u64,
    pub seq: u64,
    pub records: Vec<Record>,
    /// Records of kinds this version does not know, skipped: `(kind, count)`.
    pub unknown_kinds: Vec<(u32, u32)>,
}

/// What the reader found next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Block(Block),
    /// `skipped_bytes` from `offset` were not a valid block; reading resumed after them.
    Corrupt {
        offset: u64,
        skipped_bytes: u64,
        reason: CorruptReason,
    },
    /// The capture ends inside a block (the writer was cut off): `dropped_bytes` from
    /// `offset` to the end were ignored. Always the last event.
    Truncated {
        offset: u64,
        dropped_bytes: u64,
    },
}

/// One step of the block scanner shared by [`Reader`] and [`Follower`](crate::Follower).
pub(crate) enum Step {
    /// An event, and the buffer position after it.
    Event(Event, usize),
    /// More bytes are needed (only when more may come).
    Wait,
    /// Nothing left.
    End,
}

/// Decides what the bytes at `pos` are. `base` is the file offset of `data[0]`; `at_eof`
/// says whether `data` is everything (reader) or more may arrive (follower).
pub(crate) fn step(
    data: &[u8],
    pos: usize,
    base: u64,
    at_eof: bool,
    unpacker: &mut Unpacker,
) -> Step {
    let len = data.len();
    if pos >= len {
        return if at_eof { Step::End } else { Step::Wait };
    }
    let offset = base + pos as u64;
    match block::probe(data, pos) {
        Probe::Complete(h) => {
            let payload = &data[pos + BLOCK_HEADER_LEN..pos + h.block_len()];
            match unpacker.unpack(&h, payload) {
                Ok(decoded) => Step::Event(
                    Event::Block(Block {
                        offset,
                        seq: h.seq,
                        records: decoded.records,
                        unknown_kinds: decoded.unknown_kinds,
                    }),
                    pos + h.block_len(),
                ),
                Err(reason) => corrupt_from(data, pos, base, at_eof, reason),
            }
        }
        Probe::NeedPayload(_) | Probe::ShortHeader if !at_eof => Step::Wait,
        Probe::NeedPayload(_) => Step::Event(
            Event::Truncated {
                offset,
                dropped_bytes: (len - pos) as u64,
            },
            len,
        ),
        Probe::ShortHeader => {
            let event = if block::is_torn_start(&data[pos..]) {
                Event::Truncated {
                    offset,
                    dropped_bytes: (len - pos) as u64,
                }
            } else {
                Event::Corrupt {
                    offset,
                    skipped_bytes: (len - pos) as u64,
                    reason: CorruptReason::Garbage,
                }
            };
            Step::Event(event, len)
        }
        Probe::Oversized(reason) => corrupt_from(data, pos, base, at_eof, reason),
        Probe::Invalid => corrupt_from(data, pos, base, at_eof, CorruptReason::BadHeader),
    }
}

fn corrupt_from(data: &[u8], pos: usize, base: u64, at_eof: bool, reason: CorruptReason) -> Step {
    let resume = match block::next_sync(data, pos + 1) {
        Some(q) => q,
        None if at_eof => data.len(),
        // A sync marker may still begin in the last 7 bytes once more arrive.
        None => {
            let decided = data.len().saturating_sub(block::SYNC.len() - 1);
            if decided <= pos {
                return Step::Wait;
            }
            decided
        }
    };
    Step::Event(
        Event::Corrupt {
            offset: base + pos as u64,
            skipped_bytes: (resume - pos) as u64,
            reason,
        },
        resume,
    )
}

/// Iterates over the blocks of a capture held in memory, reporting damage as it goes.
pub struct Reader<'a> {
    data: &'a [u8],
    header: FileHeader,
    pos: usize,
    unpacker: Unpacker,
    done: bool,
}

impl std::fmt::Debug for Reader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("len", &self.data.len())
            .field("header", &self.header)
            .field("pos", &self.pos)
            .finish()
    }
}

impl<'a> Reader<'a> {
    /// Checks the file header; fails for anything that is not a capture this version reads.
    pub fn new(data: &'a [u8]) -> Result<Self, FormatError> {
        let header = FileHeader::parse(data)?;
        Ok(Reader {
            data,
            header,
            pos: HEADER_LEN,
            unpacker: Unpacker::new(),
            done: false,
        })
    }

    pub fn header(&self) -> FileHeader {
        self.header
    }

    /// Offset the next event starts at.
    pub fn position(&self) -> u64 {
        self.pos as u64
    }

    /// Continues reading at `offset` (clamped to the data; offsets inside the file header
    /// mean its end). Meant for offsets from the index.
    pub fn seek(&mut self, offset: u64) {
        let offset = usize::try_from(offset).unwrap_or(usize::MAX);
        self.pos = offset.clamp(HEADER_LEN, self.data.len().max(HEADER_LEN));
        self.done = false;
    }

    /// Positions the reader at the first block, in file order, holding a sample at or after
    /// `t_ns`, and returns its offset; `None` (reader at the end) when there is none.
    ///
    /// Uses the complete index when the capture has one, a linear scan otherwise; both give
    /// the same answer. Definitions in earlier blocks are skipped too: a consumer that needs
    /// them reads from the start first.
    pub fn seek_to_time(&mut self, t_ns: u64) -> Option<u64> {
        let found = match find_index(self.data) {
            Some(index) => block_for_time_indexed(self.data, &index, t_ns)
                .unwrap_or_else(|| block_for_time(self.data, t_ns)),
            None => block_for_time(self.data, t_ns),
        };
        self.seek(found.unwrap_or(self.data.len() as u64));
        found
    }
}

impl Iterator for Reader<'_> {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        if self.done {
            return None;
        }
        match step(self.data, self.pos, 0, true, &mut self.unpacker) {
            Step::Event(event, next) => {
                self.pos = next;
                Some(event)
            }
            Step::Wait | Step::End => {
                self.done = true;
                None
            }
        }
    }
}

fn latest_sample(records: &[Record]) -> Option<u64> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Samples(b) => b.samples.iter().map(|s| s.time_ns).max(),
            _ => None,
        })
        .max()
}

/// Offset of the first block holding a sample at or after `t_ns`, by reading every block.
pub fn block_for_time(data: &[u8], t_ns: u64) -> Option<u64> {
    Reader::new(data).ok()?.find_map(|event| match event {
        Event::Block(b) if latest_sample(&b.records).is_some_and(|t| t >= t_ns) => Some(b.offset),
        _ => None,
    })
}

/// [`block_for_time`] answered from an index. `Some(None)` means "no such block";
/// `None` means the index does not match the data (use the linear scan).
fn block_for_time_indexed(data: &[u8], index: &Index, t_ns: u64) -> Option<Option<u64>> {
    let Some(entry) = index
        .entries
        .iter()
        .find(|e| e.samples > 0 && e.last_ns >= t_ns)
    else {
        return Some(None);
    };
    let pos = usize::try_from(entry.offset).ok()?;
    match block::probe(data, pos) {
        Probe::Complete(h) if h.seq == entry.seq => Some(Some(entry.offset)),
        _ => None,
    }
}

/// The complete index of a capture that was finished cleanly: found by scanning backwards
/// from the end for the last valid block. `None` when that block holds no complete index
/// (the capture was cut off, or is not a capture).
pub fn find_index(data: &[u8]) -> Option<Index> {
    last_block(data)?.into_iter().find_map(|r| match r {
        Record::Index(index) if index.complete => Some(index),
        _ => None,
    })
}

/// The session header in a capture's first block (where a writer puts it), decoding that
/// block alone; `None` when the first block is damaged or holds none.
pub fn first_session(data: &[u8]) -> Option<crate::records::SessionHeader> {
    match Reader::new(data).ok()?.next()? {
        Event::Block(b) if b.seq == 0 => b.records.into_iter().find_map(|r| match r {
            Record::Session(s) => Some(s),
            _ => None,
        }),
        _ => None,
    }
}

/// The records of a capture's last valid block, found by scanning backwards from the end
/// (a cleanly finished capture's holds its complete index and its end).
pub fn last_block(data: &[u8]) -> Option<Vec<Record>> {
    FileHeader::parse(data).ok()?;
    let mut unpacker = Unpacker::new();
    let mut end = data.len();
    while end > HEADER_LEN {
        let window = &data[HEADER_LEN..end];
        let rel = window
            .windows(block::SYNC.len())
            .rposition(|w| w == block::SYNC)?;
        let pos = HEADER_LEN + rel;
        if let Probe::Complete(h) = block::probe(data, pos) {
            let payload = &data[pos + BLOCK_HEADER_LEN..pos + h.block_len()];
            if let Ok(decoded) = unpacker.unpack(&h, payload) {
                return Some(decoded.records);
            }
        }
        // Search again strictly before this marker.
        end = pos + block::SYNC.len() - 1;
    }
    None
}
