//! Decoding of the records the BPF program writes into its ring buffer (layout: `ebpf/sample.h`).

use zerocopy::{FromBytes, Immutable, KnownLayout};

/// Most user frames one sample can carry (`HS_MAX_USER_FRAMES`).
pub const MAX_USER_FRAMES: usize = 127;
/// Most kernel frames one sample can carry (`HS_MAX_KERNEL_FRAMES`).
pub const MAX_KERNEL_FRAMES: usize = 127;
/// Size of [`RawHeader`], the start of every record.
pub const HEADER_SIZE: usize = 48;

const KIND_SAMPLE: u32 = 1;
const KIND_FORK: u32 = 2;
const KIND_EXEC: u32 = 3;
const KIND_EXIT: u32 = 4;

const FRAME_SIZE: usize = size_of::<u64>();

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

// A mismatch with the C struct would silently misread every field; fail the build instead.
const _: () = assert!(size_of::<RawHeader>() == HEADER_SIZE);

/// One decoded ring-buffer record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RawEvent {
    /// A timer tick that interrupted a traced thread.
    Sample(RawSample),
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
    /// User frames, leaf first; the first is the interrupted PC. Empty in kernel threads.
    pub user: Vec<u64>,
    /// Kernel frames, leaf first. Empty when the tick interrupted user code.
    pub kernel: Vec<u64>,
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

fn parse_sample(header: &RawHeader, frames: &[u8], len: usize) -> Result<RawSample, RawError> {
    let user_depth = header.user_depth as usize;
    let kernel_depth = header.kernel_depth as usize;
    // Checked before any multiplication, so a garbage depth cannot overflow.
    if user_depth > MAX_USER_FRAMES || kernel_depth > MAX_KERNEL_FRAMES {
        return Err(RawError::DepthOutOfRange {
            user: header.user_depth,
            kernel: header.kernel_depth,
        });
    }
    let expected = HEADER_SIZE + (user_depth + kernel_depth) * FRAME_SIZE;
    if len != expected {
        return Err(RawError::LengthMismatch { len, expected });
    }
    let (user, kernel) = frames.split_at(user_depth * FRAME_SIZE);
    Ok(RawSample {
        time_ns: header.time_ns,
        pid: header.pid,
        tid: header.tid,
        cpu: header.cpu,
        comm: header.comm,
        user: read_frames(user),
        kernel: read_frames(kernel),
    })
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

    fn sample(user: &[u64], kernel: &[u64]) -> Vec<u8> {
        let mut b = header(KIND_SAMPLE, user.len() as u32, kernel.len() as u32);
        for f in user.iter().chain(kernel) {
            b.extend_from_slice(&f.to_ne_bytes());
        }
        b
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
            })
        );
    }

    #[test]
    fn decodes_empty_and_full_stacks() {
        let Ok(RawEvent::Sample(s)) = parse_event(&sample(&[], &[])) else {
            panic!("empty sample rejected");
        };
        assert!(s.user.is_empty() && s.kernel.is_empty());

        let user: Vec<u64> = (0..MAX_USER_FRAMES as u64).collect();
        let kernel: Vec<u64> = (0..MAX_KERNEL_FRAMES as u64).map(|x| !x).collect();
        let Ok(RawEvent::Sample(s)) = parse_event(&sample(&user, &kernel)) else {
            panic!("full sample rejected");
        };
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
        let bytes = sample(&[1, 2, 3], &[4]);
        let mut shifted = vec![0u8];
        shifted.extend_from_slice(&bytes);
        assert_eq!(parse_event(&shifted[1..]), parse_event(&bytes));
    }

    #[test]
    fn rejects_short_input() {
        for len in 0..HEADER_SIZE {
            assert_eq!(
                parse_event(&sample(&[], &[])[..len]),
                Err(RawError::TooShort { len })
            );
        }
    }

    #[test]
    fn rejects_truncated_and_padded_stacks() {
        let bytes = sample(&[1, 2, 3], &[4, 5]);
        for len in HEADER_SIZE..bytes.len() {
            assert!(matches!(
                parse_event(&bytes[..len]),
                Err(RawError::LengthMismatch { .. })
            ));
        }
        let mut padded = bytes.clone();
        padded.extend_from_slice(&[0; 8]);
        assert!(matches!(
            parse_event(&padded),
            Err(RawError::LengthMismatch { .. })
        ));
        let mut fork = header(KIND_FORK, 0, 0);
        fork.push(0);
        assert!(matches!(
            parse_event(&fork),
            Err(RawError::LengthMismatch { .. })
        ));
    }

    #[test]
    fn rejects_impossible_depths_without_overflow() {
        let mut bytes = header(KIND_SAMPLE, u32::MAX, u32::MAX);
        bytes.extend_from_slice(&[0; 64]);
        assert_eq!(
            parse_event(&bytes),
            Err(RawError::DepthOutOfRange {
                user: u32::MAX,
                kernel: u32::MAX
            })
        );
        assert!(parse_event(&header(KIND_SAMPLE, 128, 0)).is_err());
        assert!(parse_event(&header(KIND_SAMPLE, 0, 128)).is_err());
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
        for _ in 0..20_000 {
            let len = (next() % 400) as usize;
            let mut bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            // Steer some inputs into the sample path with small depths.
            if len >= HEADER_SIZE && next() % 2 == 0 {
                bytes[0..4].copy_from_slice(&KIND_SAMPLE.to_ne_bytes());
                bytes[40..44].copy_from_slice(&((next() % 140) as u32).to_ne_bytes());
                bytes[44..48].copy_from_slice(&((next() % 140) as u32).to_ne_bytes());
            }
            let _ = parse_event(&bytes);
        }
    }
}
