//! Straight-line epilogues in code without CFI: the instructions at a return address (or
//! at an interrupted PC) up to `ret`, when they only pop and move the stack pointer by a
//! constant. CPython 3.12's `-X perf` trampolines are `sub $8,%rsp; call *%rcx; add
//! $8,%rsp; ret` in anonymous memory, with no frame pointer for the frame-pointer rule:
//! reading `add $8,%rsp; ret` at the return address gives the caller exactly. glibc's
//! `_fini` (`endbr64; sub $8,%rsp; add $8,%rsp; ret`, no FDE) sampled anywhere is the same:
//! run forward to its `ret`.

use crate::End;
use crate::rule::{Rbx, State};
use crate::stack::StackCopy;

/// Bytes of code read at a return address: enough for a few pops and a `ret`.
pub(crate) const CODE_BYTES: usize = 16;

/// Instructions simulated at most (every one takes at least a byte).
const MAX_STEPS: usize = 8;

/// Runs the epilogue in `code` (the bytes at `st.ip`) on `st`: `None` when the code is
/// not such an epilogue (the caller then tries the frame-pointer rule), else the frame
/// rule's result (`Ok(true)`: `st` is the caller's).
pub(crate) fn unwind(code: &[u8], st: &mut State, stack: &StackCopy) -> Option<Result<bool, End>> {
    let mut sp = st.sp;
    let mut bp = st.bp;
    let mut rbx = st.rbx;
    let mut at = 0usize;
    for _ in 0..MAX_STEPS {
        let rest = code.get(at..)?;
        match rest {
            // ret, rep ret
            [0xc3, ..] | [0xf3, 0xc3, ..] => {
                return Some(finish(st, stack, sp, bp, rbx));
            }
            // add $imm8, %rsp
            [0x48, 0x83, 0xc4, imm, ..] => {
                let imm = i8::from_le_bytes([*imm]);
                sp = sp.checked_add(u64::try_from(imm).ok()?)?;
                at += 4;
            }
            // add $imm32, %rsp
            [0x48, 0x81, 0xc4, a, b, c, d, ..] => {
                let imm = i32::from_le_bytes([*a, *b, *c, *d]);
                sp = sp.checked_add(u64::try_from(imm).ok()?)?;
                at += 7;
            }
            // sub $imm8, %rsp (a leaf function's prologue; the walk must still reach `ret`
            // with the stack pointer above where it started, see `finish`)
            [0x48, 0x83, 0xec, imm, ..] => {
                let imm = i8::from_le_bytes([*imm]);
                sp = sp.checked_sub(u64::try_from(imm).ok()?)?;
                at += 4;
            }
            // endbr64
            [0xf3, 0x0f, 0x1e, 0xfa, ..] => at += 4,
            // pop %rbp
            [0x5d, ..] => {
                bp = Some(match stack.read_u64(sp) {
                    Ok(v) => v,
                    Err(end) => return Some(Err(end)),
                });
                sp = sp.checked_add(8)?;
                at += 1;
            }
            // leave: mov %rbp,%rsp; pop %rbp
            [0xc9, ..] => {
                let frame = bp?;
                if frame < sp {
                    return None;
                }
                bp = Some(match stack.read_u64(frame) {
                    Ok(v) => v,
                    Err(end) => return Some(Err(end)),
                });
                sp = frame.checked_add(8)?;
                at += 1;
            }
            // pop %rbx: the caller's is in that slot
            [0x5b, ..] => {
                rbx = Rbx::Saved(sp);
                sp = sp.checked_add(8)?;
                at += 1;
            }
            // pop of another register (not %rsp, %rbp or %rbx)
            [r, ..] if (0x58..=0x5f).contains(r) && *r != 0x5c => {
                sp = sp.checked_add(8)?;
                at += 1;
            }
            [0x41, r, ..] if (0x58..=0x5f).contains(r) => {
                sp = sp.checked_add(8)?;
                at += 2;
            }
            // nop, xchg %ax,%ax
            [0x90, ..] => at += 1,
            [0x66, 0x90, ..] => at += 2,
            _ => return None,
        }
    }
    None
}

