//! Block framing: sync marker, checksummed block header, one zstd frame of records.

use zstd::zstd_safe;

use crate::codec::{self, Decoded};
use crate::error::{CorruptReason, FormatError};
use crate::limits::{MAX_PAYLOAD_BYTES, MAX_RAW_BYTES};

/// Starts every block. Chosen to be unlikely in compressed data and text alike: the UTF-8
/// of U+1F525 followed by `HSBK`.
pub const SYNC: [u8; 8] = [0xF0, 0x9F, 0x94, 0xA5, b'H', b'S', b'B', b'K'];
/// Sync marker plus header fields.
pub const BLOCK_HEADER_LEN: usize = 32;
/// The zstd level the writer uses unless told otherwise.
pub const DEFAULT_LEVEL: i32 = 3;

/// The fields of a block header (the sync marker and header checksum are implied).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockHeader {
    pub seq: u64,
    /// Compressed payload bytes following the header.
    pub payload_len: u32,
    /// Decompressed payload bytes.
    pub raw_len: u32,
    /// CRC-32C of the payload.
    pub payload_crc: u32,
}

impl BlockHeader {
    /// The 32 bytes of this header, sync marker first, header checksum last.
    pub fn to_bytes(&self) -> [u8; BLOCK_HEADER_LEN] {
        let mut b = [0u8; BLOCK_HEADER_LEN];
        b[..8].copy_from_slice(&SYNC);
        b[8..16].copy_from_slice(&self.seq.to_le_bytes());
        b[16..20].copy_from_slice(&self.payload_len.to_le_bytes());
        b[20..24].copy_from_slice(&self.raw_len.to_le_bytes());
        b[24..28].copy_from_slice(&self.payload_crc.to_le_bytes());
        let crc = crc32c::crc32c(&b[8..28]);
        b[28..32].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Parses a header whose sync marker and checksum verify; `None` otherwise.
    pub fn parse(b: &[u8; BLOCK_HEADER_LEN]) -> Option<BlockHeader> {
        if b[..8] != SYNC {
            return None;
        }
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        if crc32c::crc32c(&b[8..28]) != u32_at(28) {
            return None;
        }
        let mut seq = [0u8; 8];
        seq.copy_from_slice(&b[8..16]);
        Some(BlockHeader {
            seq: u64::from_le_bytes(seq),
            payload_len: u32_at(16),
            raw_len: u32_at(20),
            payload_crc: u32_at(24),
        })
    }

    /// Whole block size: header plus payload.
    pub fn block_len(&self) -> usize {
        BLOCK_HEADER_LEN + self.payload_len as usize
    }

    /// Rejects lengths over the limits, before anything is read or allocated for them.
    pub fn check_limits(&self) -> Result<(), CorruptReason> {
        if self.payload_len > MAX_PAYLOAD_BYTES {
            return Err(CorruptReason::Oversized {
                what: "payload",
                value: u64::from(self.payload_len),
                max: u64::from(MAX_PAYLOAD_BYTES),
            });
        }
        if self.raw_len > MAX_RAW_BYTES {
            return Err(CorruptReason::Oversized {
                what: "decompressed payload",
                value: u64::from(self.raw_len),
                max: u64::from(MAX_RAW_BYTES),
            });
        }
        Ok(())
    }
}

/// What the bytes at some position are, as far as the header can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Probe {
    /// A verified header within limits, and its whole payload is present.
    Complete(BlockHeader),
    /// A verified header within limits whose payload runs past the end of the data.
    NeedPayload(BlockHeader),
    /// Fewer than 32 bytes left: cannot tell yet.
    ShortHeader,
    /// A verified header declaring lengths over the limits.
    Oversized(CorruptReason),
    /// Not a block start.
    Invalid,
}

pub(crate) fn probe(data: &[u8], pos: usize) -> Probe {
    let Some(hdr) = data
        .get(pos..)
        .and_then(|d| d.first_chunk::<BLOCK_HEADER_LEN>())
    else {
        return Probe::ShortHeader;
    };
    let Some(h) = BlockHeader::parse(hdr) else {
        return Probe::Invalid;
    };
    if let Err(reason) = h.check_limits() {
        return Probe::Oversized(reason);
    }
    if data.len() - pos < h.block_len() {
        Probe::NeedPayload(h)
    } else {
        Probe::Complete(h)
    }
}

