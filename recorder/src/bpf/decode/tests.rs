//! The decoder against records as the BPF program writes them, and garbage.

use super::*;
use crate::bpf::abi::*;
use crate::event::{StackEnd, StackSample, UserRegs};
use hotspot_format::ThreadState;

const FP_FLAGS: u32 = HS_REGS_NONE | (2 << HS_STACK_END_SHIFT);

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
    let mut b = header(HS_KIND_SAMPLE, user.len() as u32, kernel.len() as u32);
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
    let mut b = header(HS_KIND_SAMPLE, user.len() as u32, kernel.len() as u32);
    b.extend(regs(0, 0, 0, 0, FP_FLAGS));
    for f in user.iter().chain(kernel) {
        b.extend_from_slice(&f.to_ne_bytes());
    }
    b
}

fn parsed(bytes: &[u8]) -> StackSample {
    match parse_event(bytes) {
        Ok(Event::Sample(s)) => s,
        other => panic!("not a sample: {other:?}"),
    }
}

#[test]
fn decodes_a_sample_with_both_stacks() {
    let bytes = sample(&[0x401000, 0x401234], &[0xffff_ffff_8100_0000]);
    let event = parse_event(&bytes).expect("valid sample");
    assert_eq!(
        event,
        Event::Sample(StackSample {
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
            python: None,
        })
    );
}

#[test]
fn decodes_registers_and_stack_after_the_frames() {
    let stack: Vec<u8> = (0..=255).collect();
    let bytes = stack_sample(
        &[7],
        &[0xffff_ffff_8100_0000, 9],
        HS_REGS_PERF | (1 << 4),
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
        let flags = HS_REGS_TASK | (end << 4) | HS_STACK_VMA_BUSY;
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
    let s = parsed(&stack_sample(
        &user,
        &kernel,
        HS_REGS_PERF | (2 << 4),
        &stack,
    ));
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
        parse_event(&header(HS_KIND_FORK, 0, 0)),
        Ok(Event::Fork {
            time_ns: 123_456_789,
            parent: 1000,
            child: 1001
        })
    );
    assert_eq!(
        parse_event(&header(HS_KIND_EXEC, 0, 0)),
        Ok(Event::Exec {
            time_ns: 123_456_789,
            pid: 1000,
            comm: *b"worker\0\0\0\0\0\0\0\0\0\0"
        })
    );
    assert_eq!(
        parse_event(&header(HS_KIND_EXIT, 0, 0)),
        Ok(Event::Exit {
            time_ns: 123_456_789,
            pid: 1000
        })
    );
}

#[test]
fn parses_unaligned_input() {
    let bytes = stack_sample(&[1, 2, 3], &[4], HS_REGS_PERF | (3 << 4), &[9; 13]);
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
            Err(DecodeError::TooShort { len })
        );
    }
    // A header but not all of the registers.
    for len in HEADER_SIZE..HEADER_SIZE + USER_REGS_SIZE {
        assert_eq!(
            parse_event(&sample(&[], &[])[..len]),
            Err(DecodeError::NoRegisters { len })
        );
    }
}

#[test]
fn rejects_truncated_and_padded_stacks() {
    for bytes in [
        sample(&[1, 2, 3], &[4, 5]),
        stack_sample(&[1], &[4, 5], HS_REGS_PERF | (1 << 4), &[7; 100]),
    ] {
        for len in HEADER_SIZE + USER_REGS_SIZE..bytes.len() {
            assert!(
                matches!(
                    parse_event(&bytes[..len]),
                    Err(DecodeError::LengthMismatch { .. })
                ),
                "cut at {len}"
            );
        }
        let mut padded = bytes.clone();
        padded.extend_from_slice(&[0; 8]);
        assert!(matches!(
            parse_event(&padded),
            Err(DecodeError::LengthMismatch { .. })
        ));
        padded.truncate(bytes.len() + 1);
        assert!(matches!(
            parse_event(&padded),
            Err(DecodeError::LengthMismatch { .. })
        ));
    }
    let mut fork = header(HS_KIND_FORK, 0, 0);
    fork.push(0);
    assert!(matches!(
        parse_event(&fork),
        Err(DecodeError::LengthMismatch { .. })
    ));
}

#[test]
fn rejects_impossible_depths_and_lengths_without_overflow() {
    let mut bytes = header(HS_KIND_SAMPLE, u32::MAX, u32::MAX);
    bytes.extend(regs(0, 0, 0, 0, FP_FLAGS));
    bytes.extend_from_slice(&[0; 64]);
    assert_eq!(
        parse_event(&bytes),
        Err(DecodeError::DepthOutOfRange {
            user: u32::MAX,
            kernel: u32::MAX
        })
    );
    let mut user = header(HS_KIND_SAMPLE, 128, 0);
    user.extend(regs(0, 0, 0, 0, FP_FLAGS));
    assert!(matches!(
        parse_event(&user),
        Err(DecodeError::DepthOutOfRange { .. })
    ));
    let mut kernel = header(HS_KIND_SAMPLE, 0, 128);
    kernel.extend(regs(0, 0, 0, 0, FP_FLAGS));
    assert!(matches!(
        parse_event(&kernel),
        Err(DecodeError::DepthOutOfRange { .. })
    ));

    // Stack lengths past the cap's maximum, even with the bytes present.
    for len in [MAX_STACK as u32 + 1, u32::MAX] {
        let mut b = header(HS_KIND_SAMPLE, 0, 0);
        b.extend(regs(1, 2, 3, len, HS_REGS_PERF | (2 << 4)));
        b.resize(HEADER_SIZE + USER_REGS_SIZE + MAX_STACK + 1, 0);
        assert_eq!(parse_event(&b), Err(DecodeError::StackTooLong { len }));
    }
}

