//! Finding the wanted structs' sizes and member offsets in raw kernel BTF: one pass over
//! the type headers, a block at a time, without turning the types into values.

use std::io::{Read, Seek, SeekFrom};

use super::{
    FIELDS, HEADER_LEN, KIND_ARRAY, KIND_DATASEC, KIND_DECL_TAG, KIND_ENUM, KIND_ENUM64,
    KIND_FUNC_PROTO, KIND_INT, KIND_STRUCT, KIND_UNION, KIND_VAR, MAGIC, SubsetError,
};

/// Most passes over the type section: a field nested in anonymous members defined
/// before their parent needs one more pass per such level (real BTF needs one).
pub(super) const MAX_PASSES: usize = 4;

/// Size and the wanted members of one struct, as found in the kernel BTF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Found {
    pub(super) size: u32,
    /// In the order of the struct's entry in [`FIELDS`].
    pub(super) members: Vec<Option<Member>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Member {
    pub(super) bit_offset: u32,
    pub(super) bitfield: bool,
}

/// An anonymous struct or union member of a wanted struct whose members are still to be
/// searched for the struct's missing fields.
#[derive(Debug, Clone, Copy)]
struct Anonymous {
    type_id: u32,
    /// The wanted struct it belongs to (index into [`FIELDS`]).
    slot: usize,
    /// Its bit offset within that struct.
    bit_offset: u32,
}

/// The size and member offsets of each struct in [`FIELDS`], in that order, from raw
/// (native-endian) BTF. The string section (~2.5 MB) is read whole, so that a struct's
/// name is one comparison away; the type section is read a block at a time and every
/// type but the structs wanted (and the anonymous members they hold) is skipped. One
/// pass, unless a wanted field is in an anonymous member defined before its parent.
pub(super) fn find_fields<R: Read + Seek>(src: &mut R) -> Result<Vec<Found>, SubsetError> {
    let mut head = [0u8; HEADER_LEN];
    src.read_exact(&mut head)
        .map_err(|_| SubsetError::Malformed("short header"))?;
    if u16::from_ne_bytes([head[0], head[1]]) != MAGIC {
        return Err(SubsetError::Malformed("not native-endian BTF"));
    }
    let [hdr_len, type_off, type_len, str_off, str_len] =
        [4, 8, 12, 16, 20].map(|at| u64::from(word(&head, at)));
    if hdr_len < HEADER_LEN as u64 {
        return Err(SubsetError::Malformed("short header"));
    }

    src.seek(SeekFrom::Start(hdr_len + str_off))?;
    let mut strings = Vec::new();
    src.take(str_len).read_to_end(&mut strings)?;
    if strings.len() as u64 != str_len {
        return Err(SubsetError::Malformed("truncated strings"));
    }
    let name_is = |off: u32, want: &str| {
        strings
            .get(off as usize..)
            .and_then(|s| s.strip_prefix(want.as_bytes()))
            .is_some_and(|rest| rest.first() == Some(&0))
    };

    let mut found: Vec<Option<Found>> = vec![None; FIELDS.len()];
    // Anonymous members to search, and those seen (by id) before they were wanted.
    let mut pending: Vec<Anonymous> = Vec::new();
    for pass in 0..MAX_PASSES {
        src.seek(SeekFrom::Start(hdr_len + type_off))?;
        let mut types = Blocks::new(src, type_len);
        let mut id = 0u32;
        while types.left() > 0 {
            id += 1;
            let t = types.take(12)?;
            let (name, info, size) = (word(t, 0), word(t, 4), word(t, 8));
            let kind = (info >> 24) & 0x1f;
            let vlen = info & 0xffff;
            let kind_flag = info >> 31 != 0;
            let extra = match kind {
                KIND_INT | KIND_VAR | KIND_DECL_TAG => 4,
                KIND_ARRAY => 12,
                KIND_STRUCT | KIND_UNION | KIND_DATASEC | KIND_ENUM64 => 12 * vlen as usize,
                KIND_ENUM | KIND_FUNC_PROTO => 8 * vlen as usize,
                // PTR, FWD, TYPEDEF, VOLATILE, CONST, RESTRICT, FUNC, FLOAT, TYPE_TAG.
                2 | 7..=12 | 16 | 18 => 0,
                _ => return Err(SubsetError::Malformed("unknown type kind")),
            };
            let composite = (kind == KIND_STRUCT || kind == KIND_UNION) && vlen > 0;
            // A wanted struct by name (first pass only), or an anonymous member of one.
            let target = if !composite {
                None
            } else if let Some(at) = pending.iter().position(|a| a.type_id == id) {
                let a = pending.swap_remove(at);
                Some((a.slot, a.bit_offset))
            } else if pass == 0 && kind == KIND_STRUCT {
                found
                    .iter()
                    .zip(FIELDS)
                    .position(|(slot, (s, _))| slot.is_none() && name_is(name, s))
                    .map(|slot| (slot, 0))
            } else {
                None
            };
            let Some((slot, base)) = target else {
                types.skip(extra)?;
                continue;
            };
            let fields = FIELDS[slot].1;
            let entry = found[slot].get_or_insert_with(|| Found {
                size,
                members: vec![None; fields.len()],
            });
            let mut anonymous = Vec::new();
            for m in types.take(extra)?.chunks_exact(12) {
                let (m_name, m_type, m_off) = (word(m, 0), word(m, 4), word(m, 8));
                // With kind_flag the top 8 bits are a bitfield size.
                let (bit_offset, bitfield) = if kind_flag {
                    (m_off & 0x00ff_ffff, m_off >> 24 != 0)
                } else {
                    (m_off, false)
                };
                let bit_offset = base
                    .checked_add(bit_offset)
                    .ok_or(SubsetError::Malformed("member offset"))?;
                if m_name == 0 {
                    anonymous.push(Anonymous {
                        type_id: m_type,
                        slot,
                        bit_offset,
                    });
                } else if let Some(i) = fields.iter().position(|f| name_is(m_name, f)) {
                    entry.members[i].get_or_insert(Member {
                        bit_offset,
                        bitfield,
                    });
                }
            }
            // Only a struct still missing fields has its anonymous members searched
            // (task_struct has a dozen, none needed).
            if entry.members.iter().any(Option::is_none) {
                pending.extend(anonymous);
            }
        }
        // Whatever is still pending was defined before it was wanted (or does not
        // exist): another pass finds it.
        let complete = found.iter().all(|f| {
            f.as_ref()
                .is_some_and(|f| f.members.iter().all(Option::is_some))
        });
        if complete || pending.is_empty() {
            break;
        }
    }
    found
        .into_iter()
        .zip(FIELDS)
        .map(|(f, (name, _))| f.ok_or_else(|| SubsetError::Missing(format!("struct {name}"))))
        .collect()
}