/// `ret` with the stack pointer at `sp`: the caller's PC is the word there. r11 is unknown
/// in the caller, as after any call.
fn finish(
    st: &mut State,
    stack: &StackCopy,
    sp: u64,
    bp: Option<u64>,
    rbx: Rbx,
) -> Result<bool, End> {
    let ra = stack.read_u64(sp)?;
    let caller_sp = sp.checked_add(8).ok_or(End::OutsideStack)?;
    stack.check_cfa(caller_sp)?;
    if caller_sp <= st.sp {
        return Err(End::NoProgress);
    }
    if ra == 0 {
        return Ok(false);
    }
    *st = State {
        ip: ra,
        sp: caller_sp,
        bp,
        rbx,
        r11: None,
    };
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CopyEnd;

    fn copy(bytes: &[u8]) -> StackCopy<'_> {
        StackCopy {
            base: 0x1000,
            bytes,
            end: CopyEnd::MappingEnd,
        }
    }

    fn words(ws: &[u64]) -> Vec<u8> {
        ws.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    fn state() -> State {
        State {
            ip: 0x5000,
            sp: 0x1000,
            bp: Some(0x77),
            rbx: Rbx::Value(0x66),
            r11: Some(0x11),
        }
    }

    #[test]
    fn cpython_trampoline_tail() {
        // add $8,%rsp; ret: the return address is one word up.
        let bytes = words(&[0xaaaa, 0x4242, 0]);
        let mut st = state();
        let r = unwind(
            &[0x48, 0x83, 0xc4, 0x08, 0xc3, 0xcc],
            &mut st,
            &copy(&bytes),
        );
        assert_eq!(r, Some(Ok(true)));
        assert_eq!((st.ip, st.sp, st.bp), (0x4242, 0x1010, Some(0x77)));
        // rbx untouched by the epilogue: the caller's; r11 unknown after a call
        assert_eq!((st.rbx, st.r11), (Rbx::Value(0x66), None));
    }

    #[test]
    fn pops_and_leave() {
        // pop %rbx; pop %rbp; pop %r12; ret
        let bytes = words(&[1, 0x2000, 3, 0x4444]);
        let mut st = state();
        let r = unwind(&[0x5b, 0x5d, 0x41, 0x5c, 0xc3], &mut st, &copy(&bytes));
        assert_eq!(r, Some(Ok(true)));
        assert_eq!((st.ip, st.sp, st.bp), (0x4444, 0x1020, Some(0x2000)));
        // the popped slot (it holds 1)
        assert_eq!((st.rbx, st.r11), (Rbx::Saved(0x1000), None));
        // leave; ret with rbp at a frame record
        let bytes = words(&[0, 0, 0x3000, 0x5555]);
        let mut st = State {
            bp: Some(0x1010),
            ..state()
        };
        let r = unwind(&[0xc9, 0xc3], &mut st, &copy(&bytes));
        assert_eq!(r, Some(Ok(true)));
        assert_eq!((st.ip, st.sp, st.bp), (0x5555, 0x1020, Some(0x3000)));
    }

    #[test]
    fn glibc_fini_from_any_instruction() {
        // _fini: endbr64; sub $8,%rsp; add $8,%rsp; ret
        let code = [
            0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x83, 0xec, 0x08, 0x48, 0x83, 0xc4, 0x08, 0xc3,
        ];
        // Sampled at the entry or the sub: the return address is at sp; after the sub, one
        // word up; at the ret, at sp again.
        for (at, slot) in [(0usize, 0usize), (4, 0), (8, 1), (12, 0)] {
            let mut ws = vec![0xdead; 2];
            ws[slot] = 0x4242;
            let bytes = words(&ws);
            let mut st = state();
            let r = unwind(&code[at..], &mut st, &copy(&bytes));
            assert_eq!(r, Some(Ok(true)), "at {at}");
            assert_eq!(
                (st.ip, st.sp),
                (0x4242, 0x1008 + 8 * slot as u64),
                "at {at}"
            );
        }
    }

    #[test]
    fn other_code_is_not_an_epilogue() {
        let bytes = words(&[1, 2, 3]);
        for code in [
            &[0x48, 0x89, 0xe5][..],         // mov %rsp,%rbp
            &[0x5c, 0xc3],                   // pop %rsp
            &[0x48, 0x83, 0xc4, 0xf8, 0xc3], // add $-8,%rsp
            &[0x90; 16],                     // no ret within reach
            &[],
        ] {
            let mut st = state();
            assert_eq!(unwind(code, &mut st, &copy(&bytes)), None, "{code:x?}");
            assert_eq!((st.ip, st.sp), (0x5000, 0x1000));
        }
    }

    #[test]
    fn reads_past_the_copy_stop_with_the_copy_end() {
        let bytes = words(&[1]);
        let mut st = state();
        let r = unwind(&[0x48, 0x83, 0xc4, 0x40, 0xc3], &mut st, &copy(&bytes));
        assert_eq!(r, Some(Err(End::OutsideStack)));
    }
}
