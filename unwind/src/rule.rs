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
    #[cfg(test)]
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

/// How a [`Value`] is packed: its tag, base and loads in one byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum ValueKind {
    Undefined,
    Same,
    Cfa0,
    Cfa1,
    Cfa2,
    Sp0,
    Sp1,
    Sp2,
    Bp0,
    Bp1,
    Bp2,
}

const KINDS: [ValueKind; 9] = [
    ValueKind::Cfa0,
    ValueKind::Cfa1,
    ValueKind::Cfa2,
    ValueKind::Sp0,
    ValueKind::Sp1,
    ValueKind::Sp2,
    ValueKind::Bp0,
    ValueKind::Bp1,
    ValueKind::Bp2,
];

/// How the CFA is packed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum CfaKind {
    Sp,
    Bp,
    DerefSp,
    DerefBp,
    /// The offset is the PLT threshold.
    Plt,
}

/// One address's unwind rule, packed into 16 bytes so that a cache slot (with its key)
/// is half a cache line: the cache is then 256 KiB and a lookup touches one line. The
/// CFA offset keeps 32 bits (large frames); the register offsets, 16 (saved registers
/// sit near the CFA, and `__restore_rt`'s ucontext offsets are below 256).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rule {
    cfa_off: i32,
    /// ra, bp, sp
    offs: [i16; 3],
    cfa: CfaKind,
    kinds: [ValueKind; 3],
    /// The frame is a signal trampoline (CIE augmentation `S`): its caller's PC was
    /// interrupted, not a return address.
    pub(crate) signal: bool,
}

const _: () = assert!(std::mem::size_of::<Rule>() == 16);

fn pack(value: Value) -> Option<(ValueKind, i16)> {
    match value {
        Value::Undefined => Some((ValueKind::Undefined, 0)),
        Value::Same => Some((ValueKind::Same, 0)),
        Value::At { base, off, loads } => {
            let base = match base {
                Base::Cfa => 0,
                Base::Sp => 3,
                Base::Bp => 6,
            };
            if loads > 2 {
                return None;
            }
            let kind = *KINDS.get(base + usize::from(loads))?;
            Some((kind, i16::try_from(off).ok()?))
        }
    }
}

#[inline]
fn unpack(kind: ValueKind, off: i16) -> Value {
    let at = |base, loads| Value::At {
        base,
        off: i32::from(off),
        loads,
    };
    match kind {
        ValueKind::Undefined => Value::Undefined,
        ValueKind::Same => Value::Same,
        ValueKind::Cfa0 => at(Base::Cfa, 0),
        ValueKind::Cfa1 => at(Base::Cfa, 1),
        ValueKind::Cfa2 => at(Base::Cfa, 2),
        ValueKind::Sp0 => at(Base::Sp, 0),
        ValueKind::Sp1 => at(Base::Sp, 1),
        ValueKind::Sp2 => at(Base::Sp, 2),
        ValueKind::Bp0 => at(Base::Bp, 0),
        ValueKind::Bp1 => at(Base::Bp, 1),
        ValueKind::Bp2 => at(Base::Bp, 2),
    }
}

impl Rule {
    /// Packs a rule; `None` when an offset does not fit (the caller reports the CFI as
    /// unsupported).
    pub(crate) fn new(cfa: Cfa, ra: Value, bp: Value, sp: Value, signal: bool) -> Option<Rule> {
        let (cfa, cfa_off) = match cfa {
            Cfa::Reg { reg, off, deref } => (
                match (reg, deref) {
                    (Reg::Sp, false) => CfaKind::Sp,
                    (Reg::Bp, false) => CfaKind::Bp,
                    (Reg::Sp, true) => CfaKind::DerefSp,
                    (Reg::Bp, true) => CfaKind::DerefBp,
                },
                off,
            ),
            Cfa::Plt { threshold } => (CfaKind::Plt, i32::from(threshold)),
        };
        let (ra_kind, ra_off) = pack(ra)?;
        let (bp_kind, bp_off) = pack(bp)?;
        let (sp_kind, sp_off) = pack(sp)?;
        Some(Rule {
            cfa_off,
            offs: [ra_off, bp_off, sp_off],
            cfa,
            kinds: [ra_kind, bp_kind, sp_kind],
            signal,
        })
    }

    #[inline]
    pub(crate) fn cfa(&self) -> Cfa {
        let reg = |reg, deref| Cfa::Reg {
            reg,
            off: self.cfa_off,
            deref,
        };
        match self.cfa {
            CfaKind::Sp => reg(Reg::Sp, false),
            CfaKind::Bp => reg(Reg::Bp, false),
            CfaKind::DerefSp => reg(Reg::Sp, true),
            CfaKind::DerefBp => reg(Reg::Bp, true),
            CfaKind::Plt => Cfa::Plt {
                threshold: u8::try_from(self.cfa_off).unwrap_or(u8::MAX),
            },
        }
    }

