//! Completing a stack that ran out of copied bytes from the kernel's frame-pointer chain.

use crate::{AddressSpace, CodeAt, Frame, MAX_FRAMES, StackCopy};

/// Appends to `out` the part of `chain` (the kernel's frame-pointer walk of the same
/// sample: the PC, then return addresses, leaf first) that lies past the end of the copy.
///
/// The join is found by position, not by matching addresses (recursion repeats them, and
/// code without frame pointers gives the kernel garbage to walk): the frame records the
/// chain came from are walked again inside the copy, from `bp` (the sampled rbp), each
/// one's return address checked against the chain. Where the walk leaves the copy, the
/// chain's entry read from the last record inside it must be `out`'s last frame: the
/// frame whose caller the copy could not give. Only then is the rest of the chain, read by
/// the kernel past the copy, appended, as far as its addresses lie in code: rbp that
/// merely points into the stack (code without frame pointers uses it as a register) gives
/// the kernel words that are no return addresses. Returns whether it spliced.
pub fn splice_frame_pointers(
    out: &mut Vec<Frame>,
    chain: &[u64],
    stack: &StackCopy,
    bp: u64,
    space: &mut impl AddressSpace,
) -> bool {
    let Some(last) = out.last().map(|f| f.addr) else {
        return false;
    };
    let end = stack.base.saturating_add(stack.bytes.len() as u64);
    // Records inside the copy: chain[n + 1] is the return address in record n.
    let mut record = bp;
    let mut inside = 0usize;
    while record.saturating_add(16) <= end {
        let (Ok(next), Ok(ra)) = (stack.read_u64(record), stack.read_u64(record + 8)) else {
            // Below the copy, or misaligned garbage: not a chain of this stack.
            return false;
        };
        if chain.get(inside + 1) != Some(&ra) || next <= record || inside >= MAX_FRAMES {
            return false;
        }
        record = next;
        inside += 1;
    }
    // The first record past the copy must be the one the unwind stopped for.
    if inside == 0 || chain.get(inside) != Some(&last) {
        return false;
    }
    let rest = chain.get(inside + 1..).unwrap_or_default();
    let room = MAX_FRAMES.saturating_sub(out.len());
    let before = out.len();
    for &addr in rest.iter().take(room) {
        if addr == 0 || matches!(space.code_at(addr.wrapping_sub(1)), CodeAt::Unmapped) {
            break;
        }
        out.push(Frame { addr, exact: false });
    }
    out.len() > before
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CopyEnd;

    fn frames(addrs: &[u64]) -> Vec<Frame> {
        addrs
            .iter()
            .enumerate()
            .map(|(i, &addr)| Frame {
                addr,
                exact: i == 0,
            })
            .collect()
    }

    fn addrs(out: &[Frame]) -> Vec<u64> {
        out.iter().map(|f| f.addr).collect()
    }

    const BASE: u64 = 0x7000;

    /// Code at every address below 0x1000, nothing elsewhere.
    struct Low;

    impl AddressSpace for Low {
        fn code_at(&mut self, avma: u64) -> CodeAt<'_> {
            if avma < 0x1000 {
                CodeAt::Anonymous
            } else {
                CodeAt::Unmapped
            }
        }
    }

    /// A copied stack of `len` bytes with frame records (next, return address) at the
    /// given offsets.
    fn stack(len: usize, records: &[(u64, u64, u64)]) -> Vec<u8> {
        let mut b = vec![0u8; len];
        for &(at, next, ra) in records {
            let at = (at - BASE) as usize;
            b[at..at + 8].copy_from_slice(&next.to_le_bytes());
            b[at + 8..at + 16].copy_from_slice(&ra.to_le_bytes());
        }
        b
    }

    fn copy(bytes: &[u8]) -> StackCopy<'_> {
        StackCopy {
            base: BASE,
            bytes,
            end: CopyEnd::Cap,
        }
    }

    #[test]
    fn joins_where_the_records_leave_the_copy() {
        // Records at 0x7010 and 0x7040 inside the copy; the next one (0x9000) is past it.
        let bytes = stack(0x100, &[(0x7010, 0x7040, 0x20), (0x7040, 0x9000, 0x30)]);
        let chain = [0x10, 0x20, 0x30, 0x40, 0x50];
        let mut out = frames(&[0x10, 0x20, 0x30]);
        assert!(splice_frame_pointers(
            &mut out,
            &chain,
            &copy(&bytes),
            0x7010,
            &mut Low
        ));
        assert_eq!(addrs(&out), [0x10, 0x20, 0x30, 0x40, 0x50]);
        assert!(out[3..].iter().all(|f| !f.exact));
    }

    #[test]
    fn recursion_joins_by_position() {
        // f recursed 5 times; the copy holds 3 records; every return address is 0xf0.
        let bytes = stack(
            0x100,
            &[
                (0x7010, 0x7030, 0xf0),
                (0x7030, 0x7050, 0xf0),
                (0x7050, 0x8000, 0xf0),
            ],
        );
        let chain = [0x10, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0x99];
        let mut out = frames(&[0x10, 0xf0, 0xf0, 0xf0]);
        assert!(splice_frame_pointers(
            &mut out,
            &chain,
            &copy(&bytes),
            0x7010,
            &mut Low
        ));
        assert_eq!(addrs(&out), [0x10, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0x99]);
        // A copy holding two of the records joins after the second.
        let mut short = frames(&[0x10, 0xf0, 0xf0]);
        let bytes = stack(0x100, &[(0x7010, 0x7030, 0xf0), (0x7030, 0x8000, 0xf0)]);
        let before = addrs(&short);
        assert!(splice_frame_pointers(
            &mut short,
            &chain,
            &copy(&bytes),
            0x7010,
            &mut Low
        ));
        assert_eq!(addrs(&short)[..3], before[..]);
        assert_eq!(short.len(), 3 + 4);
    }

    #[test]
    fn garbage_chains_are_refused() {
        let bytes = stack(0x100, &[(0x7010, 0x7040, 0x20), (0x7040, 0x9000, 0x30)]);
        let c = copy(&bytes);
        let chain = [0x10, 0x20, 0x30, 0x40];
        let mut out = frames(&[0x10, 0x20, 0x30]);
        // rbp was no frame pointer: below the copy, or pointing at something else.
        assert!(!splice_frame_pointers(&mut out, &chain, &c, 0x10, &mut Low));
        assert!(!splice_frame_pointers(
            &mut out, &chain, &c, 0x7020, &mut Low
        ));
        // The chain disagrees with the records in the copy.
        assert!(!splice_frame_pointers(
            &mut out,
            &[0x10, 0x21, 0x30, 0x40],
            &c,
            0x7010,
            &mut Low
        ));
        // The unwind stopped at another frame than the one past the copy.
        let mut other = frames(&[0x10, 0x20, 0x31]);
        assert!(!splice_frame_pointers(
            &mut other, &chain, &c, 0x7010, &mut Low
        ));
        // rbp already past the copy: nothing inside to check the chain against.
        assert!(!splice_frame_pointers(
            &mut out, &chain, &c, 0x9000, &mut Low
        ));
        // Records that do not move up the stack.
        let looping = stack(0x100, &[(0x7010, 0x7010, 0x20)]);
        assert!(!splice_frame_pointers(
            &mut out,
            &chain,
            &copy(&looping),
            0x7010,
            &mut Low
        ));
        assert_eq!(addrs(&out), [0x10, 0x20, 0x30]);
        let mut empty = Vec::new();
        assert!(!splice_frame_pointers(
            &mut empty, &chain, &c, 0x7010, &mut Low
        ));
    }

    #[test]
    fn stops_where_the_chain_leaves_code() {
        let bytes = stack(0x100, &[(0x7010, 0x9000, 0x20)]);
        let mut out = frames(&[0x10, 0x20]);
        // rbp pointed into the stack, not at a frame record: the kernel read data.
        assert!(!splice_frame_pointers(
            &mut out,
            &[0x10, 0x20, 0x5555_0000, 0x30],
            &copy(&bytes),
            0x7010,
            &mut Low
        ));
        assert_eq!(addrs(&out), [0x10, 0x20]);
        assert!(splice_frame_pointers(
            &mut out,
            &[0x10, 0x20, 0x30, 0x5555_0000, 0x40],
            &copy(&bytes),
            0x7010,
            &mut Low
        ));
        assert_eq!(addrs(&out), [0x10, 0x20, 0x30]);
    }

    #[test]
    fn stops_at_zero_and_at_the_frame_cap() {
        let bytes = stack(0x100, &[(0x7010, 0x9000, 0x20)]);
        let mut out = frames(&[0x10, 0x20]);
        assert!(splice_frame_pointers(
            &mut out,
            &[0x10, 0x20, 0x30, 0, 0x40],
            &copy(&bytes),
            0x7010,
            &mut Low
        ));
        assert_eq!(addrs(&out), [0x10, 0x20, 0x30]);
        let mut out = frames(&[0x10, 0x20]);
        let chain: Vec<u64> = [0x10, 0x20]
            .into_iter()
            .chain((1..5000).map(|i| i % 0xfff + 1))
            .collect();
        assert!(splice_frame_pointers(
            &mut out,
            &chain,
            &copy(&bytes),
            0x7010,
            &mut Low
        ));
        assert_eq!(out.len(), MAX_FRAMES);
    }
}
