//! The compact form a frame's CFI row is compiled into, and applying it to a frame.
//!
//! Recovered are rip, rsp and rbp, which find return addresses on x86_64, and rbx, which
//! some CFI computes a caller's CFA from (ld.so's `_dl_runtime_resolve`: CFA = rbx + 56,
//! reached through `_dl_fixup`, which saves rbx). r11, the other CFA register real CFI
//! uses (LLVM's inline stack probe), is known in the sampled frame only: it is
//! caller-saved, so no caller's value survives a call. A rule of 16 bytes keeps the cache
//! small and its lookups cheap.

use crate::expr::{Expr, Reg};
use crate::stack::StackCopy;
use crate::{End, Regs};

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
    Rbx,
    R11,
}

/// rbx's rule in one byte, the one a [`Rule`] has left: unchanged, unknown, or saved at
/// `base + 8 * words` (base the CFA, rsp or rbp; words -32..=31). Saved registers are
/// 8-byte slots near their base: gcc and LLVM push rbx within 56 bytes of the CFA, gcc's
/// DRAP frames save it just below rbp, `__restore_rt`'s ucontext holds it at rsp + 128.
/// Any other rule is packed as unknown: that only stops a caller whose CFA is computed
/// from rbx (rbx is never needed for a return address).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SavedRbx(u8);

impl SavedRbx {
    // The low two bits are the base (0 the CFA, 1 rsp, 2 rbp, 3 none), the six above the
    // words, signed.
    const SAME: SavedRbx = SavedRbx(0b11);
    const UNKNOWN: SavedRbx = SavedRbx(0b111);

    fn pack(value: Value) -> SavedRbx {
        let Value::At {
            base,
            off,
            loads: 1,
        } = value
        else {
            return if value == Value::Same {
                SavedRbx::SAME
            } else {
                SavedRbx::UNKNOWN
            };
        };
        let words = match i8::try_from(off / 8) {
            Ok(w) if off % 8 == 0 && (-32..=31).contains(&w) => w,
            _ => return SavedRbx::UNKNOWN,
        };
        let base = match base {
            Base::Cfa => 0,
            Base::Sp => 1,
            Base::Bp => 2,
        };
        SavedRbx((words << 2).cast_unsigned() | base)
    }

    /// The rule as a [`Value`] (tests; `Rule::saved_rbx` decodes the byte itself).
    #[cfg(test)]
    fn unpack(self) -> Value {
        let base = match self.0 & 3 {
            0 => Base::Cfa,
            1 => Base::Sp,
            2 => Base::Bp,
            _ if self == SavedRbx::SAME => return Value::Same,
            _ => return Value::Undefined,
        };
        Value::At {
            base,
            // an arithmetic shift: the sign stays
            off: i32::from(self.0.cast_signed() >> 2) * 8,
            loads: 1,
        }
    }
}