/// Next position at or after `from` where a block may start: a sync marker followed by a
/// verifying header, or a whole sync marker too close to the end to hold a header (it may be
/// a block still being written). Always strictly ahead of `from - 1`, so scanning advances.
pub(crate) fn next_sync(data: &[u8], from: usize) -> Option<usize> {
    let mut pos = from;
    while pos + SYNC.len() <= data.len() {
        let rel = data[pos..data.len() - (SYNC.len() - 1)]
            .iter()
            .position(|&b| b == SYNC[0])?;
        pos += rel;
        if data[pos..pos + SYNC.len()] == SYNC {
            match probe(data, pos) {
                Probe::Invalid => {}
                _ => return Some(pos),
            }
        }
        pos += 1;
    }
    None
}

/// Whether `tail` could be the start of a block cut short (a prefix of a sync marker, or a
/// whole marker followed by fewer than 24 header bytes).
pub(crate) fn is_torn_start(tail: &[u8]) -> bool {
    let n = tail.len().min(SYNC.len());
    tail.len() < BLOCK_HEADER_LEN && tail[..n] == SYNC[..n]
}

/// Compresses payloads: one zstd frame per block, optionally ending zstd blocks at chosen
/// offsets so that unlike byte planes do not share an entropy table.
pub struct Compressor {
    cctx: zstd_safe::CCtx<'static>,
}

impl std::fmt::Debug for Compressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compressor").finish_non_exhaustive()
    }
}

fn zstd_error(code: usize) -> FormatError {
    FormatError::Compress(std::io::Error::other(zstd_safe::get_error_name(code)))
}

impl Compressor {
    pub fn new(level: i32) -> Result<Self, FormatError> {
        let mut cctx = zstd_safe::CCtx::try_create().ok_or_else(|| {
            FormatError::Compress(std::io::Error::other("cannot allocate a zstd context"))
        })?;
        cctx.set_parameter(zstd_safe::CParameter::CompressionLevel(level))
            .map_err(zstd_error)?;
        Ok(Compressor { cctx })
    }

    /// Appends `raw` compressed as one zstd frame to `out`, ending a zstd block at each
    /// offset in `splits` (increasing, within `raw`).
    pub fn compress(
        &mut self,
        raw: &[u8],
        splits: &[usize],
        out: &mut Vec<u8>,
    ) -> Result<(), FormatError> {
        use zstd_safe::zstd_sys::ZSTD_EndDirective::{ZSTD_e_end, ZSTD_e_flush};
        self.cctx
            .reset(zstd_safe::ResetDirective::SessionOnly)
            .map_err(zstd_error)?;
        // Recording the content size in the frame lets generic zstd tools size their output.
        self.cctx
            .set_pledged_src_size(Some(raw.len() as u64))
            .map_err(zstd_error)?;
        out.reserve(zstd_safe::compress_bound(raw.len()) + 64);
        let mut start = 0;
        let ends = splits
            .iter()
            .copied()
            .filter(|&s| s > 0 && s < raw.len())
            .chain(std::iter::once(raw.len()));
        for end in ends {
            if end < start || (end == start && end != raw.len()) {
                continue;
            }
            let last = end == raw.len();
            let mut input = zstd_safe::InBuffer::around(&raw[start..end]);
            loop {
                if out.capacity() - out.len() < 1024 {
                    out.reserve(zstd_safe::compress_bound(end - start) + 1024);
                }
                let pos = out.len();
                let mut output = zstd_safe::OutBuffer::around_pos(out, pos);
                let directive = if last { ZSTD_e_end } else { ZSTD_e_flush };
                let remaining = self
                    .cctx
                    .compress_stream2(&mut output, &mut input, directive)
                    .map_err(zstd_error)?;
                if remaining == 0 && input.pos() == end - start {
                    break;
                }
            }
            start = end;
        }
        Ok(())
    }
}

