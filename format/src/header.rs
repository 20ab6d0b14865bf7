//! The 16-byte file header: magic, format version, flags.

use crate::error::FormatError;

/// First 8 bytes of every capture. Like PNG's: a high byte catches 7-bit transfers, CR LF
/// and LF catch newline translation, ^Z stops `type` on Windows.
pub const MAGIC: [u8; 8] = *b"\x89HSP\r\n\x1a\n";
/// Size of the file header in bytes.
pub const HEADER_LEN: usize = 16;
/// Major version this crate writes and the newest it reads.
pub const MAJOR: u16 = 1;
/// Minor version this crate writes.
pub const MINOR: u16 = 6;

/// The decoded file header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileHeader {
    pub major: u16,
    pub minor: u16,
    /// No flag is defined yet; readers ignore the bits they do not know.
    pub flags: u32,
}

impl Default for FileHeader {
    fn default() -> Self {
        FileHeader {
            major: MAJOR,
            minor: MINOR,
            flags: 0,
        }
    }
}

impl FileHeader {
    /// The 16 bytes of this header.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[..8].copy_from_slice(&MAGIC);
        b[8..10].copy_from_slice(&self.major.to_le_bytes());
        b[10..12].copy_from_slice(&self.minor.to_le_bytes());
        b[12..16].copy_from_slice(&self.flags.to_le_bytes());
        b
    }

    /// Parses and checks the header at the start of `data`.
    ///
    /// Returns [`FormatError::TruncatedHeader`] when `data` is a strict prefix of a valid
    /// header (a capture whose writer has not written, or died before writing, all 16 bytes).
    pub fn parse(data: &[u8]) -> Result<FileHeader, FormatError> {
        if data.is_empty() {
            return Err(FormatError::NotACapture {
                reason: "the file is empty",
            });
        }
        let n = data.len().min(MAGIC.len());
        if data[..n] != MAGIC[..n] {
            return Err(FormatError::NotACapture {
                reason: "the file does not start with the capture magic",
            });
        }
        let Some(fixed) = data.first_chunk::<HEADER_LEN>() else {
            return Err(FormatError::TruncatedHeader { len: data.len() });
        };
        let major = u16::from_le_bytes([fixed[8], fixed[9]]);
        let minor = u16::from_le_bytes([fixed[10], fixed[11]]);
        let flags = u32::from_le_bytes([fixed[12], fixed[13], fixed[14], fixed[15]]);
        if major > MAJOR {
            return Err(FormatError::NewerVersion {
                found: major,
                supported: MAJOR,
            });
        }
        if major == 0 {
            return Err(FormatError::NotACapture {
                reason: "format major version 0 was never released",
            });
        }
        Ok(FileHeader {
            major,
            minor,
            flags,
        })
    }
}
