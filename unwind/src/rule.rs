//! The compact form a frame's CFI row is compiled into, and applying it to a frame.
//!
//! Only rip, rsp and rbp are recovered: nothing else is needed to find return addresses
//! on x86_64, and a rule of 36 bytes keeps the cache small and its lookups cheap.

use crate::End;
use crate::expr::{Expr, Reg};
use crate::stack::StackCopy;

/// What a value is computed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Base {
    /// This frame's CFA.
    Cfa,
    /// The callee's rsp (the frame being unwound).
    Sp,
    /// The callee's rbp.
    Bp,
}

/// How the caller's value of a register is recovered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Value {
    /// Not recoverable (for the return address: this is the outermost frame).
    Undefined,
    /// Unchanged by this frame.
    Same,
    /// `base + off`, then read from the stack `loads` times (0, 1 or 2).
    At { base: Base, off: i32, loads: u8 },
}

impl Value {
    /// The value saved at `base + off`: DWARF's `offset(N)` and `expression`.
    pub(crate) const fn saved(base: Base, off: i32) -> Value {
        Value::At {
            base,
            off,
            loads: 1,
        }
    }
}

/// How the CFA is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cfa {
    /// `reg + off`, read from the stack when `deref`.
    Reg { reg: Reg, off: i32, deref: bool },
    /// The PLT expression (see [`Expr::Plt`]).
    Plt { threshold: u8 },
}

impl From<Expr> for Cfa {
    fn from(e: Expr) -> Cfa {
        match e {
            Expr::Reg { reg, off, deref } => Cfa::Reg { reg, off, deref },
            Expr::Plt { threshold } => Cfa::Plt { threshold },
        }
    }
}

/// One address's unwind rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rule {
    pub(crate) cfa: Cfa,
    pub(crate) ra: Value,
    pub(crate) bp: Value,
    /// The caller's rsp: the CFA unless the CFI says otherwise (signal frames do).
    pub(crate) sp: Value,
    /// The frame is a signal trampoline (CIE augmentation `S`): its caller's PC was
    /// interrupted, not a return address.
    pub(crate) signal: bool,
}

impl Rule {
    /// The frame-pointer rule: CFA = rbp + 16, return address at CFA - 8, rbp at CFA - 16.
    pub(crate) const FRAME_POINTER: Rule = Rule {
        cfa: Cfa::Reg {
            reg: Reg::Bp,
            off: 16,
            deref: false,
        },
        ra: Value::saved(Base::Cfa, -8),
        bp: Value::saved(Base::Cfa, -16),
        sp: Value::At {
            base: Base::Cfa,
            off: 0,
            loads: 0,
        },
        signal: false,
    };

    /// A PLT entry without CFI (`.plt.sec`, `.plt.got`): a jump with nothing pushed.
    pub(crate) const JUST_RETURN: Rule = Rule {
        cfa: Cfa::Reg {
            reg: Reg::Sp,
            off: 8,
            deref: false,
        },
        ra: Value::saved(Base::Cfa, -8),
        bp: Value::Same,
        sp: Value::At {
            base: Base::Cfa,
            off: 0,
            loads: 0,
        },
        signal: false,
    };
}

/// The registers of one frame while unwinding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct State {
    pub(crate) ip: u64,
    pub(crate) sp: u64,
    /// `None` once a frame's CFI said rbp is not recoverable.
    pub(crate) bp: Option<u64>,
}

impl State {
    fn reg(&self, reg: Reg) -> Result<u64, End> {
        match reg {
            Reg::Sp => Ok(self.sp),
            Reg::Bp => self.bp.ok_or(End::BadUnwindInfo),
        }
    }
}

/// `base + off` with wrapping: a hostile offset then points somewhere the stack read
/// refuses, instead of overflowing.
fn offset(base: u64, off: i32) -> u64 {
    base.wrapping_add_signed(i64::from(off))
}

