//! `str` objects read from a target: the compact forms CPython gives every name and file
//! name of a code object (ASCII, and Latin-1/UCS-2/UCS-4 with `kind` 1, 2, 4), bounded,
//! checked, decoded to a Rust `String`. Lone surrogates, which a `str` may hold (file
//! names decoded with `surrogateescape`), become U+FFFD.

use thiserror::Error;

use crate::layout::UnicodeLayout;
use crate::limits::MAX_STRING_CHARS;
use crate::memory::{MemoryReader, ReadError, field_u32, field_u64, read_vec};

/// What is wrong with a string object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum StringError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("the string at {addr:#x} is not of type str (type {found:#x})")]
    NotStr { addr: u64, found: u64 },
    #[error("the string at {addr:#x} is not compact (state {state:#x}): not a name CPython made")]
    NotCompact { addr: u64, state: u32 },
    #[error("the string at {addr:#x} has an impossible state {state:#x}")]
    BadState { addr: u64, state: u32 },
    #[error("the string at {addr:#x} claims {length} characters, more than {max}")]
    TooLong { addr: u64, length: u64, max: u64 },
    #[error("the string at {addr:#x} holds a byte or code point its kind cannot ({value:#x})")]
    BadChar { addr: u64, value: u32 },
}

/// Reads the `str` at `addr`. `str_type`: the address of `PyUnicode_Type` in the target,
/// checked against the object's type when given.
pub fn read_str(
    mem: &impl MemoryReader,
    layout: &UnicodeLayout,
    ob_type: u16,
    str_type: Option<u64>,
    addr: u64,
) -> Result<String, StringError> {
    let header_len = usize::from(layout.length.max(layout.state).max(ob_type)) + 8;
    let header = read_vec(mem, addr, header_len)?;
    let ty = field_u64(&header, usize::from(ob_type)).unwrap_or(0);
    if let Some(expected) = str_type
        && ty != expected
    {
        return Err(StringError::NotStr { addr, found: ty });
    }
    let length = field_u64(&header, usize::from(layout.length)).unwrap_or(u64::MAX);
    let state = field_u32(&header, usize::from(layout.state)).unwrap_or(0);
    let kind = (state >> 2) & 7;
    let compact = state & (1 << 5) != 0;
    let ascii = state & (1 << 6) != 0;
    if !compact {
        return Err(StringError::NotCompact { addr, state });
    }
    let ready = layout.ready_bit.is_none_or(|bit| state & (1 << bit) != 0);
    if !ready || !matches!(kind, 1 | 2 | 4) || (ascii && kind != 1) {
        return Err(StringError::BadState { addr, state });
    }
    if length > MAX_STRING_CHARS {
        return Err(StringError::TooLong {
            addr,
            length,
            max: MAX_STRING_CHARS,
        });
    }
    let data = if ascii {
        layout.ascii_data
    } else {
        layout.compact_data
    };
    // Bounded: at most 4 × MAX_STRING_CHARS bytes.
    let bytes = read_vec(
        mem,
        addr.wrapping_add(u64::from(data)),
        length as usize * kind as usize,
    )?;
    let bad = |value: u32| StringError::BadChar { addr, value };
    let mut s = String::with_capacity(bytes.len());
    match kind {
        1 => {
            for &b in &bytes {
                if ascii && b >= 0x80 {
                    return Err(bad(u32::from(b)));
                }
                s.push(char::from(b));
            }
        }
        2 => {
            for c in bytes.chunks_exact(2) {
                let u = u32::from(u16::from_le_bytes([c[0], c[1]]));
                s.push(char::from_u32(u).unwrap_or(char::REPLACEMENT_CHARACTER));
            }
        }
        _ => {
            for c in bytes.chunks_exact(4) {
                let u = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                if u > 0x10_FFFF {
                    return Err(bad(u));
                }
                s.push(char::from_u32(u).unwrap_or(char::REPLACEMENT_CHARACTER));
            }
        }
    }
    Ok(s)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::layout::UNICODE_3_12;
    use crate::memory::RegionMemory;

    const TYPE: u64 = 0x5000;

    /// A compact string object in the 3.12 layout.
    fn object(kind: u32, ascii: bool, length: u64, data: &[u8]) -> Vec<u8> {
        let l = UNICODE_3_12;
        let at = if ascii { l.ascii_data } else { l.compact_data };
        let mut b = vec![0u8; usize::from(at)];
        b[8..16].copy_from_slice(&TYPE.to_le_bytes());
        b[16..24].copy_from_slice(&length.to_le_bytes());
        let state = (kind << 2) | (1 << 5) | if ascii { 1 << 6 } else { 0 };
        b[32..36].copy_from_slice(&state.to_le_bytes());
        b.extend_from_slice(data);
        b
    }

    fn read(obj: Vec<u8>) -> Result<String, StringError> {
        let mut m = RegionMemory::new();
        m.add(0x1000, obj);
        read_str(&m, &UNICODE_3_12, 8, Some(TYPE), 0x1000)
    }

    #[test]
    fn every_kind() {
        assert_eq!(read(object(1, true, 3, b"abc")).unwrap(), "abc");
        assert_eq!(read(object(1, false, 2, &[0x6e, 0xef])).unwrap(), "n\u{ef}");
        let ucs2: Vec<u8> = "ab\u{51fd}"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        assert_eq!(read(object(2, false, 3, &ucs2)).unwrap(), "ab\u{51fd}");
        let ucs4: Vec<u8> = [0x61u32, 0x20000]
            .iter()
            .flat_map(|c| c.to_le_bytes())
            .collect();
        assert_eq!(read(object(4, false, 2, &ucs4)).unwrap(), "a\u{20000}");
        let lone = 0xdc80u16.to_le_bytes();
        assert_eq!(read(object(2, false, 1, &lone)).unwrap(), "\u{fffd}");
    }

    #[test]
    fn hostile_strings_are_errors() {
        assert!(matches!(
            read(object(1, true, 2, b"a\xff")),
            Err(StringError::BadChar { .. })
        ));
        let big = 0x11_0000u32.to_le_bytes();
        assert!(matches!(
            read(object(4, false, 1, &big)),
            Err(StringError::BadChar { .. })
        ));
        assert!(matches!(
            read(object(3, false, 1, b"abc")),
            Err(StringError::BadState { .. })
        ));
        assert!(matches!(
            read(object(2, true, 1, b"ab")),
            Err(StringError::BadState { .. })
        ));
        assert!(matches!(
            read(object(1, true, u64::MAX, b"abc")),
            Err(StringError::TooLong { .. })
        ));
        assert!(matches!(
            read(object(1, true, 4, b"abc")),
            Err(StringError::Read(_))
        ));
        let mut o = object(1, true, 3, b"abc");
        o[32] &= !(1 << 5);
        assert!(matches!(read(o), Err(StringError::NotCompact { .. })));
        let mut o = object(1, true, 3, b"abc");
        o[8] = 1;
        assert!(matches!(read(o), Err(StringError::NotStr { .. })));
    }
}