/// A stack sample with a Python part (`HS_PYTHON`) of `frames` (code, instr, flags)
/// ending `end`, between the kernel frames and the stack bytes.
fn python_sample(frames: &[(u64, u32, u32)], depth: u32, end: u32, stack: &[u8]) -> Vec<u8> {
    let mut b = stack_sample(&[0x40_1000], &[], HS_REGS_PERF | HS_PYTHON | (1 << 4), &[]);
    b.extend_from_slice(&depth.to_ne_bytes());
    b.extend_from_slice(&end.to_ne_bytes());
    for (code, instr, flags) in frames {
        b.extend_from_slice(&code.to_ne_bytes());
        b.extend_from_slice(&instr.to_ne_bytes());
        b.extend_from_slice(&flags.to_ne_bytes());
    }
    b.extend_from_slice(stack);
    // The stack length in the registers covers the bytes after the Python part.
    let at = HEADER_SIZE + std::mem::offset_of!(HsUserRegs, stack_len);
    b[at..at + 4].copy_from_slice(&(stack.len() as u32).to_ne_bytes());
    b
}

#[test]
fn decodes_the_python_part_between_frames_and_stack() {
    let b = python_sample(
        &[(0xc0de, 0x40, HS_PY_FRAME_ENTRY), (0xc0d3, 8, 0)],
        2,
        HS_PY_END_CAP,
        &[7, 8, 9],
    );
    let Ok(Event::Sample(s)) = parse_event(&b) else {
        panic!("{:?}", parse_event(&b));
    };
    let py = s.python.expect("a Python part");
    assert_eq!(py.end, crate::event::PythonEnd::Cap);
    assert_eq!(
        py.frames,
        vec![
            crate::event::PythonFrame {
                code: 0xc0de,
                instr: 0x40,
                entry: true
            },
            crate::event::PythonFrame {
                code: 0xc0d3,
                instr: 8,
                entry: false
            },
        ]
    );
    assert_eq!(s.stack, vec![7, 8, 9], "the stack follows the Python part");
    // A depth past what the program carries, frames past the record, an unknown end.
    for bad in [
        python_sample(&[], HS_MAX_PYTHON_FRAMES + 1, HS_PY_END_BOTTOM, &[]),
        python_sample(&[(1, 2, 0)], 3, HS_PY_END_BOTTOM, &[]),
        python_sample(&[], 0, 99, &[]),
    ] {
        assert!(parse_event(&bad).is_err(), "{bad:?}");
    }
}

#[test]
fn rejects_flags_the_program_never_writes() {
    for flags in [
        3 | (1 << 4),                        // unknown register source
        HS_REGS_PERF,                        // no stack end
        HS_REGS_PERF | (5 << 4),             // unknown stack end
        HS_REGS_PERF | (1 << 4) | (1 << 10), // reserved bit
        u32::MAX,
    ] {
        assert!(
            matches!(
                parse_event(&stack_sample(&[], &[], flags, &[])),
                Err(DecodeError::BadFlags { .. })
            ),
            "flags {flags:#x}"
        );
    }
    // Stack bytes without registers to say where they are.
    assert!(matches!(
        parse_event(&stack_sample(&[], &[], HS_REGS_NONE | (2 << 4), &[1])),
        Err(DecodeError::BadFlags { .. })
    ));
}

/// An off-CPU record: a sample, then the tail.
fn off_cpu(periods: u32, state: u32, stack: &[u8]) -> Vec<u8> {
    let mut b = stack_sample(
        &[],
        &[0xffff_ffff_8100_0000],
        HS_REGS_TASK | (1 << 4),
        stack,
    );
    b[0..4].copy_from_slice(&HS_KIND_OFF_CPU.to_ne_bytes());
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
        Ok(Event::OffCpu(o)) => {
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
            Err(DecodeError::BadOffCpu { periods, state })
        );
    }
    let short = off_cpu(1, 1, &[9; 5]);
    assert!(matches!(
        parse_event(&short[..short.len() - 1]),
        Err(DecodeError::BadOffCpu { .. } | DecodeError::LengthMismatch { .. })
    ));
    let mut bare = header(HS_KIND_OFF_CPU, 0, 0);
    bare.extend_from_slice(&[0; 4]);
    assert!(parse_event(&bare).is_err());

    let mut times = header(HS_KIND_THREAD_TIMES, 0, 0);
    for w in [100u64, 400, 100, 200, 0, 0, 5] {
        times.extend_from_slice(&w.to_ne_bytes());
    }
    times.extend_from_slice(&1000u32.to_ne_bytes());
    times.extend_from_slice(&0u32.to_ne_bytes());
    times.extend_from_slice(&12_345u64.to_ne_bytes());
    match parse_event(&times) {
        Ok(Event::ThreadTimes { tid, times: t }) => {
            assert_eq!(
                (tid, t.pid, t.on_cpu_ns, t.sleeping_ns),
                (1001, 1000, 100, 200)
            );
        }
        other => panic!("not thread times: {other:?}"),
    }
    times.push(0);
    assert!(matches!(
        parse_event(&times),
        Err(DecodeError::ThreadTimes(_))
    ));
}

#[test]
fn rejects_unknown_kinds() {
    assert_eq!(
        parse_event(&header(0, 0, 0)),
        Err(DecodeError::UnknownKind(0))
    );
    assert_eq!(
        parse_event(&header(99, 0, 0)),
        Err(DecodeError::UnknownKind(99))
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
            bytes[0..4].copy_from_slice(&HS_KIND_SAMPLE.to_ne_bytes());
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
                let stack = u32::from_ne_bytes(bytes[len_at..len_at + 4].try_into().expect("4"));
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