impl Rule {
    /// The caller's registers, or `None` when this is the outermost frame.
    pub(crate) fn apply(&self, st: &State, stack: &StackCopy) -> Result<Option<State>, End> {
        let cfa = match self.cfa {
            Cfa::Reg { reg, off, deref } => {
                let at = offset(st.reg(reg)?, off);
                if deref { stack.read_u64(at)? } else { at }
            }
            Cfa::Plt { threshold } => {
                let pushed = if st.ip & 15 >= u64::from(threshold) {
                    8
                } else {
                    0
                };
                st.sp.wrapping_add(8 + pushed)
            }
        };
        stack.check_cfa(cfa)?;
        if cfa <= st.sp {
            return Err(End::NoProgress);
        }
        let eval = |value: Value, same: Option<u64>| -> Result<Option<u64>, End> {
            match value {
                Value::Undefined => Ok(None),
                Value::Same => Ok(same),
                Value::At { base, off, loads } => {
                    let from = match base {
                        Base::Cfa => cfa,
                        Base::Sp => st.sp,
                        Base::Bp => st.reg(Reg::Bp)?,
                    };
                    let mut v = offset(from, off);
                    for _ in 0..loads {
                        v = stack.read_u64(v)?;
                    }
                    Ok(Some(v))
                }
            }
        };
        let ra = match eval(self.ra, Some(st.ip))? {
            None | Some(0) => return Ok(None),
            Some(ra) => ra,
        };
        let bp = eval(self.bp, st.bp)?;
        let sp = eval(self.sp, Some(st.sp))?.ok_or(End::BadUnwindInfo)?;
        if sp != cfa {
            stack.check_cfa(sp)?;
            if sp <= st.sp {
                return Err(End::NoProgress);
            }
        }
        Ok(Some(State { ip: ra, sp, bp }))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::CopyEnd;

    fn stack(words: &[u64]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn frame_pointer_rule() {
        let bytes = stack(&[0xaa, 0x2000 + 32, 0x4444, 0, 0]);
        let s = StackCopy {
            base: 0x2000,
            bytes: &bytes,
            end: CopyEnd::MappingEnd,
        };
        let st = State {
            ip: 0x1234,
            sp: 0x2000,
            bp: Some(0x2008),
        };
        let next = Rule::FRAME_POINTER.apply(&st, &s).unwrap();
        assert_eq!(
            next,
            Some(State {
                ip: 0x4444,
                sp: 0x2018,
                bp: Some(0x2020)
            })
        );
    }

    #[test]
    fn plt_threshold() {
        let bytes = stack(&[7, 0x5555, 0x6666]);
        let s = StackCopy {
            base: 0x2000,
            bytes: &bytes,
            end: CopyEnd::MappingEnd,
        };
        let rule = Rule {
            cfa: Cfa::Plt { threshold: 11 },
            ..Rule::JUST_RETURN
        };
        let before = State {
            ip: 0x1016,
            sp: 0x2008,
            bp: None,
        };
        assert_eq!(rule.apply(&before, &s).unwrap().map(|s| s.ip), Some(0x5555));
        let after_push = State {
            ip: 0x101b,
            sp: 0x2000,
            bp: None,
        };
        assert_eq!(
            rule.apply(&after_push, &s).unwrap().map(|s| (s.ip, s.sp)),
            Some((0x5555, 0x2010))
        );
    }

    #[test]
    fn cfa_that_does_not_grow_stops() {
        let bytes = stack(&[1, 2, 3]);
        let s = StackCopy {
            base: 0x2000,
            bytes: &bytes,
            end: CopyEnd::Cap,
        };
        let rule = Rule {
            cfa: Cfa::Reg {
                reg: Reg::Sp,
                off: 0,
                deref: false,
            },
            ..Rule::JUST_RETURN
        };
        let st = State {
            ip: 1,
            sp: 0x2008,
            bp: None,
        };
        assert_eq!(rule.apply(&st, &s), Err(End::NoProgress));
        let rule = Rule {
            cfa: Cfa::Reg {
                reg: Reg::Sp,
                off: -8,
                deref: false,
            },
            ..Rule::JUST_RETURN
        };
        assert_eq!(rule.apply(&st, &s), Err(End::NoProgress));
        // rbp unknown after a frame that said so
        assert_eq!(Rule::FRAME_POINTER.apply(&st, &s), Err(End::BadUnwindInfo));
    }
}
