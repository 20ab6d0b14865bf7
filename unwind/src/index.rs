//! Finds the FDE that may cover an address: `.eh_frame_hdr`'s sorted table when it is
//! usable, else a table built once by scanning the section's entries.

use gimli::{BaseAddresses, CieOrFde, EndianSlice, LittleEndian, UnwindSection};

use crate::limits::{MAX_ENTRY_BYTES, MAX_INDEX_ENTRIES};

pub(crate) type Slice<'a> = EndianSlice<'a, LittleEndian>;

/// An FDE found by scanning: its address range and where it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    start: u64,
    len: u32,
    offset: u32,
}

/// An index of one CFI section.
#[derive(Debug)]
pub(crate) enum Index {
    /// `.eh_frame_hdr`'s table: pairs of (initial location, FDE address), each a signed
    /// 32-bit offset from the start of `.eh_frame_hdr` (`DW_EH_PE_datarel|sdata4`, what
    /// every linker writes), checked sorted when the module was built.
    Hdr {
        table: Vec<u8>,
        hdr_svma: u64,
        eh_frame_svma: u64,
    },
    /// Scanned entries, sorted by start.
    Scanned(Vec<Entry>),
}

/// Where to look for an address's FDE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Candidate {
    /// Offset of the FDE in its section.
    pub(crate) offset: usize,
}

const DW_EH_PE_UDATA4: u8 = 0x03;
const DW_EH_PE_SDATA4: u8 = 0x0b;
const DW_EH_PE_DATAREL_SDATA4: u8 = 0x3b;

/// Bytes of the encoded `eh_frame_ptr` field, for the encodings a header may use.
fn pointer_size(encoding: u8) -> Option<usize> {
    match encoding & 0x0f {
        0x03 | 0x0b => Some(4),
        0x00 | 0x04 | 0x0c => Some(8),
        _ => None,
    }
}

fn i32_at(bytes: &[u8], at: usize) -> Option<i32> {
    let b = bytes.get(at..at.checked_add(4)?)?;
    Some(i32::from_le_bytes(b.try_into().ok()?))
}

impl Index {
    /// The table of `.eh_frame_hdr` (its bytes `hdr` at `hdr_svma`), if it is present,
    /// of the usual encoding, as long as it says, and sorted.
    pub(crate) fn from_hdr(hdr: &[u8], hdr_svma: u64, eh_frame_svma: u64) -> Option<Index> {
        let [1, ptr_enc, count_enc, DW_EH_PE_DATAREL_SDATA4, rest @ ..] = hdr else {
            return None;
        };
        let skip = pointer_size(*ptr_enc)?;
        if *count_enc != DW_EH_PE_UDATA4 && *count_enc != DW_EH_PE_SDATA4 {
            return None;
        }
        let count = u32::from_le_bytes(rest.get(skip..skip + 4)?.try_into().ok()?);
        let table = rest.get(skip + 4..)?;
        let bytes = usize::try_from(count).ok()?.checked_mul(8)?;
        let table = table.get(..bytes)?;
        if count == 0 {
            return None;
        }
        let index = Index::Hdr {
            table: table.to_vec(),
            hdr_svma,
            eh_frame_svma,
        };
        // Binary search needs the table sorted; a linker's always is, a crafted one may not
        // be: then it is not used (the section is scanned instead).
        let sorted = (1..count as usize).all(|i| index.hdr_start(i - 1) <= index.hdr_start(i));
        sorted.then_some(index)
    }

    /// Entry `i`'s initial location, for `Index::Hdr`.
    fn hdr_start(&self, i: usize) -> Option<u64> {
        match self {
            Index::Hdr {
                table, hdr_svma, ..
            } => Some(hdr_svma.wrapping_add_signed(i64::from(i32_at(table, i * 8)?))),
            Index::Scanned(_) => None,
        }
    }

    /// Builds an index by walking every entry of `section`: at most
    /// [`MAX_INDEX_ENTRIES`] FDEs, stopping at the first entry that cannot be framed
    /// (its length is wrong, so nothing after it can be found). An FDE whose CIE does
    /// not parse is left out.
    pub(crate) fn scan<'a, S>(section: &S, bases: &BaseAddresses) -> Index
    where
        S: UnwindSection<Slice<'a>>,
    {
        let mut out = Vec::new();
        let mut entries = section.entries(bases);
        // FDEs of a section mostly share one CIE: keep the last one parsed.
        let mut last_cie = None;
        while let Ok(Some(entry)) = entries.next() {
            let CieOrFde::Fde(partial) = entry else {
                continue;
            };
            if out.len() >= MAX_INDEX_ENTRIES {
                break;
            }
            let Ok(offset) = u32::try_from(partial.offset()) else {
                break;
            };
            if partial.entry_len() > MAX_ENTRY_BYTES {
                continue;
            }
            let fde = partial.parse(|section, bases, cie_offset| match &last_cie {
                Some((at, cie)) if *at == cie_offset => Ok(Clone::clone(cie)),
                _ => {
                    let cie = section.cie_from_offset(bases, cie_offset)?;
                    last_cie = Some((cie_offset, cie.clone()));
                    Ok(cie)
                }
            });
            let Ok(fde) = fde else { continue };
            let Ok(len) = u32::try_from(fde.len()) else {
                continue;
            };
            if len == 0 {
                continue;
            }
            out.push(Entry {
                start: fde.initial_address(),
                len,
                offset,
            });
        }
        out.sort_unstable_by_key(|e| e.start);
        out.shrink_to_fit();
        Index::Scanned(out)
    }