/// Compresses `raw` and appends the whole block (header and payload) to `out`; `payload` is
/// scratch space reused between blocks.
pub fn encode_block(
    compressor: &mut Compressor,
    seq: u64,
    raw: &[u8],
    splits: &[usize],
    payload: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> Result<(), FormatError> {
    let raw_len = u32::try_from(raw.len())
        .ok()
        .filter(|&l| l <= MAX_RAW_BYTES)
        .ok_or(FormatError::Limit {
            what: "block raw size",
            value: raw.len() as u64,
            max: u64::from(MAX_RAW_BYTES),
        })?;
    payload.clear();
    compressor.compress(raw, splits, payload)?;
    let payload_len = u32::try_from(payload.len())
        .ok()
        .filter(|&l| l <= MAX_PAYLOAD_BYTES)
        .ok_or(FormatError::Limit {
            what: "block payload size",
            value: payload.len() as u64,
            max: u64::from(MAX_PAYLOAD_BYTES),
        })?;
    let header = BlockHeader {
        seq,
        payload_len,
        raw_len,
        payload_crc: crc32c::crc32c(payload),
    };
    out.extend_from_slice(&header.to_bytes());
    out.extend_from_slice(payload);
    Ok(())
}

/// Checks, decompresses and decodes block payloads, reusing one zstd context and buffer.
pub(crate) struct Unpacker {
    dctx: Option<zstd_safe::DCtx<'static>>,
    raw: Vec<u8>,
}

impl std::fmt::Debug for Unpacker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unpacker")
            .field("raw_capacity", &self.raw.capacity())
            .finish()
    }
}

impl Unpacker {
    pub(crate) fn new() -> Self {
        Unpacker {
            dctx: None,
            raw: Vec::new(),
        }
    }

    /// Verifies and decodes the payload of a block whose header verified.
    pub(crate) fn unpack(
        &mut self,
        header: &BlockHeader,
        payload: &[u8],
    ) -> Result<Decoded, CorruptReason> {
        if crc32c::crc32c(payload) != header.payload_crc {
            return Err(CorruptReason::PayloadCrc);
        }
        // zstd would happily decode several concatenated frames; the format allows one.
        match zstd_safe::find_frame_compressed_size(payload) {
            Ok(n) if n == payload.len() => {}
            Ok(_) => return Err(CorruptReason::Zstd("not exactly one frame".into())),
            Err(code) => return Err(CorruptReason::Zstd(zstd_safe::get_error_name(code).into())),
        }
        let declared = header.raw_len as usize;
        // A size the frame itself records must agree, which rejects most lies before the
        // output buffer is reserved.
        if let Ok(Some(size)) = zstd_safe::get_frame_content_size(payload)
            && size != declared as u64
        {
            return Err(CorruptReason::FrameSize {
                declared: declared as u64,
                frame: size,
            });
        }
        self.raw.clear();
        // The declared size was checked against MAX_RAW_BYTES; zstd writes into this
        // capacity only and fails rather than grow it, so a bomb cannot allocate more.
        self.raw.reserve(declared);
        if self.dctx.is_none() {
            self.dctx = zstd_safe::DCtx::try_create();
        }
        let Some(dctx) = self.dctx.as_mut() else {
            return Err(CorruptReason::Zstd("cannot allocate a zstd context".into()));
        };
        dctx.decompress(&mut self.raw, payload)
            .map_err(|code| CorruptReason::Zstd(zstd_safe::get_error_name(code).into()))?;
        if self.raw.len() != declared {
            return Err(CorruptReason::RawLength {
                declared: declared as u64,
                actual: self.raw.len() as u64,
            });
        }
        codec::decode_records(&self.raw)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_is_castagnoli() {
        assert_eq!(crc32c::crc32c(b"123456789"), 0xE306_9283);
    }

    #[test]
    fn header_round_trips_and_checks() {
        let h = BlockHeader {
            seq: 7,
            payload_len: 100,
            raw_len: 300,
            payload_crc: 0xdead_beef,
        };
        let mut b = h.to_bytes();
        assert_eq!(BlockHeader::parse(&b), Some(h));
        b[17] ^= 1;
        assert_eq!(BlockHeader::parse(&b), None);
    }
}
