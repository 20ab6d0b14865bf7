//! Decoding of the records the BPF program writes into its ring buffer (layout: `ebpf/sample.h`).

use hotspot_format::ThreadState;
use zerocopy::{FromBytes, Immutable, KnownLayout};

use super::thread_times::{RawThread, ThreadTimesError, off_cpu_state};
use crate::proc_maps::Mapping;

/// Most user frames one sample can carry (`HS_MAX_USER_FRAMES`).
pub const MAX_USER_FRAMES: usize = 127;
/// Most kernel frames one sample can carry (`HS_MAX_KERNEL_FRAMES`).
pub const MAX_KERNEL_FRAMES: usize = 127;
/// Size of [`RawHeader`], the start of every record.
pub const HEADER_SIZE: usize = 48;
/// Size of [`RawUserRegs`], after the header in every sample.
pub const USER_REGS_SIZE: usize = 48;
/// Most stack bytes one sample can carry (`HS_MAX_STACK`).
pub const MAX_STACK: usize = 65536;

const KIND_SAMPLE: u32 = 1;
const KIND_FORK: u32 = 2;
const KIND_EXEC: u32 = 3;
const KIND_EXIT: u32 = 4;
const KIND_OFF_CPU: u32 = 5;
const KIND_THREAD_TIMES: u32 = 6;

/// Size of `struct hs_off_cpu`, the tail of an off-CPU record.
pub const OFF_CPU_TAIL_SIZE: usize = 8;

const FRAME_SIZE: usize = size_of::<u64>();

// hs_user_regs.flags (HS_REGS_*, HS_STACK_END_*, HS_STACK_VMA_BUSY in ebpf/sample.h).
const REGS_MASK: u32 = 0x3;
const REGS_NONE: u32 = 0;
const REGS_PERF: u32 = 1;
const REGS_TASK: u32 = 2;
const STACK_END_SHIFT: u32 = 4;
const STACK_END_MASK: u32 = 0xf << STACK_END_SHIFT;
const STACK_VMA_BUSY: u32 = 1 << 8;
const KNOWN_FLAGS: u32 = REGS_MASK | STACK_END_MASK | STACK_VMA_BUSY;

/// Byte-for-byte mirror of `struct hs_header` in `ebpf/sample.h`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, KnownLayout, Immutable)]
pub struct RawHeader {
    /// `enum hs_kind`.
    pub kind: u32,
    /// CPU the record was written on.
    pub cpu: u32,
    /// `bpf_ktime_get_ns()`, i.e. `CLOCK_MONOTONIC`.
    pub time_ns: u64,
    /// Thread-group id (the parent's for a fork).
    pub pid: u32,
    /// Thread id (the child's tgid for a fork).
    pub tid: u32,
    /// Thread name, NUL padded.
    pub comm: [u8; 16],
    /// Number of user frames after the header.
    pub user_depth: u32,
    /// Number of kernel frames after the user frames.
    pub kernel_depth: u32,
}

/// Byte-for-byte mirror of `struct hs_user_regs` in `ebpf/sample.h`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, KnownLayout, Immutable)]
pub struct RawUserRegs {
    /// User instruction pointer.
    pub ip: u64,
    /// User stack pointer: where the copied stack starts.
    pub sp: u64,
    /// User frame pointer (`rbp`).
    pub bp: u64,
    /// User `rbx`.
    pub rbx: u64,
    /// User `r11`.
    pub r11: u64,
    /// Bytes of stack after the frames.
    pub stack_len: u32,
    /// `HS_REGS_*` | `HS_STACK_END_*` | `HS_STACK_VMA_BUSY`.
    pub flags: u32,
}

// A mismatch with the C structs would silently misread every field; fail the build instead.
const _: () = assert!(size_of::<RawHeader>() == HEADER_SIZE);
const _: () = assert!(size_of::<RawUserRegs>() == USER_REGS_SIZE);

