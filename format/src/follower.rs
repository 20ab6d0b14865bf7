//! Tailing a capture that is still being written: returns each block once it has fully
//! landed, never mistaking the writer's unfinished tail for damage.

use std::io::{Read, Seek, SeekFrom};

use crate::block::Unpacker;
use crate::error::{CorruptReason, FormatError};
use crate::header::{FileHeader, HEADER_LEN};
use crate::reader::{Event, Step, step};
use crate::records::Record;

/// Most new bytes taken in by one `poll`, so that catching up with a large file happens in
/// bounded steps: a viewer opening a big capture holds a few MiB of decoded samples at a
/// time, not the whole file's. A block larger than this completes over several polls
/// ([`Follower::behind`] says when to poll again at once).
const MAX_POLL_BYTES: u64 = 512 << 10;

/// Follows a growing capture through plain reads.
pub struct Follower<R: Read + Seek> {
    reader: R,
    /// File offset of the next byte to read.
    file_pos: u64,
    /// Unparsed bytes; `buf[0]` is at file offset `buf_base`.
    buf: Vec<u8>,
    buf_base: u64,
    header: Option<FileHeader>,
    unpacker: Unpacker,
    /// A damaged region whose end is not known yet; reported once a block follows it.
    pending_corrupt: Option<(u64, u64, CorruptReason)>,
    finished: bool,
    /// The last poll stopped at its byte budget: more is already there to read.
    behind: bool,
}

impl<R: Read + Seek> std::fmt::Debug for Follower<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Follower")
            .field("file_pos", &self.file_pos)
            .field("buffered", &self.buf.len())
            .field("header", &self.header)
            .field("finished", &self.finished)
            .finish_non_exhaustive()
    }
}

impl<R: Read + Seek> Follower<R> {
    /// Follows the capture `reader` holds, from its first byte.
    pub fn new(reader: R) -> Self {
        Follower {
            reader,
            file_pos: 0,
            buf: Vec::new(),
            buf_base: 0,
            header: None,
            unpacker: Unpacker::new(),
            pending_corrupt: None,
            finished: false,
            behind: false,
        }
    }

    /// The file header, once it has landed.
    pub fn header(&self) -> Option<FileHeader> {
        self.header
    }

    /// True once the `End` record has been read: the writer finished cleanly.
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// True when the last `poll` left bytes unread (it reads at most a few MiB): poll
    /// again without waiting.
    pub fn behind(&self) -> bool {
        self.behind
    }

    /// Reads what was appended since the last call and returns the blocks that are now
    /// complete, plus damage found between them. An incomplete tail is kept for the next call.
    ///
    /// Fails only for I/O errors and for a file that is not a capture this version reads.
    pub fn poll(&mut self) -> Result<Vec<Event>, FormatError> {
        self.fill()?;
        let mut events = Vec::new();
        if self.header.is_none() {
            match FileHeader::parse(&self.buf) {
                Ok(h) => {
                    self.header = Some(h);
                    self.buf.drain(..HEADER_LEN);
                    self.buf_base = HEADER_LEN as u64;
                }
                Err(FormatError::TruncatedHeader { .. }) => return Ok(events),
                Err(FormatError::NotACapture { .. }) if self.buf.is_empty() => {
                    return Ok(events);
                }
                Err(e) => return Err(e),
            }
        }
        let mut pos = 0;
        while let Step::Event(event, next) =
            step(&self.buf, pos, self.buf_base, false, &mut self.unpacker)
        {
            pos = next;
            match event {
                Event::Corrupt {
                    offset,
                    skipped_bytes,
                    reason,
                } => match &mut self.pending_corrupt {
                    Some((start, len, _)) if *start + *len == offset => *len += skipped_bytes,
                    _ => {
                        events.extend(self.take_corrupt());
                        self.pending_corrupt = Some((offset, skipped_bytes, reason));
                    }
                },
                Event::Block(block) => {
                    events.extend(self.take_corrupt());
                    if block.records.iter().any(|r| matches!(r, Record::End(_))) {
                        self.finished = true;
                    }
                    events.push(Event::Block(block));
                }
                // Never produced while more bytes may come.
                Event::Truncated { .. } => {}
            }
        }
        self.buf.drain(..pos);
        self.buf_base += pos as u64;
        Ok(events)
    }

    fn take_corrupt(&mut self) -> Option<Event> {
        self.pending_corrupt
            .take()
            .map(|(offset, skipped_bytes, reason)| Event::Corrupt {
                offset,
                skipped_bytes,
                reason,
            })
    }

    /// Appends newly written bytes to the buffer.
    fn fill(&mut self) -> Result<(), FormatError> {
        self.reader.seek(SeekFrom::Start(self.file_pos))?;
        let n = (&mut self.reader)
            .take(MAX_POLL_BYTES)
            .read_to_end(&mut self.buf)?;
        self.file_pos += n as u64;
        self.behind = n as u64 == MAX_POLL_BYTES;
        Ok(())
    }
}
