//! Unit tests' target memory: strings, bytes and code objects laid out as a version's
//! [`Layout`] says, in a [`RegionMemory`].

use crate::layout::{CodeSize, Layout};
use crate::memory::RegionMemory;

pub(crate) const CODE_TYPE: u64 = 0xc0de;
pub(crate) const STR_TYPE: u64 = 0x5772;
pub(crate) const BYTES_TYPE: u64 = 0xb7e5;

/// Builds objects one after another from a base address.
pub(crate) struct Image {
    pub(crate) mem: RegionMemory,
    pub(crate) layout: Layout,
    next: u64,
}

impl Image {
    pub(crate) fn new(layout: Layout) -> Self {
        Image {
            mem: RegionMemory::new(),
            layout,
            next: 0x10_0000,
        }
    }

    fn place(&mut self, bytes: Vec<u8>) -> u64 {
        let at = self.next;
        self.next += (bytes.len() as u64 + 64).next_multiple_of(64);
        self.mem.add(at, bytes);
        at
    }

    fn put(b: &mut [u8], at: u16, v: &[u8]) {
        b[usize::from(at)..usize::from(at) + v.len()].copy_from_slice(v);
    }

    /// An ASCII (or, with non-ASCII characters, UCS-4) compact string.
    pub(crate) fn str(&mut self, s: &str) -> u64 {
        let u = self.layout.unicode;
        let ascii = s.is_ascii();
        let data = if ascii { u.ascii_data } else { u.compact_data };
        let mut b = vec![0u8; usize::from(data)];
        Self::put(&mut b, self.layout.ob_type, &STR_TYPE.to_le_bytes());
        Self::put(&mut b, u.length, &(s.chars().count() as u64).to_le_bytes());
        let kind: u32 = if ascii { 1 } else { 4 };
        let mut state = (kind << 2) | (1 << 5) | if ascii { 1 << 6 } else { 0 };
        if let Some(bit) = u.ready_bit {
            state |= 1 << bit;
        }
        Self::put(&mut b, u.state, &state.to_le_bytes());
        if ascii {
            b.extend_from_slice(s.as_bytes());
        } else {
            b.extend(s.chars().flat_map(|c| u32::from(c).to_le_bytes()));
        }
        self.place(b)
    }

    pub(crate) fn bytes(&mut self, v: &[u8]) -> u64 {
        let l = self.layout.bytes;
        let mut b = vec![0u8; usize::from(l.data)];
        Self::put(&mut b, self.layout.ob_type, &BYTES_TYPE.to_le_bytes());
        Self::put(&mut b, l.size, &(v.len() as u64).to_le_bytes());
        b.extend_from_slice(v);
        self.place(b)
    }

    /// A code object with these names, first line, line table (raw bytes) and bytecode
    /// size in bytes.
    pub(crate) fn code(
        &mut self,
        qualname: &str,
        name: &str,
        filename: &str,
        first_line: i32,
        table: &[u8],
        code_bytes: u64,
    ) -> u64 {
        let name_at = self.str(name);
        let qual_at = self.str(qualname);
        let file_at = self.str(filename);
        let table_at = self.bytes(table);
        let c = self.layout.code;
        let size_field = match c.size {
            CodeSize::BytesObject { .. } => self.bytes(&vec![0; code_bytes as usize]),
            CodeSize::Units { .. } => code_bytes / 2,
        };
        let len = self
            .layout
            .code_header_len()
            .max(usize::from(c.bytecode.unwrap_or(0)))
            + code_bytes as usize;
        let mut b = vec![0u8; len];
        Self::put(&mut b, self.layout.ob_type, &CODE_TYPE.to_le_bytes());
        Self::put(&mut b, c.name, &name_at.to_le_bytes());
        if let Some(q) = c.qualname {
            Self::put(&mut b, q, &qual_at.to_le_bytes());
        }
        Self::put(&mut b, c.filename, &file_at.to_le_bytes());
        Self::put(&mut b, c.line_table, &table_at.to_le_bytes());
        Self::put(&mut b, c.first_line, &first_line.to_le_bytes());
        match c.size {
            CodeSize::BytesObject { co_code } => {
                Self::put(&mut b, co_code, &size_field.to_le_bytes())
            }
            CodeSize::Units { ob_size } => Self::put(&mut b, ob_size, &size_field.to_le_bytes()),
        }
        self.place(b)
    }

    /// Overwrites 8 bytes at `addr + offset` (a region's start plus an offset into it).
    pub(crate) fn poke(&mut self, addr: u64, offset: u16, v: u64) {
        assert!(self.mem.write(addr + u64::from(offset), &v.to_le_bytes()));
    }
}