/// One decoded ring-buffer record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RawEvent {
    /// A timer tick that interrupted a traced thread.
    Sample(RawSample),
    /// `--off-cpu`: a traced thread came back on the CPU after enough blocked time to
    /// make an off-CPU sample due.
    OffCpu(RawOffCpu),
    /// `--off-cpu`: a traced thread's exact times, written at its exit (`times.last_ns`).
    ThreadTimes {
        /// The thread.
        tid: u32,
        /// As the kernel kept them (see [`RawThread::closed_at`]).
        times: RawThread,
    },
    /// A traced process created a process that is now traced too.
    Fork {
        /// When the fork happened (`CLOCK_MONOTONIC` ns).
        time_ns: u64,
        /// The parent's tgid.
        parent: u32,
        /// The child's tgid.
        child: u32,
    },
    /// A traced process replaced its program with `execve`.
    Exec {
        /// When the exec happened (`CLOCK_MONOTONIC` ns).
        time_ns: u64,
        /// The process's tgid (unchanged by exec).
        pid: u32,
        /// The new program's command name, NUL padded.
        comm: [u8; 16],
    },
    /// The last thread of a traced process exited.
    Exit {
        /// When the process exited (`CLOCK_MONOTONIC` ns).
        time_ns: u64,
        /// The process's tgid.
        pid: u32,
    },
    /// A process mapped executable memory (the kernel's mapping events: any process on
    /// the machine, traced or not).
    Mmap {
        /// When (`CLOCK_MONOTONIC` ns).
        time_ns: u64,
        /// The process's tgid.
        pid: u32,
        mapping: Mapping,
    },
    /// A process passed the point of no return of an exec: its old mappings are gone and
    /// the mappings that follow are the new image's (any process on the machine; the
    /// traced ones also get an [`RawEvent::Exec`] once the new image is mapped).
    NewImage {
        /// When (`CLOCK_MONOTONIC` ns): before the new image's mappings.
        time_ns: u64,
        /// The process's tgid.
        pid: u32,
    },
}

impl RawEvent {
    /// When it happened (`CLOCK_MONOTONIC` ns): the order events are handled in.
    pub fn time_ns(&self) -> u64 {
        match self {
            RawEvent::Sample(s) => s.time_ns,
            RawEvent::OffCpu(o) => o.sample.time_ns,
            RawEvent::ThreadTimes { times, .. } => times.last_ns,
            RawEvent::Fork { time_ns, .. }
            | RawEvent::Exec { time_ns, .. }
            | RawEvent::Exit { time_ns, .. }
            | RawEvent::Mmap { time_ns, .. }
            | RawEvent::NewImage { time_ns, .. } => *time_ns,
        }
    }
}

/// One stack sample of one thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawSample {
    /// When the tick fired (`CLOCK_MONOTONIC` ns).
    pub time_ns: u64,
    /// Thread-group id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// CPU the thread ran on.
    pub cpu: u32,
    /// Thread name at sample time, NUL padded.
    pub comm: [u8; 16],
    /// The kernel's frame-pointer walk of the user stack, leaf first; the first is the
    /// user PC. Empty in kernel threads, and in stack mode when the copy reached the top
    /// of the stack (`stack_end` is [`StackEnd::MappingEnd`]): the copy then holds every
    /// frame and the walk is not made (it cost 0.5-0.7 µs a sample).
    pub user: Vec<u64>,
    /// Kernel frames, leaf first. Empty when the tick interrupted user code.
    pub kernel: Vec<u64>,
    /// The user registers; `None` in frame-pointer mode and for a task with no user
    /// context (a kernel thread).
    pub regs: Option<UserRegs>,
    /// The user stack: the bytes at `regs.sp .. regs.sp + stack.len()`. Empty without
    /// `regs`.
    pub stack: Vec<u8>,
    /// Why `stack` ends where it does. Without `regs` it is [`StackEnd::Cap`] in
    /// frame-pointer mode (nothing is copied) and [`StackEnd::NoVma`] for a task with
    /// no user context.
    pub stack_end: StackEnd,
}

