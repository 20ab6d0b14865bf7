//! Completing a stack that ran out of copied bytes from the kernel's frame-pointer chain.

use crate::{Frame, MAX_FRAMES};

/// Appends to `out` the part of `chain` (the kernel's frame-pointer walk of the same
/// sample: the PC, then return addresses, leaf first) that lies past `out`'s last frame.
///
/// The chain may miss frames (callers of functions without a frame pointer) and starts
/// with garbage where rbp was not a frame pointer, so the two are joined where they agree:
/// at an occurrence of `out`'s last address in the chain. Recursion repeats addresses;
/// the occurrence taken is the n-th, n being how often that address occurs in `out`, so
/// the frames before the join are not counted twice. Returns whether it spliced.
pub fn splice_frame_pointers(out: &mut Vec<Frame>, chain: &[u64]) -> bool {
    let Some(last) = out.last() else {
        return false;
    };
    let addr = last.addr;
    let times = out.iter().filter(|f| f.addr == addr).count();
    let mut found = chain
        .iter()
        .enumerate()
        .filter(|(_, a)| **a == addr)
        .map(|(i, _)| i);
    // The n-th occurrence, or the last one when the chain has fewer (it skipped some).
    let Some(at) = found.by_ref().take(times).last() else {
        return false;
    };
    let rest = chain.get(at + 1..).unwrap_or_default();
    let room = MAX_FRAMES.saturating_sub(out.len());
    let before = out.len();
    out.extend(
        rest.iter()
            .take_while(|&&a| a != 0)
            .take(room)
            .map(|&addr| Frame { addr, exact: false }),
    );
    out.len() > before
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn joins_at_the_last_frame() {
        let mut out = frames(&[0x10, 0x20, 0x30]);
        assert!(splice_frame_pointers(
            &mut out,
            &[0x10, 0x20, 0x30, 0x40, 0x50]
        ));
        assert_eq!(addrs(&out), [0x10, 0x20, 0x30, 0x40, 0x50]);
        assert!(out[3..].iter().all(|f| !f.exact));
    }

    #[test]
    fn chain_with_garbage_and_skipped_frames() {
        // the chain's start is garbage (a frameless leaf), and it skips 0x20
        let mut out = frames(&[0x10, 0x20, 0x30]);
        assert!(splice_frame_pointers(&mut out, &[0x10, 0xdead, 0x30, 0x40]));
        assert_eq!(addrs(&out), [0x10, 0x20, 0x30, 0x40]);
    }

    #[test]
    fn recursion_is_not_counted_twice() {
        // f recursed 5 times; the copy held 3 of them
        let mut out = frames(&[0x10, 0xf0, 0xf0, 0xf0]);
        let chain = [0x10, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0x99];
        assert!(splice_frame_pointers(&mut out, &chain));
        assert_eq!(addrs(&out), [0x10, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0x99]);
    }

    #[test]
    fn nothing_to_join() {
        let mut out = frames(&[0x10, 0x20]);
        assert!(!splice_frame_pointers(&mut out, &[0x11, 0x21, 0x31]));
        assert_eq!(addrs(&out), [0x10, 0x20]);
        assert!(!splice_frame_pointers(&mut out, &[]));
        assert!(!splice_frame_pointers(&mut out, &[0x10, 0x20])); // joined, nothing past it
        let mut empty = Vec::new();
        assert!(!splice_frame_pointers(&mut empty, &[1, 2]));
    }

    #[test]
    fn stops_at_zero_and_at_the_frame_cap() {
        let mut out = frames(&[0x10]);
        assert!(splice_frame_pointers(&mut out, &[0x10, 0x20, 0, 0x30]));
        assert_eq!(addrs(&out), [0x10, 0x20]);
        let mut out = frames(&[0x10]);
        let chain: Vec<u64> = std::iter::once(0x10).chain(1..5000).collect();
        assert!(splice_frame_pointers(&mut out, &chain));
        assert_eq!(out.len(), MAX_FRAMES);
    }
}