    #[inline]
    pub(crate) fn ra(&self) -> Value {
        unpack(self.kinds[0], self.offs[0])
    }

    #[inline]
    pub(crate) fn bp(&self) -> Value {
        unpack(self.kinds[1], self.offs[1])
    }

    #[inline]
    pub(crate) fn sp(&self) -> Value {
        unpack(self.kinds[2], self.offs[2])
    }

    /// The same rule with another CFA (tests and the PLT rule).
    #[cfg(test)]
    pub(crate) fn with_cfa(&self, cfa: Cfa) -> Rule {
        Rule::new(cfa, self.ra(), self.bp(), self.sp(), self.signal).unwrap_or(*self)
    }

    /// The same rule with another rbp rule (tests).
    #[cfg(test)]
    pub(crate) fn with_bp(&self, bp: Value) -> Rule {
        Rule::new(self.cfa(), self.ra(), bp, self.sp(), self.signal).unwrap_or(*self)
    }
}

/// The caller's rsp is the CFA: the usual case.
const SP_IS_CFA: Value = Value::At {
    base: Base::Cfa,
    off: 0,
    loads: 0,
};

impl Rule {
    /// The frame-pointer rule: CFA = rbp + 16, return address at CFA - 8, rbp at CFA - 16.
    pub(crate) const FRAME_POINTER: Rule = Rule {
        cfa_off: 16,
        offs: [-8, -16, 0],
        cfa: CfaKind::Bp,
        kinds: [ValueKind::Cfa1, ValueKind::Cfa1, ValueKind::Cfa0],
        signal: false,
    };