/// An off-CPU sample: the stack a thread blocked in, taken as it came back on the CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawOffCpu {
    /// `time_ns` is when the thread was switched back in; `regs` are the ones it saved
    /// entering the kernel, `kernel` the path it blocked in.
    pub sample: RawSample,
    /// The periods of blocked time this sample stands for (at least 1).
    pub periods: u32,
    /// The thread's state when it left the CPU for this wait.
    pub state: ThreadState,
}

/// The user registers an unwinder starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserRegs {
    /// Instruction pointer: the leaf frame, exact (not a return address).
    pub ip: u64,
    /// Stack pointer: the address of the first byte of [`RawSample::stack`].
    pub sp: u64,
    /// Frame pointer (`rbp`).
    pub bp: u64,
    /// `rbx`: some CFI computes the CFA from it (ld.so's `_dl_runtime_resolve`).
    pub rbx: u64,
    /// `r11`: LLVM's inline stack probe computes the CFA from it. In a kernel-mode
    /// sample taken in a system call it holds the flags (`syscall` overwrites it).
    pub r11: u64,
}

/// Why a sample's stack copy stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StackEnd {
    /// At the top of the stack: the copy holds every frame. That is the end of the
    /// stack pointer's mapping, or below it where the mapping's top holds no frames:
    /// the main thread's copy ends at the word above its initial stack pointer (argc;
    /// above lie the arguments, environment and auxiliary vector), a thread's at its
    /// thread pointer (above and just below lie its control block and TLS).
    MappingEnd,
    /// At the stack cap (or the mapping's end was unknown: the kernel found the
    /// target's mmap lock taken); the stack goes on past the copy.
    Cap,
    /// At a page the kernel could not read without faulting it in (not resident).
    Fault,
    /// The stack pointer is in no mapping: nothing was copied.
    NoVma,
}

/// Why a ring-buffer record could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RawError {
    /// Shorter than a header.
    #[error("BPF record of {len} bytes is shorter than its {HEADER_SIZE}-byte header")]
    TooShort {
        /// Length of the record.
        len: usize,
    },
    /// The kind field names no known record.
    #[error("BPF record has unknown kind {0}: ebpf/sample.h and raw.rs disagree")]
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

/// Decodes one ring-buffer record. Never panics: every length comes from the
/// kernel (or a fuzzer) and is checked against `bytes` before use.
pub fn parse_event(bytes: &[u8]) -> Result<RawEvent, RawError> {
    // read_from_prefix copies, so `bytes` needs no particular alignment.
    let (header, rest) =
        RawHeader::read_from_prefix(bytes).map_err(|_| RawError::TooShort { len: bytes.len() })?;
    match header.kind {
        KIND_SAMPLE => parse_sample(&header, rest, bytes.len()).map(RawEvent::Sample),
        KIND_OFF_CPU => parse_off_cpu(&header, rest, bytes.len()).map(RawEvent::OffCpu),
        KIND_THREAD_TIMES => Ok(RawEvent::ThreadTimes {
            tid: header.tid,
            times: RawThread::parse(rest)?,
        }),
        KIND_FORK | KIND_EXEC | KIND_EXIT => {
            // Task events are header-only; extra bytes mean the layouts disagree.
            if !rest.is_empty() {
                return Err(RawError::LengthMismatch {
                    len: bytes.len(),
                    expected: HEADER_SIZE,
                });
            }
            Ok(match header.kind {
                KIND_FORK => RawEvent::Fork {
                    time_ns: header.time_ns,
                    parent: header.pid,
                    child: header.tid,
                },
                KIND_EXEC => RawEvent::Exec {
                    time_ns: header.time_ns,
                    pid: header.pid,
                    comm: header.comm,
                },
                _ => RawEvent::Exit {
                    time_ns: header.time_ns,
                    pid: header.pid,
                },
            })
        }
        other => Err(RawError::UnknownKind(other)),
    }
}

