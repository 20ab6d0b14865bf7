//! A sample record's body: the registers, the frames and the stack copy after the
//! header, every length checked against the record's.

use zerocopy::FromBytes;

use super::super::abi::{
    HEADER_SIZE, HS_PY_END_BOTTOM, HS_PY_END_CAP, HS_PY_END_FAULT, HS_PY_END_FOREIGN,
    HS_PY_END_NO_STATE, HS_PY_END_STATE_FAULT, HS_PY_FRAME_ENTRY, HS_PYTHON, HS_REGS_MASK,
    HS_REGS_NONE, HS_REGS_PERF, HS_REGS_TASK, HS_STACK_END_CAP, HS_STACK_END_FAULT,
    HS_STACK_END_MAPPING, HS_STACK_END_MASK, HS_STACK_END_NO_VMA, HS_STACK_VMA_BUSY, HsHeader,
    HsPython, HsPythonFrame, HsUserRegs, MAX_KERNEL_FRAMES, MAX_PYTHON_FRAMES, MAX_STACK,
    MAX_USER_FRAMES, PYTHON_FRAME_SIZE, PYTHON_HEADER_SIZE, USER_REGS_SIZE,
};
use super::error::DecodeError;
use crate::event::{PythonEnd, PythonFrame, PythonStack, StackEnd, StackSample, UserRegs};

const FRAME_SIZE: usize = size_of::<u64>();

/// Every bit of `hs_user_regs.flags` the program writes.
const KNOWN_FLAGS: u32 = HS_REGS_MASK | HS_STACK_END_MASK | HS_STACK_VMA_BUSY | HS_PYTHON;

/// The sample after `header`: `rest` is the record past the header, `len` the whole
/// record's length (less an off-CPU tail).
pub(super) fn parse_sample(
    header: &HsHeader,
    rest: &[u8],
    len: usize,
) -> Result<StackSample, DecodeError> {
    let (regs, rest) =
        HsUserRegs::read_from_prefix(rest).map_err(|_| DecodeError::NoRegisters { len })?;
    let user_depth = header.user_depth as usize;
    let kernel_depth = header.kernel_depth as usize;
    // Checked before any multiplication, so a garbage depth or length cannot overflow.
    if user_depth > MAX_USER_FRAMES || kernel_depth > MAX_KERNEL_FRAMES {
        return Err(DecodeError::DepthOutOfRange {
            user: header.user_depth,
            kernel: header.kernel_depth,
        });
    }
    let stack_len = regs.stack_len as usize;
    if stack_len > MAX_STACK {
        return Err(DecodeError::StackTooLong {
            len: regs.stack_len,
        });
    }
    let (user_regs, stack_end) = decode_flags(&regs)?;
    let frames_len = (user_depth + kernel_depth) * FRAME_SIZE;
    let (frames, rest) = rest
        .split_at_checked(frames_len)
        .ok_or(DecodeError::LengthMismatch {
            len,
            expected: HEADER_SIZE + USER_REGS_SIZE + frames_len + stack_len,
        })?;
    let (python, python_len) = if regs.flags & HS_PYTHON != 0 {
        let (p, n) = parse_python(rest, len)?;
        (Some(p), n)
    } else {
        (None, 0)
    };
    let expected = HEADER_SIZE + USER_REGS_SIZE + frames_len + python_len + stack_len;
    if len != expected {
        return Err(DecodeError::LengthMismatch { len, expected });
    }
    // Lengths match, so these splits are in bounds.
    let stack = &rest[python_len..];
    let (user, kernel) = frames.split_at(user_depth * FRAME_SIZE);
    Ok(StackSample {
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
        python,
    })
}

/// The Python part at the start of `bytes` (an `hs_python` and its frames), and its
/// length.
fn parse_python(bytes: &[u8], len: usize) -> Result<(PythonStack, usize), DecodeError> {
    let (head, rest) =
        HsPython::read_from_prefix(bytes).map_err(|_| DecodeError::NoRegisters { len })?;
    let depth = head.depth as usize;
    let end = match head.end {
        HS_PY_END_BOTTOM => PythonEnd::Bottom,
        HS_PY_END_CAP => PythonEnd::Cap,
        HS_PY_END_FAULT => PythonEnd::Fault,
        HS_PY_END_NO_STATE => PythonEnd::NoState,
        HS_PY_END_FOREIGN => PythonEnd::Foreign,
        HS_PY_END_STATE_FAULT => PythonEnd::StateFault,
        _ => return Err(DecodeError::BadPython(head)),
    };
    if depth > MAX_PYTHON_FRAMES {
        return Err(DecodeError::BadPython(head));
    }
    let body = rest
        .get(..depth * PYTHON_FRAME_SIZE)
        .ok_or(DecodeError::BadPython(head))?;
    let frames = body
        .chunks_exact(PYTHON_FRAME_SIZE)
        .map(|c| {
            let f = HsPythonFrame::read_from_bytes(c).unwrap_or(HsPythonFrame {
                code: 0,
                instr: 0,
                flags: 0,
            });
            PythonFrame {
                code: f.code,
                instr: f.instr,
                entry: f.flags & HS_PY_FRAME_ENTRY != 0,
            }
        })
        .collect();
    Ok((
        PythonStack { frames, end },
        PYTHON_HEADER_SIZE + depth * PYTHON_FRAME_SIZE,
    ))
}

fn decode_flags(regs: &HsUserRegs) -> Result<(Option<UserRegs>, StackEnd), DecodeError> {
    let bad = || DecodeError::BadFlags {
        flags: regs.flags,
        stack_len: regs.stack_len,
    };
    if regs.flags & !KNOWN_FLAGS != 0 {
        return Err(bad());
    }
    let user_regs = match regs.flags & HS_REGS_MASK {
        HS_REGS_NONE => None,
        HS_REGS_PERF | HS_REGS_TASK => Some(UserRegs {
            ip: regs.ip,
            sp: regs.sp,
            bp: regs.bp,
            rbx: regs.rbx,
            r11: regs.r11,
        }),
        _ => return Err(bad()),
    };
    let stack_end = match regs.flags & HS_STACK_END_MASK {
        HS_STACK_END_MAPPING => StackEnd::MappingEnd,
        HS_STACK_END_CAP => StackEnd::Cap,
        HS_STACK_END_FAULT => StackEnd::Fault,
        HS_STACK_END_NO_VMA => StackEnd::NoVma,
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
