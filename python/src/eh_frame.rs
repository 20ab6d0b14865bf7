//! A file's `.eh_frame` as the compiler's own map of its code: the FDEs (one per function,
//! and one per piece a function was split into) and the frame each row of an FDE
//! describes. A split-off piece begins inside its function's frame, with the frame's
//! registers already saved; a function begins with none saved and the CFA at `rsp+8`.

use std::ops::Range;

use gimli::{
    BaseAddresses, CfaRule, CieOrFde, EhFrame, EndianSlice, FrameDescriptionEntry, LittleEndian,
    RegisterRule, UnwindContext, UnwindSection,
};

use crate::elf::ElfImage;

/// FDEs parsed at most from one `.eh_frame` (Debian's python3 has about 20,000).
const MAX_FDES: usize = 1 << 20;

/// Rows read at most from one FDE's CFI program.
const MAX_ROWS: usize = 1 << 14;

type Slice<'d> = EndianSlice<'d, LittleEndian>;

/// The frame at one row: the CFA as register + offset and the saved registers with their
/// CFA-relative slots, sorted. `None` for rules hotspot does not compare (expressions).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct FrameShape {
    cfa_register: u16,
    cfa_offset: i64,
    saved: Vec<(u16, i64)>,
}

impl FrameShape {
    /// Whether the frame is a function's at its first instruction: CFA `rsp+8`, nothing
    /// saved but the return address.
    pub(crate) fn is_function_entry(&self) -> bool {
        const RSP: u16 = 7;
        const RA: u16 = 16;
        self.cfa_register == RSP && self.cfa_offset == 8 && self.saved.iter().all(|(r, _)| *r == RA)
    }
}

/// The FDEs of one file, sorted by start address.
pub(crate) struct EhFrameIndex<'d> {
    eh: EhFrame<Slice<'d>>,
    bases: BaseAddresses,
    fdes: Vec<FrameDescriptionEntry<Slice<'d>>>,
}

impl<'d> EhFrameIndex<'d> {
    /// Every FDE of `elf`'s `.eh_frame` (none when it has none).
    pub(crate) fn new(elf: &ElfImage<'d>) -> Self {
        let (address, data) = elf.section(".eh_frame").unwrap_or((0, &[]));
        let eh = EhFrame::new(data, LittleEndian);
        let mut bases = BaseAddresses::default().set_eh_frame(address);
        if let Some((text, _)) = elf.section(".text") {
            bases = bases.set_text(text);
        }
        let mut fdes = Vec::new();
        let mut entries = eh.entries(&bases);
        while fdes.len() < MAX_FDES {
            let Ok(Some(entry)) = entries.next() else {
                break;
            };
            let CieOrFde::Fde(partial) = entry else {
                continue;
            };
            if let Ok(fde) = partial.parse(|s, b, o| s.cie_from_offset(b, o))
                && fde.len() > 0
                && fde.initial_address().checked_add(fde.len()).is_some()
            {
                fdes.push(fde);
            }
        }
        fdes.sort_by_key(|f| f.initial_address());
        EhFrameIndex { eh, bases, fdes }
    }

    /// The range of the FDE covering `address`.
    pub(crate) fn range_of(&self, address: u64) -> Option<Range<u64>> {
        let i = self
            .fdes
            .partition_point(|f| f.initial_address() <= address);
        let f = self.fdes.get(i.checked_sub(1)?)?;
        let r = f.initial_address()..f.end_address();
        r.contains(&address).then_some(r)
    }

    fn fde_at(&self, start: u64) -> Option<&FrameDescriptionEntry<Slice<'d>>> {
        let i = self.fdes.partition_point(|f| f.initial_address() < start);
        self.fdes.get(i).filter(|f| f.initial_address() == start)
    }

    /// The frame shape of every row of the FDE starting at `start` (at most `limit`).
    pub(crate) fn shapes(&self, start: u64, limit: usize) -> Vec<FrameShape> {
        let Some(fde) = self.fde_at(start) else {
            return Vec::new();
        };
        let mut ctx = Box::new(UnwindContext::new());
        let Ok(mut table) = fde.rows(&self.eh, &self.bases, &mut ctx) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        while out.len() < limit.min(MAX_ROWS) {
            let Ok(Some(row)) = table.next_row() else {
                break;
            };
            let CfaRule::RegisterAndOffset { register, offset } = row.cfa() else {
                continue;
            };
            let mut saved = Vec::new();
            let mut ok = true;
            for (reg, rule) in row.registers() {
                match rule {
                    RegisterRule::Offset(o) => saved.push((reg.0, *o)),
                    RegisterRule::Undefined | RegisterRule::SameValue => {}
                    _ => ok = false,
                }
            }
            if ok {
                saved.sort_unstable();
                out.push(FrameShape {
                    cfa_register: register.0,
                    cfa_offset: *offset,
                    saved,
                });
            }
        }
        out
    }
}
