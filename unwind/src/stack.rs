//! The copied stack and reads from it, each failure classified into an [`End`].

use crate::End;
use crate::limits::PAST_END_WINDOW;

/// Why the copied stack ends where it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CopyEnd {
    /// At the end of the stack's mapping: nothing of the stack lies past it.
    MappingEnd,
    /// At the copy's cap: the stack goes on.
    Cap,
    /// At a page that could not be read: the stack may go on.
    Fault,
    /// Not known (the mapping could not be looked up): treated like [`CopyEnd::Cap`].
    Unknown,
}

/// The stack bytes copied at sample time.
#[derive(Clone, Copy, Debug)]
pub struct StackCopy<'a> {
    /// The address of `bytes[0]`: the stack pointer at sample time.
    pub base: u64,
    pub bytes: &'a [u8],
    pub end: CopyEnd,
}

impl StackCopy<'_> {
    /// The stop for a read or CFA `past` bytes beyond the end of the copy.
    #[cold]
    fn past_end(&self, past: u64) -> End {
        if past >= PAST_END_WINDOW {
            return End::OutsideStack;
        }
        match self.end {
            CopyEnd::MappingEnd => End::OutsideStack,
            CopyEnd::Cap | CopyEnd::Unknown => End::StackCap,
            CopyEnd::Fault => End::UnreadablePage,
        }
    }

    /// The offset of `addr` in the copy, if it is not below it.
    fn offset(&self, addr: u64) -> Result<u64, End> {
        addr.checked_sub(self.base).ok_or(End::OutsideStack)
    }

    /// The 8 bytes at `addr` (little-endian).
    #[inline]
    pub(crate) fn read_u64(&self, addr: u64) -> Result<u64, End> {
        let off = self.offset(addr)?;
        let len = self.bytes.len() as u64;
        if let Some(word) = usize::try_from(off)
            .ok()
            .and_then(|at| self.bytes.get(at..at.checked_add(8)?))
            .and_then(|word| <[u8; 8]>::try_from(word).ok())
        {
            return Ok(u64::from_le_bytes(word));
        }
        Err(self.past_end(off.saturating_add(8) - len))
    }

    /// Checks a CFA before it is used: it may lie at most at the end of the copy (the
    /// return address is the word below it), or past it as far as the stack may go on.
    #[inline]
    pub(crate) fn check_cfa(&self, cfa: u64) -> Result<(), End> {
        let off = self.offset(cfa)?;
        let len = self.bytes.len() as u64;
        if off <= len {
            Ok(())
        } else {
            Err(self.past_end(off - len))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(bytes: &[u8], end: CopyEnd) -> StackCopy<'_> {
        StackCopy {
            base: 0x1000,
            bytes,
            end,
        }
    }

    #[test]
    fn reads_inside_and_classifies_outside() {
        let mut bytes = vec![0u8; 24];
        bytes[8..16].copy_from_slice(&0x1122_3344_5566_7788u64.to_le_bytes());
        let s = copy(&bytes, CopyEnd::Cap);
        assert_eq!(s.read_u64(0x1008), Ok(0x1122_3344_5566_7788));
        assert_eq!(s.read_u64(0x1010), Ok(0));
        assert_eq!(s.read_u64(0x0ff8), Err(End::OutsideStack));
        assert_eq!(s.read_u64(0x1011), Err(End::StackCap));
        assert_eq!(s.read_u64(0x1000 + (64 << 20)), Err(End::OutsideStack));
        assert_eq!(s.read_u64(u64::MAX), Err(End::OutsideStack));
        let s = copy(&bytes, CopyEnd::Fault);
        assert_eq!(s.read_u64(0x1018), Err(End::UnreadablePage));
        let s = copy(&bytes, CopyEnd::MappingEnd);
        assert_eq!(s.read_u64(0x1018), Err(End::OutsideStack));
        let s = copy(&bytes, CopyEnd::Unknown);
        assert_eq!(s.read_u64(0x1018), Err(End::StackCap));
    }

    #[test]
    fn base_near_the_top_of_the_address_space() {
        let bytes = [0u8; 16];
        let s = StackCopy {
            base: u64::MAX - 8,
            bytes: &bytes,
            end: CopyEnd::Cap,
        };
        assert_eq!(s.read_u64(u64::MAX - 8), Ok(0));
        assert!(s.read_u64(u64::MAX).is_ok());
        assert_eq!(s.check_cfa(u64::MAX), Ok(()));
    }

    #[test]
    fn cfa_may_sit_at_the_end() {
        let bytes = [0u8; 16];
        let s = copy(&bytes, CopyEnd::MappingEnd);
        assert_eq!(s.check_cfa(0x1010), Ok(()));
        assert_eq!(s.check_cfa(0x1018), Err(End::OutsideStack));
        assert_eq!(s.check_cfa(0x0fff), Err(End::OutsideStack));
        let s = copy(&bytes, CopyEnd::Cap);
        assert_eq!(s.check_cfa(0x1018), Err(End::StackCap));
    }
}