/// A sample record with the off-CPU tail after its last byte.
fn parse_off_cpu(header: &RawHeader, rest: &[u8], len: usize) -> Result<RawOffCpu, RawError> {
    let Some(cut) = rest.len().checked_sub(OFF_CPU_TAIL_SIZE) else {
        return Err(RawError::NoRegisters { len });
    };
    let (body, tail) = rest.split_at(cut);
    let word = |at: usize| u32::from_ne_bytes([tail[at], tail[at + 1], tail[at + 2], tail[at + 3]]);
    let (periods, code) = (word(0), word(4));
    let state = off_cpu_state(code)
        .filter(|_| periods > 0)
        .ok_or(RawError::BadOffCpu {
            periods,
            state: code,
        })?;
    let sample = parse_sample(header, body, len - OFF_CPU_TAIL_SIZE)?;
    Ok(RawOffCpu {
        sample,
        periods,
        state,
    })
}

fn parse_sample(header: &RawHeader, rest: &[u8], len: usize) -> Result<RawSample, RawError> {
    let (regs, rest) =
        RawUserRegs::read_from_prefix(rest).map_err(|_| RawError::NoRegisters { len })?;
    let user_depth = header.user_depth as usize;
    let kernel_depth = header.kernel_depth as usize;
    // Checked before any multiplication, so a garbage depth or length cannot overflow.
    if user_depth > MAX_USER_FRAMES || kernel_depth > MAX_KERNEL_FRAMES {
        return Err(RawError::DepthOutOfRange {
            user: header.user_depth,
            kernel: header.kernel_depth,
        });
    }
    let stack_len = regs.stack_len as usize;
    if stack_len > MAX_STACK {
        return Err(RawError::StackTooLong {
            len: regs.stack_len,
        });
    }
    let (user_regs, stack_end) = decode_flags(&regs)?;
    let frames_len = (user_depth + kernel_depth) * FRAME_SIZE;
    let expected = HEADER_SIZE + USER_REGS_SIZE + frames_len + stack_len;
    if len != expected {
        return Err(RawError::LengthMismatch { len, expected });
    }
    // Lengths match, so these splits are in bounds.
    let (frames, stack) = rest.split_at(frames_len);
    let (user, kernel) = frames.split_at(user_depth * FRAME_SIZE);
    Ok(RawSample {
        time_ns: header.time_ns,
        pid: header.pid,
        tid: header.tid,
        cpu: header.cpu,
        comm: header.comm,
        user: read_frames(user),
        kernel: read_frames(kernel),
        regs: user_regs,
        stack: stack.to_vec(),
        stack_end,
    })
}

fn decode_flags(regs: &RawUserRegs) -> Result<(Option<UserRegs>, StackEnd), RawError> {
    let bad = || RawError::BadFlags {
        flags: regs.flags,
        stack_len: regs.stack_len,
    };
    if regs.flags & !KNOWN_FLAGS != 0 {
        return Err(bad());
    }
    let user_regs = match regs.flags & REGS_MASK {
        REGS_NONE => None,
        REGS_PERF | REGS_TASK => Some(UserRegs {
            ip: regs.ip,
            sp: regs.sp,
            bp: regs.bp,
            rbx: regs.rbx,
            r11: regs.r11,
        }),
        _ => return Err(bad()),
    };
    let stack_end = match (regs.flags & STACK_END_MASK) >> STACK_END_SHIFT {
        1 => StackEnd::MappingEnd,
        2 => StackEnd::Cap,
        3 => StackEnd::Fault,
        4 => StackEnd::NoVma,
        _ => return Err(bad()),
    };
    // Without registers there is no stack pointer to copy from.
    if user_regs.is_none() && regs.stack_len != 0 {
        return Err(bad());
    }
    Ok((user_regs, stack_end))
}

