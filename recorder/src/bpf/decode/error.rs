//! Why a ring record or a `threads` value did not decode: a BPF object out of step with
//! `ebpf/sample.h`, or bytes that are not the program's.

use super::super::abi::{HEADER_SIZE, MAX_STACK, THREAD_SIZE, USER_REGS_SIZE};

/// Why a ring-buffer record could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Shorter than a header.
    #[error("BPF record of {len} bytes is shorter than its {HEADER_SIZE}-byte header")]
    TooShort {
        /// Length of the record.
        len: usize,
    },
    /// The kind field names no known record.
    #[error("BPF record has unknown kind {0}: the BPF object and ebpf/sample.h disagree")]
    UnknownKind(u32),
    /// A depth above what the BPF program can write.
    #[error(
        "BPF sample claims {user} user and {kernel} kernel frames, more than the 127 + 127 possible"
    )]
    DepthOutOfRange {
        /// Claimed user depth.
        user: u32,
        /// Claimed kernel depth.
        kernel: u32,
    },
    /// A sample shorter than its header and registers.
    #[error(
        "BPF sample of {len} bytes is shorter than its {HEADER_SIZE}-byte header and {USER_REGS_SIZE}-byte registers"
    )]
    NoRegisters {
        /// Length of the record.
        len: usize,
    },
    /// A stack length above what the BPF program can copy.
    #[error("BPF sample claims {len} stack bytes, more than the {MAX_STACK} possible")]
    StackTooLong {
        /// Claimed stack length.
        len: u32,
    },
    /// Flags the BPF program does not write: unknown bits, register source or stack end,
    /// or stack bytes without registers.
    #[error("BPF sample has invalid flags {flags:#x} (stack_len {stack_len})")]
    BadFlags {
        /// The flags word.
        flags: u32,
        /// The claimed stack length.
        stack_len: u32,
    },
    /// An off-CPU tail the program never writes: no periods, or not a waiting state.
    #[error("BPF off-CPU sample has {periods} periods and state {state}")]
    BadOffCpu {
        /// Its periods.
        periods: u32,
        /// Its state code.
        state: u32,
    },
    /// A Python part the program never writes: more frames than it can carry, frames
    /// past the record's end, or an unknown end.
    #[error("BPF sample has a Python part of {} frames ending {}, which the program never writes", .0.depth, .0.end)]
    BadPython(super::super::abi::HsPython),
    /// A thread-times record that does not decode.
    #[error(transparent)]
    ThreadTimes(#[from] ThreadTimesError),
    /// The length does not match what the header announces.
    #[error("BPF record is {len} bytes but its header announces {expected}")]
    LengthMismatch {
        /// Length of the record.
        len: usize,
        /// Length implied by the header.
        expected: usize,
    },
}

/// Why a `threads` value or thread-times record does not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ThreadTimesError {
    #[error("BPF thread times of {len} bytes, not {THREAD_SIZE}")]
    Length { len: usize },
    #[error("BPF thread times with unknown state {0}")]
    State(u32),
    #[error("BPF thread times that do not add up (first {first_ns}, last {last_ns})")]
    Inconsistent { first_ns: u64, last_ns: u64 },
}
