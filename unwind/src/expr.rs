//! Recognises the few DWARF expressions x86_64 code really uses in CFI.
//!
//! A general DWARF stack machine would need every register and arbitrary memory; the
//! expressions compilers and glibc emit for unwinding are a handful of fixed shapes, so
//! they are matched as byte patterns and compiled into the rule's compact form:
//! - `breg7 OFF; deref` (glibc's `__restore_rt`: the CFA is the interrupted rsp, saved
//!   in the `ucontext` on the stack) and `breg6 OFF; deref` (gcc's stack realignment,
//!   DRAP: the CFA was saved below the frame pointer);
//! - `breg{6,7} OFF` alone (a register saved at that address: `__restore_rt`'s rip, rsp
//!   and rbp; DRAP's rbp);
//! - the PLT rule of gcc/binutils: `breg7 8; breg16 0; lit15; and; litN; ge; lit3; shl;
//!   plus`, i.e. CFA = rsp + 8, plus 8 more once the lazy-binding `push` of a 16-byte
//!   PLT entry has run (`(rip & 15) >= N`).

/// A register a CFA is computed from. The recognised expressions start from rsp or rbp
/// only; rbx and r11 come from `DW_CFA_def_cfa` (see [`crate::Regs`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reg {
    Sp,
    Bp,
    Rbx,
    R11,
}

/// A recognised expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Expr {
    /// `reg + off`, read from memory when `deref`.
    Reg { reg: Reg, off: i32, deref: bool },
    /// CFA = rsp + 8 + (8 if (rip & 15) >= threshold).
    Plt { threshold: u8 },
}

const DW_OP_DEREF: u8 = 0x06;
const DW_OP_AND: u8 = 0x1a;
const DW_OP_PLUS: u8 = 0x22;
const DW_OP_SHL: u8 = 0x24;
const DW_OP_GE: u8 = 0x2a;
const DW_OP_LIT0: u8 = 0x30;
const DW_OP_LIT31: u8 = 0x4f;
const DW_OP_BREG6: u8 = 0x76;
const DW_OP_BREG7: u8 = 0x77;
const DW_OP_BREG16: u8 = 0x80;

/// Reads a SLEB128 of at most 10 bytes from the front of `bytes`.
fn sleb128(bytes: &mut &[u8]) -> Option<i64> {
    let mut value: i64 = 0;
    let mut shift = 0u32;
    loop {
        let (&byte, rest) = bytes.split_first()?;
        *bytes = rest;
        if shift == 63 && byte & 0x7e != 0 && byte & 0x7f != 0x7f {
            return None; // does not fit in 64 bits
        }
        value |= i64::from(byte & 0x7f).wrapping_shl(shift);
        shift += 7;
        if byte & 0x80 == 0 {
            if shift < 64 && byte & 0x40 != 0 {
                value |= (-1i64).wrapping_shl(shift);
            }
            return Some(value);
        }
        if shift > 63 {
            return None;
        }
    }
}

/// Matches `bytes` against the recognised forms.
pub(crate) fn recognise(bytes: &[u8]) -> Option<Expr> {
    let mut rest = bytes;
    let (&op, tail) = rest.split_first()?;
    rest = tail;
    let reg = match op {
        DW_OP_BREG6 => Reg::Bp,
        DW_OP_BREG7 => Reg::Sp,
        _ => return None,
    };
    let off = i32::try_from(sleb128(&mut rest)?).ok()?;
    match rest {
        [] => Some(Expr::Reg {
            reg,
            off,
            deref: false,
        }),
        [DW_OP_DEREF] => Some(Expr::Reg {
            reg,
            off,
            deref: true,
        }),
        [
            DW_OP_BREG16,
            0,
            0x3f, // lit15
            DW_OP_AND,
            lit,
            DW_OP_GE,
            0x33, // lit3
            DW_OP_SHL,
            DW_OP_PLUS,
        ] if reg == Reg::Sp && off == 8 && (DW_OP_LIT0..=DW_OP_LIT31).contains(lit) => {
            Some(Expr::Plt {
                threshold: lit - DW_OP_LIT0,
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restore_rt_and_drap_forms() {
        // breg7 160; deref (glibc 2.36's __restore_rt CFA: uc_mcontext.rsp)
        assert_eq!(
            recognise(&[0x77, 0xa0, 0x01, 0x06]),
            Some(Expr::Reg {
                reg: Reg::Sp,
                off: 160,
                deref: true
            })
        );
        // breg6 -8; deref (DRAP)
        assert_eq!(
            recognise(&[0x76, 0x78, 0x06]),
            Some(Expr::Reg {
                reg: Reg::Bp,
                off: -8,
                deref: true
            })
        );
        assert_eq!(
            recognise(&[0x77, 0xa8, 0x01]),
            Some(Expr::Reg {
                reg: Reg::Sp,
                off: 168,
                deref: false
            })
        );
    }

    #[test]
    fn plt_form() {
        let plt = [
            0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22,
        ];
        assert_eq!(recognise(&plt), Some(Expr::Plt { threshold: 11 }));
        let mut plt10 = plt;
        plt10[6] = 0x3a;
        assert_eq!(recognise(&plt10), Some(Expr::Plt { threshold: 10 }));
        let mut other = plt;
        other[1] = 0x10;
        assert_eq!(recognise(&other), None);
    }

    #[test]
    fn everything_else_is_refused() {
        assert_eq!(recognise(&[]), None);
        assert_eq!(recognise(&[0x77]), None); // no offset
        assert_eq!(recognise(&[0x77, 0x80]), None); // unterminated SLEB128
        assert_eq!(recognise(&[0x77, 0x08, 0x06, 0x06]), None); // two derefs
        assert_eq!(recognise(&[0x70, 0x08]), None); // breg0
        assert_eq!(recognise(&[0x77; 64]), None);
        // an offset beyond i32
        assert_eq!(recognise(&[0x77, 0xff, 0xff, 0xff, 0xff, 0x0f]), None);
        // ten bytes of continuation: refused, not overflowing
        assert_eq!(
            recognise(&[
                0x77, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01
            ]),
            None
        );
    }

    #[test]
    fn sleb128_values() {
        for (bytes, want) in [
            (&[0x00][..], 0i64),
            (&[0x7f][..], -1),
            (&[0x80, 0x01][..], 128),
            (&[0x80, 0x7f][..], -128),
            (
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00][..],
                i64::MAX,
            ),
            (
                &[0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f][..],
                i64::MIN,
            ),
        ] {
            let mut b = bytes;
            assert_eq!(sleb128(&mut b), Some(want), "{bytes:x?}");
        }
    }
}