/// A native-endian 32-bit word at `at` (callers checked the length).
fn word(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// A section read a block at a time into one reused buffer, taken in pieces: a read or a
/// copy per type record cost more than the scan itself.
pub(super) struct Blocks<'a, R> {
    src: &'a mut R,
    buf: Vec<u8>,
    /// The unconsumed bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    /// Bytes of the section not read into `buf` yet.
    unread: u64,
}

impl<'a, R: Read + Seek> Blocks<'a, R> {
    pub(super) fn new(src: &'a mut R, len: u64) -> Self {
        Blocks {
            src,
            buf: vec![0; 256 << 10],
            start: 0,
            end: 0,
            unread: len,
        }
    }

    /// Bytes of the section not consumed yet.
    pub(super) fn left(&self) -> u64 {
        self.unread + (self.end - self.start) as u64
    }

    /// The next `n` bytes.
    pub(super) fn take(&mut self, n: usize) -> Result<&[u8], SubsetError> {
        if self.end - self.start < n {
            if n as u64 > self.left() {
                return Err(SubsetError::Malformed("truncated type"));
            }
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            if self.buf.len() < n {
                self.buf.resize(n, 0);
            }
            while self.end < n {
                let want = usize::try_from(self.unread)
                    .unwrap_or(usize::MAX)
                    .min(self.buf.len() - self.end);
                let got = self.src.read(&mut self.buf[self.end..self.end + want])?;
                if got == 0 {
                    return Err(SubsetError::Malformed("truncated type"));
                }
                self.end += got;
                self.unread -= got as u64;
            }
        }
        let piece = &self.buf[self.start..self.start + n];
        self.start += n;
        Ok(piece)
    }

    /// Passes over the next `n` bytes.
    pub(super) fn skip(&mut self, n: usize) -> Result<(), SubsetError> {
        let buffered = self.end - self.start;
        if n <= buffered {
            self.start += n;
            return Ok(());
        }
        let beyond = (n - buffered) as u64;
        if beyond > self.unread {
            return Err(SubsetError::Malformed("truncated type"));
        }
        self.src.seek(SeekFrom::Current(beyond as i64))?;
        self.unread -= beyond;
        (self.start, self.end) = (0, 0);
        Ok(())
    }
}