    /// The FDE that may cover `svma` (the caller checks the FDE's range), if any.
    pub(crate) fn lookup(&self, svma: u64) -> Option<Candidate> {
        match self {
            Index::Hdr {
                table,
                hdr_svma,
                eh_frame_svma,
            } => {
                let count = table.len() / 8;
                // The first entry starting after svma; the one before it is the candidate.
                let (mut lo, mut hi) = (0usize, count);
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    if self.hdr_start(mid)? <= svma {
                        lo = mid + 1;
                    } else {
                        hi = mid;
                    }
                }
                let i = lo.checked_sub(1)?;
                let fde = hdr_svma.wrapping_add_signed(i64::from(i32_at(table, i * 8 + 4)?));
                let offset = usize::try_from(fde.checked_sub(*eh_frame_svma)?).ok()?;
                Some(Candidate { offset })
            }
            Index::Scanned(entries) => {
                let i = entries
                    .partition_point(|e| e.start <= svma)
                    .checked_sub(1)?;
                let e = entries[i];
                (svma - e.start < u64::from(e.len)).then_some(Candidate {
                    offset: e.offset as usize,
                })
            }
        }
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        match self {
            Index::Hdr { table, .. } => table.capacity(),
            Index::Scanned(entries) => entries.capacity() * std::mem::size_of::<Entry>(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        match self {
            Index::Hdr { table, .. } => table.is_empty(),
            Index::Scanned(entries) => entries.is_empty(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn hdr(entries: &[(i32, i32)], count: u32) -> Vec<u8> {
        let mut b = vec![1, 0x1b, DW_EH_PE_UDATA4, DW_EH_PE_DATAREL_SDATA4];
        b.extend_from_slice(&0i32.to_le_bytes());
        b.extend_from_slice(&count.to_le_bytes());
        for (start, fde) in entries {
            b.extend_from_slice(&start.to_le_bytes());
            b.extend_from_slice(&fde.to_le_bytes());
        }
        b
    }

    #[test]
    fn hdr_lookup() {
        // hdr at 0x1000, eh_frame at 0x2000; functions at 0x1100, 0x1200, 0x1300
        let b = hdr(&[(0x100, 0x1010), (0x200, 0x1020), (0x300, 0x1030)], 3);
        let index = Index::from_hdr(&b, 0x1000, 0x2000).unwrap();
        assert_eq!(index.lookup(0x10ff), None);
        assert_eq!(index.lookup(0x1100), Some(Candidate { offset: 0x10 }));
        assert_eq!(index.lookup(0x11ff), Some(Candidate { offset: 0x10 }));
        assert_eq!(index.lookup(0x1250), Some(Candidate { offset: 0x20 }));
        assert_eq!(index.lookup(u64::MAX), Some(Candidate { offset: 0x30 }));
    }

    #[test]
    fn hdr_that_lies_is_not_used() {
        // count larger than the table
        let b = hdr(&[(0x100, 0x1010)], 1000);
        assert!(Index::from_hdr(&b, 0x1000, 0x2000).is_none());
        let b = hdr(&[(0x100, 0x1010)], u32::MAX);
        assert!(Index::from_hdr(&b, 0x1000, 0x2000).is_none());
        // unsorted
        let b = hdr(&[(0x300, 0x1010), (0x100, 0x1020)], 2);
        assert!(Index::from_hdr(&b, 0x1000, 0x2000).is_none());
        // empty, truncated, other encodings
        assert!(Index::from_hdr(&hdr(&[], 0), 0x1000, 0x2000).is_none());
        assert!(Index::from_hdr(&[1, 0x1b], 0x1000, 0x2000).is_none());
        let mut b = hdr(&[(0x100, 0x1010)], 1);
        b[3] = 0x03;
        assert!(Index::from_hdr(&b, 0x1000, 0x2000).is_none());
    }

    #[test]
    fn hdr_entries_pointing_anywhere() {
        // an FDE address before .eh_frame: no candidate, no panic
        let b = hdr(&[(0x100, -0x7fff_ffff), (i32::MAX, i32::MIN)], 2);
        let index = Index::from_hdr(&b, 0x1000, 0x2000).unwrap();
        // a candidate offset far past any section: parsing the FDE there fails
        assert!(index.lookup(0x1100).is_none_or(|c| c.offset > 1 << 40));
        let b = hdr(&[(0x100, 0x1010)], 1);
        let index = Index::from_hdr(&b, u64::MAX - 4, 0).unwrap();
        let _ = index.lookup(0);
        let _ = index.lookup(u64::MAX);
    }
}