/// One address's unwind rule, packed into 16 bytes so that a cache slot (with its key)
/// is half a cache line: the cache is then 256 KiB and a lookup touches one line. The
/// CFA offset keeps 32 bits (large frames); the register offsets, 16 (saved registers
/// sit near the CFA, and `__restore_rt`'s ucontext offsets are below 256); rbx's rule,
/// one byte (see [`SavedRbx`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rule {
    cfa_off: i32,
    /// ra, bp, sp
    offs: [i16; 3],
    cfa: CfaKind,
    kinds: [ValueKind; 3],
    rbx: SavedRbx,
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
    /// Packs a rule; `None` when an offset does not fit or the CFA is read through rbx or
    /// r11 (the caller reports the CFI as unsupported). rbx's rule never makes it `None`:
    /// one that does not fit is packed as unknown (see [`SavedRbx`]).
    pub(crate) fn new(
        cfa: Cfa,
        ra: Value,
        bp: Value,
        sp: Value,
        rbx: Value,
        signal: bool,
    ) -> Option<Rule> {
        let (cfa, cfa_off) = match cfa {
            Cfa::Reg { reg, off, deref } => (
                match (reg, deref) {
                    (Reg::Sp, false) => CfaKind::Sp,
                    (Reg::Bp, false) => CfaKind::Bp,
                    (Reg::Sp, true) => CfaKind::DerefSp,
                    (Reg::Bp, true) => CfaKind::DerefBp,
                    (Reg::Rbx, false) => CfaKind::Rbx,
                    (Reg::R11, false) => CfaKind::R11,
                    (Reg::Rbx | Reg::R11, true) => return None,
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
            rbx: SavedRbx::pack(rbx),
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
            CfaKind::Rbx => reg(Reg::Rbx, false),
            CfaKind::R11 => reg(Reg::R11, false),
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

    #[cfg(test)]
    pub(crate) fn rbx(&self) -> Value {
        self.rbx.unpack()
    }

    /// The same rule with another CFA (tests and the PLT rule).
    #[cfg(test)]
    pub(crate) fn with_cfa(&self, cfa: Cfa) -> Rule {
        Rule::new(
            cfa,
            self.ra(),
            self.bp(),
            self.sp(),
            self.rbx(),
            self.signal,
        )
        .unwrap_or(*self)
    }

    /// The same rule with another rbp rule (tests).
    #[cfg(test)]
    pub(crate) fn with_bp(&self, bp: Value) -> Rule {
        Rule::new(
            self.cfa(),
            self.ra(),
            bp,
            self.sp(),
            self.rbx(),
            self.signal,
        )
        .unwrap_or(*self)
    }

    /// The same rule with another rbx rule (tests).
    #[cfg(test)]
    pub(crate) fn with_rbx(&self, rbx: Value) -> Rule {
        Rule::new(
            self.cfa(),
            self.ra(),
            self.bp(),
            self.sp(),
            rbx,
            self.signal,
        )
        .unwrap_or(*self)
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
    /// rbx is unknown: code without CFI may have saved it anywhere and used it.
    pub(crate) const FRAME_POINTER: Rule = Rule {
        cfa_off: 16,
        offs: [-8, -16, 0],
        cfa: CfaKind::Bp,
        kinds: [ValueKind::Cfa1, ValueKind::Cfa1, ValueKind::Cfa0],
        rbx: SavedRbx::UNKNOWN,
        signal: false,
    };

    /// A PLT entry without CFI (`.plt.sec`, `.plt.got`): a jump with nothing pushed.
    pub(crate) const JUST_RETURN: Rule = Rule {
        cfa_off: 8,
        offs: [-8, 0, 0],
        cfa: CfaKind::Sp,
        kinds: [ValueKind::Cfa1, ValueKind::Same, ValueKind::Cfa0],
        rbx: SavedRbx::SAME,
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
    /// Where rbx is (see [`Rbx`]).
    pub(crate) rbx: Rbx,
    /// Known in the sampled frame only: r11 is caller-saved (and `syscall` clobbers it),
    /// so no caller's value is left.
    pub(crate) r11: Option<u64>,
}

/// Where a frame's rbx is. A saved rbx is kept as its slot, read only if a CFA is computed
/// from it: reading every frame's slot made warm unwinds 50-60% slower (python3 239 ->
/// 356 ns, rustc 467 -> 749 ns a sample in the unwind bench), for a value almost never
/// needed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rbx {
    /// In the register: the sampled value.
    Value(u64),
    /// In the stack slot at this address.
    Saved(u64),
    /// A frame's CFI said so (or its rule did not fit), or code without CFI was crossed
    /// by the frame-pointer rule.
    Unknown,
}

impl State {
    /// The sampled frame's registers.
    pub(crate) fn sampled(regs: Regs) -> State {
        State {
            ip: regs.ip,
            sp: regs.sp,
            bp: Some(regs.bp),
            rbx: Rbx::Value(regs.rbx),
            r11: Some(regs.r11),
        }
    }

    fn reg(&self, reg: Reg, stack: &StackCopy) -> Result<u64, End> {
        match reg {
            Reg::Sp => Ok(self.sp),
            Reg::Bp => self.bp.ok_or(End::BadUnwindInfo),
            Reg::Rbx => match self.rbx {
                Rbx::Value(v) => Ok(v),
                Rbx::Saved(slot) => stack.read_u64(slot),
                Rbx::Unknown => Err(End::BadUnwindInfo),
            },
            Reg::R11 => self.r11.ok_or(End::BadUnwindInfo),
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
    #[inline(always)]
    pub(crate) fn apply(&self, st: &mut State, stack: &StackCopy) -> Result<bool, End> {
        let cfa = match self.cfa() {
            Cfa::Reg { reg, off, deref } => {
                let at = offset(st.reg(reg, stack)?, off);
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
        let bp = saved(self.bp(), cfa, st, st.bp, stack)?;
        let rbx = self.saved_rbx(cfa, st);
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
        *st = State {
            ip: ra,
            sp,
            bp,
            rbx,
            r11: None,
        };
        Ok(true)
    }
}

impl Rule {
    /// Where the caller's rbx is, found without reading the stack (see [`Rbx`] and, for a
    /// slot below sp, [`saved`]).
    #[inline]
    fn saved_rbx(&self, cfa: u64, st: &State) -> Rbx {
        // decoded from the byte directly (see SavedRbx): this runs for every frame
        let byte = self.rbx.0;
        let from = match byte & 3 {
            0 => cfa,
            1 => st.sp,
            2 => match st.bp {
                Some(bp) => bp,
                None => return Rbx::Unknown,
            },
            _ if self.rbx == SavedRbx::SAME => return st.rbx,
            _ => return Rbx::Unknown,
        };
        let slot = from.wrapping_add_signed(i64::from(byte.cast_signed() >> 2) * 8);
        if byte & 3 == 0 && slot < st.sp {
            st.rbx
        } else {
            Rbx::Saved(slot)
        }
    }
}

/// The caller's value of a callee-saved register that holds `now` in this frame. In an
/// epilogue, gcc's CFI still says the register is saved at its slot after the `pop` that
/// restored it; the slot is then below sp (not in the copy, and free to be overwritten),
/// and the register already holds the caller's value: keep it.
#[inline]
fn saved(
    value: Value,
    cfa: u64,
    st: &State,
    now: Option<u64>,
    stack: &StackCopy,
) -> Result<Option<u64>, End> {
    if let Value::At {
        base: Base::Cfa,
        off,
        loads: 1..,
    } = value
        && offset(cfa, off) < st.sp
    {
        return Ok(now);
    }
    eval(value, cfa, st, now, stack)
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
                Base::Bp => st.bp.ok_or(End::BadUnwindInfo)?,
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
mod tests;
