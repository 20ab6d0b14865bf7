//! Typed errors: why a capture cannot be opened or written, and why a region of one was skipped.
//!
//! A message names what was being done; the cause, where there is one, is the error's
//! `source()`, which the binary prints after it (`writing the capture: i/o error: …`).

use thiserror::Error;

/// Errors that stop an operation: opening a capture, writing one, or polling a follower.
///
/// Damage *inside* a capture is not an error: the reader reports it as
/// [`Event::Corrupt`](crate::Event::Corrupt) or [`Event::Truncated`](crate::Event::Truncated)
/// and goes on.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The bytes do not start with the capture magic (or there are none).
    #[error("not a hotspot capture: {reason} (give a file written by `hotspot record`)")]
    NotACapture { reason: &'static str },
    /// The bytes start like a capture header but stop before its 16 bytes are complete.
    #[error(
        "capture header cut short: {len} of 16 bytes, so it holds nothing (the file was cut \
         off as it was created: copy it again from where it was recorded)"
    )]
    TruncatedHeader { len: usize },
    /// Written by a newer hotspot whose major format version this one cannot read.
    #[error(
        "capture format major version {found} is newer than the supported version {supported}: \
         upgrade hotspot to read it"
    )]
    NewerVersion { found: u16, supported: u16 },
    /// The writer was handed something the format's limits would make readers reject.
    #[error("{what} is {value}, over the format limit of {max}")]
    Limit {
        what: &'static str,
        value: u64,
        max: u64,
    },
    /// postcard failed to serialize a record (should not happen for the record types).
    #[error("could not encode a record")]
    Encode(#[source] postcard::Error),
    /// zstd failed to compress a block.
    #[error("zstd compression failed")]
    Compress(#[source] std::io::Error),
    /// The underlying writer or reader failed.
    #[error("i/o error")]
    Io(#[from] std::io::Error),
}

/// Why a region of a capture was skipped (carried by `Event::Corrupt`).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum CorruptReason {
    /// No block starts here: no sync marker, or its header checksum does not verify.
    #[error("no valid block header (bad sync marker or header checksum)")]
    BadHeader,
    /// The header verifies but declares a length over the limits.
    #[error("block declares {what} of {value} bytes, over the limit of {max}")]
    Oversized {
        what: &'static str,
        value: u64,
        max: u64,
    },
    /// The payload checksum does not match.
    #[error("payload checksum mismatch")]
    PayloadCrc,
    /// The payload is not exactly one valid zstd frame.
    #[error("bad zstd payload: {0}")]
    Zstd(String),
    /// The payload decompressed to another size than the header declares.
    #[error("payload decompressed to {actual} bytes, header declares {declared}")]
    RawLength { declared: u64, actual: u64 },
    /// The zstd frame records another content size than the header declares.
    #[error("zstd frame records {frame} bytes, header declares {declared}")]
    FrameSize { declared: u64, frame: u64 },
    /// A record inside a checksummed payload cannot be decoded.
    #[error("record of kind {kind} at raw offset {at}: {what}")]
    Record {
        kind: u32,
        at: u64,
        what: RecordError,
    },
    /// Bytes after the last block that cannot be the start of one.
    #[error("trailing bytes that are not a block")]
    Garbage,
}

/// Why one record could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The record framing (kind, length) runs past the end of the payload.
    #[error("record framing runs past the end of the payload")]
    Framing,
    /// postcard rejected the body.
    #[error("body: {0}")]
    Body(postcard::Error),
    /// A sample batch's columns are inconsistent.
    #[error("sample columns: {0}")]
    Columns(&'static str),
    /// A field is over a format limit.
    #[error("{what} is {value}, over the limit of {max}")]
    Limit {
        what: &'static str,
        value: u64,
        max: u64,
    },
}