    /// A PLT entry without CFI (`.plt.sec`, `.plt.got`): a jump with nothing pushed.
    pub(crate) const JUST_RETURN: Rule = Rule {
        cfa_off: 8,
        offs: [-8, 0, 0],
        cfa: CfaKind::Sp,
        kinds: [ValueKind::Cfa1, ValueKind::Same, ValueKind::Cfa0],
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
    /// Unwinds `st` to the caller's registers; `false` when this is the outermost frame
    /// (`st` is then unchanged). Updates in place: the state stays in registers.
    #[inline]
    pub(crate) fn apply(&self, st: &mut State, stack: &StackCopy) -> Result<bool, End> {
        let cfa = match self.cfa() {
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
        let ra = match eval(self.ra(), cfa, st, Some(st.ip), stack)? {
            None | Some(0) => return Ok(false),
            Some(ra) => ra,
        };
        let bp = saved_bp(self.bp(), cfa, st, stack)?;
        let sp = match self.sp() {
            SP_IS_CFA => cfa,
            other => {
                let sp = eval(other, cfa, st, Some(st.sp), stack)?.ok_or(End::BadUnwindInfo)?;
                stack.check_cfa(sp)?;
                if sp <= st.sp {
                    return Err(End::NoProgress);
                }
                sp
            }
        };
        *st = State { ip: ra, sp, bp };
        Ok(true)
    }
}

/// The caller's rbp. In an epilogue, gcc's CFI still says rbp is saved at its slot after
/// the `pop` that restored it; the slot is then below sp (not in the copy, and free to be
/// overwritten), and the register already holds the caller's value: keep it.
#[inline]
fn saved_bp(value: Value, cfa: u64, st: &State, stack: &StackCopy) -> Result<Option<u64>, End> {
    if let Value::At {
        base: Base::Cfa,
        off,
        loads: 1..,
    } = value
        && offset(cfa, off) < st.sp
    {
        return Ok(st.bp);
    }
    eval(value, cfa, st, st.bp, stack)
}

/// A register's value in the caller (`same`: its value in this frame).
#[inline]
fn eval(
    value: Value,
    cfa: u64,
    st: &State,
    same: Option<u64>,
    stack: &StackCopy,
) -> Result<Option<u64>, End> {
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
    fn packing_round_trips() {
        let values = [
            Value::Undefined,
            Value::Same,
            Value::saved(Base::Cfa, -8),
            Value::At {
                base: Base::Sp,
                off: 168,
                loads: 1,
            },
            Value::At {
                base: Base::Bp,
                off: -32768,
                loads: 2,
            },
            Value::At {
                base: Base::Cfa,
                off: 0,
                loads: 0,
            },
        ];
        for v in values {
            let cfa = Cfa::Reg {
                reg: Reg::Bp,
                off: -100_000,
                deref: true,
            };
            let r = Rule::new(cfa, v, v, v, true).unwrap();
            assert_eq!(
                (r.cfa(), r.ra(), r.bp(), r.sp(), r.signal),
                (cfa, v, v, v, true)
            );
        }
        let plt = Rule::new(
            Cfa::Plt { threshold: 11 },
            Value::Same,
            Value::Same,
            SP_IS_CFA,
            false,
        );
        assert_eq!(plt.unwrap().cfa(), Cfa::Plt { threshold: 11 });
        // offsets beyond 16 bits and loads beyond 2 do not pack
        let far = Value::saved(Base::Cfa, 40_000);
        assert!(
            Rule::new(
                Cfa::Plt { threshold: 0 },
                far,
                Value::Same,
                SP_IS_CFA,
                false
            )
            .is_none()
        );
        let deep = Value::At {
            base: Base::Sp,
            off: 0,
            loads: 3,
        };
        assert!(
            Rule::new(
                Cfa::Plt { threshold: 0 },
                deep,
                Value::Same,
                SP_IS_CFA,
                false
            )
            .is_none()
        );
        assert_eq!(Rule::FRAME_POINTER.bp(), Value::saved(Base::Cfa, -16));
        assert_eq!(
            Rule::JUST_RETURN.cfa(),
            Cfa::Reg {
                reg: Reg::Sp,
                off: 8,
                deref: false
            }
        );
    }

    #[test]
    fn frame_pointer_rule() {
        let bytes = stack(&[0xaa, 0x2000 + 32, 0x4444, 0, 0]);
        let s = StackCopy {
            base: 0x2000,
            bytes: &bytes,
            end: CopyEnd::MappingEnd,
        };
        let mut st = State {
            ip: 0x1234,
            sp: 0x2000,
            bp: Some(0x2008),
        };
        assert_eq!(Rule::FRAME_POINTER.apply(&mut st, &s), Ok(true));
        assert_eq!(
            st,
            State {
                ip: 0x4444,
                sp: 0x2018,
                bp: Some(0x2020)
            }
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
        let rule = Rule::JUST_RETURN.with_cfa(Cfa::Plt { threshold: 11 });
        // in a PLT entry, before its push: CFA = rsp + 8
        let mut before = State {
            ip: 0x1016,
            sp: 0x2008,
            bp: None,
        };
        assert_eq!(rule.apply(&mut before, &s), Ok(true));
        assert_eq!((before.ip, before.sp), (0x5555, 0x2010));
        // after it: CFA = rsp + 16
        let mut after_push = State {
            ip: 0x101b,
            sp: 0x2000,
            bp: None,
        };
        assert_eq!(rule.apply(&mut after_push, &s), Ok(true));
        assert_eq!((after_push.ip, after_push.sp), (0x5555, 0x2010));
    }

    #[test]
    fn rbp_already_popped_in_an_epilogue() {
        // after `pop rbp; pop r12`: CFA = rsp + 24, and the CFI's rbp slot (CFA - 40) is
        // below sp
        let bytes = stack(&[0x1111, 0x2222, 0x7777]);
        let s = StackCopy {
            base: 0x2000,
            bytes: &bytes,
            end: CopyEnd::MappingEnd,
        };
        let rule = Rule::JUST_RETURN
            .with_cfa(Cfa::Reg {
                reg: Reg::Sp,
                off: 24,
                deref: false,
            })
            .with_bp(Value::saved(Base::Cfa, -40));
        let mut st = State {
            ip: 1,
            sp: 0x2000,
            bp: Some(0xbbbb),
        };
        assert_eq!(rule.apply(&mut st, &s), Ok(true));
        assert_eq!(
            st,
            State {
                ip: 0x7777,
                sp: 0x2018,
                bp: Some(0xbbbb)
            }
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
        let rule = Rule::JUST_RETURN.with_cfa(Cfa::Reg {
            reg: Reg::Sp,
            off: 0,
            deref: false,
        });
        let mut st = State {
            ip: 1,
            sp: 0x2008,
            bp: None,
        };
        assert_eq!(rule.apply(&mut st, &s), Err(End::NoProgress));
        let rule = Rule::JUST_RETURN.with_cfa(Cfa::Reg {
            reg: Reg::Sp,
            off: -8,
            deref: false,
        });
        assert_eq!(rule.apply(&mut st, &s), Err(End::NoProgress));
        // rbp unknown after a frame that said so
        assert_eq!(
            Rule::FRAME_POINTER.apply(&mut st, &s),
            Err(End::BadUnwindInfo)
        );
    }
}
