//! How big the ring buffer is: sized from the sampling rate, the CPUs and the bytes a
//! typical sample takes, measured rather than for the worst case.

use super::abi::{
    HEADER_SIZE, MAX_KERNEL_FRAMES, MAX_USER_FRAMES, OFF_CPU_TAIL_SIZE, USER_REGS_SIZE,
};

/// Bytes of a sample record beside its stack copy: header, registers and frames, at the
/// 64 frames of a typical walk.
const TYPICAL_FRAME_BYTES: u64 = (HEADER_SIZE + USER_REGS_SIZE + 64 * 8) as u64;

/// Stack bytes a typical sample copies when the cap allows: the live stack, from the
/// stack pointer to the top of its frames, measured at 1.8 KB on average on Debian's
/// python3 and 2.1 KB on a threaded C program. Deeper programs (rustc: 18 KB median) fill
/// the ring faster; the reader is woken at a quarter full either way.
const TYPICAL_STACK_BYTES: u64 = 2 << 10;

/// The smallest ring when stacks are copied: room for a burst of deep stacks (about 40
/// of rustc's) while the reader is busy elsewhere.
const STACK_RING_FLOOR: u64 = 2 << 20;

/// The largest record the BPF program writes with `stack_cap`: every frame and a full
/// copy, and an off-CPU sample's tail.
pub fn max_record_bytes(stack_cap: u32) -> u32 {
    ((HEADER_SIZE + USER_REGS_SIZE + (MAX_USER_FRAMES + MAX_KERNEL_FRAMES) * 8 + OFF_CPU_TAIL_SIZE)
        as u32)
        .saturating_add(stack_cap)
}

/// A ring big enough for a sixteenth of a second of samples from every CPU, at the
/// expected bytes per sample: the header, registers and frames (608 bytes) plus the
/// stack copy, `stack_cap` or the 2 KiB a typical stack needs, whichever is less (a
/// copy ends at the top of the stack's frames, so ring space follows the real stack,
/// not the cap). Between 1 MiB (2 MiB when stacks are copied) and 64 MiB, and never less
/// than four of the largest records.
///
/// The program wakes the reader when a quarter is full and the reader drains at least
/// every 100 ms, so this leaves ample headroom. The ring costs the recorder twice its
/// size in RSS once the kernel has written all of it (its data pages are mapped twice,
/// so that a record that wraps reads as one piece): `busy` at 4999 Hz peaked at 14, 20
/// and 28 MB with rings of 1, 4 and 8 MiB, and 0 samples were lost with any of them. So
/// it is not sized for the worst case: 499 and 4999 Hz on 2 CPUs both get 2 MiB.
pub fn ring_bytes_for(freq_hz: u64, cpus: u64, stack_cap: u32) -> u32 {
    let per_sample = TYPICAL_FRAME_BYTES + u64::from(stack_cap).min(TYPICAL_STACK_BYTES);
    let want = freq_hz.saturating_mul(cpus).saturating_mul(per_sample) / 16;
    let least = if stack_cap > 0 {
        STACK_RING_FLOOR
    } else {
        1 << 20
    };
    let floor = (4 * u64::from(max_record_bytes(stack_cap))).max(least);
    let bytes = want.clamp(floor, 64 << 20).next_power_of_two();
    u32::try_from(bytes).unwrap_or(64 << 20)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpf::load::{SamplerOptions, validate};

    #[test]
    fn ring_follows_the_expected_bytes_per_sample() {
        // Frame-pointer mode and low rates: the 1 MiB floor.
        assert_eq!(ring_bytes_for(499, 2, 0), 1 << 20);
        // Copying stacks on 2 CPUs (~2.6 KB a sample, 1/16 s): the 2 MiB floor, at 499
        // Hz and at 4999 Hz.
        assert_eq!(ring_bytes_for(499, 2, 65536), 2 << 20);
        assert_eq!(ring_bytes_for(4999, 2, 65536), 2 << 20);
        assert_eq!(ring_bytes_for(4999, 12, 65536), 16 << 20);
        // The cap only matters below the typical stack.
        assert_eq!(
            ring_bytes_for(4999, 12, 65536),
            ring_bytes_for(4999, 12, 4096)
        );
        assert!(ring_bytes_for(4999, 12, 1024) < ring_bytes_for(4999, 12, 4096));
        // Many CPUs at a high rate: the 64 MiB ceiling.
        assert_eq!(ring_bytes_for(4999, 256, 65536), 64 << 20);
        for (freq, cpus, cap) in [(1, 1, 0), (1, 1, 65536), (u64::MAX, u64::MAX, 65536)] {
            let ring = ring_bytes_for(freq, cpus, cap);
            assert!(ring.is_power_of_two());
            let opts = SamplerOptions {
                ring_bytes: ring,
                stack_cap: cap,
                ..SamplerOptions::default()
            };
            assert!(validate(&opts).is_ok(), "{freq} Hz {cpus} CPUs cap {cap}");
        }
    }
}