fn read_frames(bytes: &[u8]) -> Vec<u64> {
    bytes
        .chunks_exact(FRAME_SIZE)
        .map(|chunk| {
            let mut word = [0u8; FRAME_SIZE];
            word.copy_from_slice(chunk);
            // The kernel writes in its own byte order, which is ours.
            u64::from_ne_bytes(word)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const FP_FLAGS: u32 = REGS_NONE | (2 << STACK_END_SHIFT);

    fn header(kind: u32, user_depth: u32, kernel_depth: u32) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&kind.to_ne_bytes());
        b.extend_from_slice(&3u32.to_ne_bytes()); // cpu
        b.extend_from_slice(&123_456_789u64.to_ne_bytes());
        b.extend_from_slice(&1000u32.to_ne_bytes()); // pid
        b.extend_from_slice(&1001u32.to_ne_bytes()); // tid
        b.extend_from_slice(b"worker\0\0\0\0\0\0\0\0\0\0");
        b.extend_from_slice(&user_depth.to_ne_bytes());
        b.extend_from_slice(&kernel_depth.to_ne_bytes());
        assert_eq!(b.len(), HEADER_SIZE);
        b
    }

    fn regs(ip: u64, sp: u64, bp: u64, stack_len: u32, flags: u32) -> Vec<u8> {
        let mut b = Vec::new();
        // rbx and r11 derived from ip, so that every field differs
        for word in [ip, sp, bp, ip ^ 0xb0b0, ip ^ 0x1111] {
            b.extend_from_slice(&word.to_ne_bytes());
        }
        b.extend_from_slice(&stack_len.to_ne_bytes());
        b.extend_from_slice(&flags.to_ne_bytes());
        assert_eq!(b.len(), USER_REGS_SIZE);
        b
    }

    /// A record as the stack program writes it.
    fn stack_sample(user: &[u64], kernel: &[u64], flags: u32, stack: &[u8]) -> Vec<u8> {
        let mut b = header(KIND_SAMPLE, user.len() as u32, kernel.len() as u32);
        b.extend(regs(
            0x40_1000,
            0x7ffc_0000_1000,
            0x7ffc_0000_1040,
            stack.len() as u32,
            flags,
        ));
        for f in user.iter().chain(kernel) {
            b.extend_from_slice(&f.to_ne_bytes());
        }
        b.extend_from_slice(stack);
        b
    }

    /// A record as the frame-pointer program writes it.
    fn sample(user: &[u64], kernel: &[u64]) -> Vec<u8> {
        let mut b = header(KIND_SAMPLE, user.len() as u32, kernel.len() as u32);
        b.extend(regs(0, 0, 0, 0, FP_FLAGS));
        for f in user.iter().chain(kernel) {
            b.extend_from_slice(&f.to_ne_bytes());
        }
        b
    }

    fn parsed(bytes: &[u8]) -> RawSample {
        match parse_event(bytes) {
            Ok(RawEvent::Sample(s)) => s,
            other => panic!("not a sample: {other:?}"),
        }
    }

    #[test]
    fn decodes_a_sample_with_both_stacks() {
        let bytes = sample(&[0x401000, 0x401234], &[0xffff_ffff_8100_0000]);
        let event = parse_event(&bytes).expect("valid sample");
        assert_eq!(
            event,
            RawEvent::Sample(RawSample {
                time_ns: 123_456_789,
                pid: 1000,
                tid: 1001,
                cpu: 3,
                comm: *b"worker\0\0\0\0\0\0\0\0\0\0",
                user: vec![0x401000, 0x401234],
                kernel: vec![0xffff_ffff_8100_0000],
                regs: None,
                stack: Vec::new(),
                stack_end: StackEnd::Cap,
            })
        );
    }

    #[test]
    fn decodes_registers_and_stack_after_the_frames() {
        let stack: Vec<u8> = (0..=255).collect();
        let bytes = stack_sample(
            &[7],
            &[0xffff_ffff_8100_0000, 9],
            REGS_PERF | (1 << 4),
            &stack,
        );
        assert_eq!(bytes.len(), HEADER_SIZE + USER_REGS_SIZE + 3 * 8 + 256);
        let s = parsed(&bytes);
        assert_eq!(
            s.regs,
            Some(UserRegs {
                ip: 0x40_1000,
                sp: 0x7ffc_0000_1000,
                bp: 0x7ffc_0000_1040,
                rbx: 0x40_a0b0,
                r11: 0x40_0111,
            })
        );
        assert_eq!(
            (s.user, s.kernel),
            (vec![7], vec![0xffff_ffff_8100_0000, 9])
        );
        assert_eq!(s.stack, stack);
        assert_eq!(s.stack_end, StackEnd::MappingEnd);

        // Task registers, every end, the busy bit, no frames at all.
        for (end, want) in [
            (1, StackEnd::MappingEnd),
            (2, StackEnd::Cap),
            (3, StackEnd::Fault),
            (4, StackEnd::NoVma),
        ] {
            let flags = REGS_TASK | (end << 4) | STACK_VMA_BUSY;
            let s = parsed(&stack_sample(&[], &[], flags, &[1, 2, 3]));
            assert!(s.regs.is_some() && s.user.is_empty() && s.kernel.is_empty());
            assert_eq!((s.stack, s.stack_end), (vec![1, 2, 3], want));
        }
        // No user context: no registers, nothing copied.
        let s = parsed(&stack_sample(&[], &[5], 4 << 4, &[]));
        assert_eq!((s.regs, s.stack_end), (None, StackEnd::NoVma));
    }

    #[test]
    fn decodes_the_largest_stack() {
        let stack = vec![0xa5; MAX_STACK];
        let user: Vec<u64> = (0..MAX_USER_FRAMES as u64).collect();
        let kernel: Vec<u64> = (0..MAX_KERNEL_FRAMES as u64).map(|x| !x).collect();
        let s = parsed(&stack_sample(&user, &kernel, REGS_PERF | (2 << 4), &stack));
        assert_eq!((s.user, s.kernel), (user, kernel));
        assert_eq!(s.stack.len(), MAX_STACK);
        assert_eq!(s.stack_end, StackEnd::Cap);
    }

    #[test]
    fn decodes_empty_and_full_stacks() {
        let s = parsed(&sample(&[], &[]));
        assert!(s.user.is_empty() && s.kernel.is_empty());

        let user: Vec<u64> = (0..MAX_USER_FRAMES as u64).collect();
        let kernel: Vec<u64> = (0..MAX_KERNEL_FRAMES as u64).map(|x| !x).collect();
        let s = parsed(&sample(&user, &kernel));
        assert_eq!((s.user, s.kernel), (user, kernel));
    }

    #[test]
    fn decodes_task_events() {
        assert_eq!(
            parse_event(&header(KIND_FORK, 0, 0)),
            Ok(RawEvent::Fork {
                time_ns: 123_456_789,
                parent: 1000,
                child: 1001
            })
        );
        assert_eq!(
            parse_event(&header(KIND_EXEC, 0, 0)),
            Ok(RawEvent::Exec {
                time_ns: 123_456_789,
                pid: 1000,
                comm: *b"worker\0\0\0\0\0\0\0\0\0\0"
            })
        );
        assert_eq!(
            parse_event(&header(KIND_EXIT, 0, 0)),
            Ok(RawEvent::Exit {
                time_ns: 123_456_789,
                pid: 1000
            })
        );
    }

    #[test]
    fn parses_unaligned_input() {
        let bytes = stack_sample(&[1, 2, 3], &[4], REGS_PERF | (3 << 4), &[9; 13]);
        let mut shifted = vec![0u8];
        shifted.extend_from_slice(&bytes);
        assert_eq!(parse_event(&shifted[1..]), parse_event(&bytes));
        assert!(parse_event(&bytes).is_ok());
    }

    #[test]
    fn rejects_short_input() {
        for len in 0..HEADER_SIZE {
            assert_eq!(
                parse_event(&sample(&[], &[])[..len]),
                Err(RawError::TooShort { len })
            );
        }
        // A header but not all of the registers.
        for len in HEADER_SIZE..HEADER_SIZE + USER_REGS_SIZE {
            assert_eq!(
                parse_event(&sample(&[], &[])[..len]),
                Err(RawError::NoRegisters { len })
            );
        }
    }

    #[test]
    fn rejects_truncated_and_padded_stacks() {
        for bytes in [
            sample(&[1, 2, 3], &[4, 5]),
            stack_sample(&[1], &[4, 5], REGS_PERF | (1 << 4), &[7; 100]),
        ] {
            for len in HEADER_SIZE + USER_REGS_SIZE..bytes.len() {
                assert!(
                    matches!(
                        parse_event(&bytes[..len]),
                        Err(RawError::LengthMismatch { .. })
                    ),
                    "cut at {len}"
                );
            }
            let mut padded = bytes.clone();
            padded.extend_from_slice(&[0; 8]);
            assert!(matches!(
                parse_event(&padded),
                Err(RawError::LengthMismatch { .. })
            ));
            padded.truncate(bytes.len() + 1);
            assert!(matches!(
                parse_event(&padded),
                Err(RawError::LengthMismatch { .. })
            ));
        }
        let mut fork = header(KIND_FORK, 0, 0);
        fork.push(0);
        assert!(matches!(
            parse_event(&fork),
            Err(RawError::LengthMismatch { .. })
        ));
    }

    #[test]
    fn rejects_impossible_depths_and_lengths_without_overflow() {
        let mut bytes = header(KIND_SAMPLE, u32::MAX, u32::MAX);
        bytes.extend(regs(0, 0, 0, 0, FP_FLAGS));
        bytes.extend_from_slice(&[0; 64]);
        assert_eq!(
            parse_event(&bytes),
            Err(RawError::DepthOutOfRange {
                user: u32::MAX,
                kernel: u32::MAX
            })
        );
        let mut user = header(KIND_SAMPLE, 128, 0);
        user.extend(regs(0, 0, 0, 0, FP_FLAGS));
        assert!(matches!(
            parse_event(&user),
            Err(RawError::DepthOutOfRange { .. })
        ));
        let mut kernel = header(KIND_SAMPLE, 0, 128);
        kernel.extend(regs(0, 0, 0, 0, FP_FLAGS));
        assert!(matches!(
            parse_event(&kernel),
            Err(RawError::DepthOutOfRange { .. })
        ));

        // Stack lengths past the cap's maximum, even with the bytes present.
        for len in [MAX_STACK as u32 + 1, u32::MAX] {
            let mut b = header(KIND_SAMPLE, 0, 0);
            b.extend(regs(1, 2, 3, len, REGS_PERF | (2 << 4)));
            b.resize(HEADER_SIZE + USER_REGS_SIZE + MAX_STACK + 1, 0);
            assert_eq!(parse_event(&b), Err(RawError::StackTooLong { len }));
        }
    }

    #[test]
    fn rejects_flags_the_program_never_writes() {
        for flags in [
            3 | (1 << 4),                    // unknown register source
            REGS_PERF,                       // no stack end
            REGS_PERF | (5 << 4),            // unknown stack end
            REGS_PERF | (1 << 4) | (1 << 9), // reserved bit
            u32::MAX,
        ] {
            assert!(
                matches!(
                    parse_event(&stack_sample(&[], &[], flags, &[])),
                    Err(RawError::BadFlags { .. })
                ),
                "flags {flags:#x}"
            );
        }
        // Stack bytes without registers to say where they are.
        assert!(matches!(
            parse_event(&stack_sample(&[], &[], REGS_NONE | (2 << 4), &[1])),
            Err(RawError::BadFlags { .. })
        ));
    }

    /// An off-CPU record: a sample, then the tail.
    fn off_cpu(periods: u32, state: u32, stack: &[u8]) -> Vec<u8> {
        let mut b = stack_sample(&[], &[0xffff_ffff_8100_0000], REGS_TASK | (1 << 4), stack);
        b[0..4].copy_from_slice(&KIND_OFF_CPU.to_ne_bytes());
        b.extend_from_slice(&periods.to_ne_bytes());
        b.extend_from_slice(&state.to_ne_bytes());
        b
    }

    #[test]
    fn decodes_off_cpu_samples_and_thread_times() {
        let bytes = off_cpu(7, 2, &[1, 2, 3]);
        assert_eq!(
            bytes.len(),
            HEADER_SIZE + USER_REGS_SIZE + 8 + 3 + OFF_CPU_TAIL_SIZE
        );
        match parse_event(&bytes) {
            Ok(RawEvent::OffCpu(o)) => {
                assert_eq!((o.periods, o.state), (7, ThreadState::Uninterruptible));
                assert_eq!(o.sample.stack, vec![1, 2, 3]);
                assert_eq!(o.sample.kernel, vec![0xffff_ffff_8100_0000]);
            }
            other => panic!("not an off-CPU sample: {other:?}"),
        }
        // No periods, no waiting state, or the tail missing.
        for (periods, state) in [(0, 1), (1, 0), (1, 4)] {
            assert_eq!(
                parse_event(&off_cpu(periods, state, &[])),
                Err(RawError::BadOffCpu { periods, state })
            );
        }
        let short = off_cpu(1, 1, &[9; 5]);
        assert!(matches!(
            parse_event(&short[..short.len() - 1]),
            Err(RawError::BadOffCpu { .. } | RawError::LengthMismatch { .. })
        ));
        let mut bare = header(KIND_OFF_CPU, 0, 0);
        bare.extend_from_slice(&[0; 4]);
        assert!(parse_event(&bare).is_err());

        let mut times = header(KIND_THREAD_TIMES, 0, 0);
        for w in [100u64, 400, 100, 200, 0, 0, 5] {
            times.extend_from_slice(&w.to_ne_bytes());
        }
        times.extend_from_slice(&1000u32.to_ne_bytes());
        times.extend_from_slice(&0u32.to_ne_bytes());
        times.extend_from_slice(&12_345u64.to_ne_bytes());
        match parse_event(&times) {
            Ok(RawEvent::ThreadTimes { tid, times: t }) => {
                assert_eq!(
                    (tid, t.tgid, t.on_cpu_ns, t.sleeping_ns),
                    (1001, 1000, 100, 200)
                );
            }
            other => panic!("not thread times: {other:?}"),
        }
        times.push(0);
        assert!(matches!(parse_event(&times), Err(RawError::ThreadTimes(_))));
    }

    #[test]
    fn rejects_unknown_kinds() {
        assert_eq!(parse_event(&header(0, 0, 0)), Err(RawError::UnknownKind(0)));
        assert_eq!(
            parse_event(&header(99, 0, 0)),
            Err(RawError::UnknownKind(99))
        );
    }

    #[test]
    fn garbage_never_panics() {
        // A cheap deterministic generator: no extra dependency for a smoke fuzz.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut decoded = 0;
        for _ in 0..40_000 {
            let len = (next() % 700) as usize;
            let mut bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            // Steer some inputs into the sample path with small depths, lengths and
            // plausible flags, so the deeper checks are reached too.
            if len >= HEADER_SIZE + USER_REGS_SIZE && next() % 2 == 0 {
                bytes[0..4].copy_from_slice(&KIND_SAMPLE.to_ne_bytes());
                bytes[40..44].copy_from_slice(&((next() % 40) as u32).to_ne_bytes());
                bytes[44..48].copy_from_slice(&((next() % 40) as u32).to_ne_bytes());
                let (len_at, flags_at) = (HEADER_SIZE + 40, HEADER_SIZE + 44);
                bytes[len_at..len_at + 4].copy_from_slice(&((next() % 600) as u32).to_ne_bytes());
                let flags = (next() % 4) as u32 | (((next() % 6) as u32) << 4);
                bytes[flags_at..flags_at + 4].copy_from_slice(&flags.to_ne_bytes());
                // Sometimes make the length agree with the header.
                if next() % 2 == 0 {
                    let depth = u32::from_ne_bytes(bytes[40..44].try_into().expect("4"))
                        + u32::from_ne_bytes(bytes[44..48].try_into().expect("4"));
                    let stack =
                        u32::from_ne_bytes(bytes[len_at..len_at + 4].try_into().expect("4"));
                    bytes.resize(
                        HEADER_SIZE + USER_REGS_SIZE + 8 * depth as usize + stack as usize,
                        0,
                    );
                }
            }
            if parse_event(&bytes).is_ok() {
                decoded += 1;
            }
        }
        // The steering works: some garbage is well-formed enough to decode.
        assert!(decoded > 100, "only {decoded} inputs decoded");
    }
}
