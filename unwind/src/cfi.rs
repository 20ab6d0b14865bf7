//! One CFI section (`.eh_frame` or `.debug_frame`) and compiling its rule for an address.

use gimli::{
    BaseAddresses, CfaRule, DebugFrame, EhFrame, LittleEndian, RegisterRule, UnwindContext,
    UnwindExpression, UnwindSection, UnwindTableRow, X86_64,
};

use crate::elf::Copied;
use crate::expr::{self, Expr, Reg};
use crate::index::{Index, Slice};
use crate::limits::MAX_ENTRY_BYTES;
use crate::rule::{Base, Cfa, Rule, Value};

/// What looking an address up gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Compiled {
    Rule(Rule),
    /// No FDE covers the address.
    NoFde,
    /// An FDE covers it, but it is malformed or uses what is not supported.
    Bad,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    EhFrame,
    DebugFrame,
}

/// A CFI section's bytes, the addresses its pointers are relative to, and its index.
#[derive(Debug)]
pub(crate) struct Cfi {
    kind: Kind,
    data: Vec<u8>,
    bases: BaseAddresses,
    index: Index,
}

/// The unwind context gimli evaluates CFI in; one per [`crate::Unwinder`], reused.
pub(crate) type Context = UnwindContext<usize>;

impl Cfi {
    /// `.eh_frame`, indexed by `.eh_frame_hdr` when that is usable, else by a scan.
    pub(crate) fn eh_frame(
        eh_frame: Copied,
        hdr: Option<&Copied>,
        text: Option<u64>,
        got: Option<u64>,
    ) -> Cfi {
        let mut bases = BaseAddresses::default().set_eh_frame(eh_frame.svma);
        if let Some(hdr) = hdr {
            bases = bases.set_eh_frame_hdr(hdr.svma);
        }
        if let Some(text) = text {
            bases = bases.set_text(text);
        }
        if let Some(got) = got {
            bases = bases.set_got(got);
        }
        let index = hdr
            .and_then(|h| Index::from_hdr(&h.data, h.svma, eh_frame.svma))
            .unwrap_or_else(|| Index::scan(&eh_frame_section(&eh_frame.data), &bases));
        Cfi {
            kind: Kind::EhFrame,
            data: eh_frame.data,
            bases,
            index,
        }
    }

    /// `.debug_frame` (addresses in it are absolute), indexed by a scan.
    pub(crate) fn debug_frame(debug_frame: Copied) -> Cfi {
        let bases = BaseAddresses::default();
        let index = Index::scan(&debug_frame_section(&debug_frame.data), &bases);
        Cfi {
            kind: Kind::DebugFrame,
            data: debug_frame.data,
            bases,
            index,
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.data.capacity() + self.index.heap_bytes()
    }

    /// Whether any FDE was found at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// The range of the FDE covering `svma`.
    pub(crate) fn fde_range(&self, svma: u64) -> Option<(u64, u64)> {
        let candidate = self.index.lookup(svma)?;
        match self.kind {
            Kind::EhFrame => fde_range(
                &eh_frame_section(&self.data),
                &self.bases,
                candidate.offset,
                svma,
            ),
            Kind::DebugFrame => fde_range(
                &debug_frame_section(&self.data),
                &self.bases,
                candidate.offset,
                svma,
            ),
        }
    }

    /// The rule for `svma`.
    pub(crate) fn compile(&self, svma: u64, ctx: &mut Context) -> Compiled {
        let Some(candidate) = self.index.lookup(svma) else {
            return Compiled::NoFde;
        };
        match self.kind {
            Kind::EhFrame => compile(
                &eh_frame_section(&self.data),
                &self.data,
                &self.bases,
                candidate.offset,
                svma,
                ctx,
            ),
            Kind::DebugFrame => compile(
                &debug_frame_section(&self.data),
                &self.data,
                &self.bases,
                candidate.offset,
                svma,
                ctx,
            ),
        }
    }
}

fn eh_frame_section(data: &[u8]) -> EhFrame<Slice<'_>> {
    let mut s = EhFrame::new(data, LittleEndian);
    s.set_address_size(8);
    s
}

fn debug_frame_section(data: &[u8]) -> DebugFrame<Slice<'_>> {
    let mut s = DebugFrame::new(data, LittleEndian);
    s.set_address_size(8);
    s
}

/// The FDE at `offset` if it covers `svma`; `Err` if it does not parse or it or its CIE
/// is larger than [`MAX_ENTRY_BYTES`] (evaluating it would cost too much).
fn fde_at<'a, S: UnwindSection<Slice<'a>>>(
    section: &S,
    bases: &BaseAddresses,
    offset: usize,
    svma: u64,
) -> Result<Option<gimli::FrameDescriptionEntry<Slice<'a>>>, ()> {
    let partial = section
        .partial_fde_from_offset(bases, S::Offset::from(offset))
        .map_err(drop)?;
    if partial.entry_len() > MAX_ENTRY_BYTES {
        return Err(());
    }
    let fde = partial.parse(S::cie_from_offset).map_err(drop)?;
    if fde.cie().entry_len() > MAX_ENTRY_BYTES {
        return Err(());
    }
    Ok(fde.contains(svma).then_some(fde))
}

fn fde_range<'a, S: UnwindSection<Slice<'a>>>(
    section: &S,
    bases: &BaseAddresses,
    offset: usize,
    svma: u64,
) -> Option<(u64, u64)> {
    let fde = fde_at(section, bases, offset, svma).ok()??;
    Some((fde.initial_address(), fde.end_address()))
}

fn compile<'a, S: UnwindSection<Slice<'a>>>(
    section: &S,
    data: &'a [u8],
    bases: &BaseAddresses,
    offset: usize,
    svma: u64,
    ctx: &mut Context,
) -> Compiled {
    let fde = match fde_at(section, bases, offset, svma) {
        Ok(Some(fde)) => fde,
        Ok(None) => return Compiled::NoFde,
        Err(_) => return Compiled::Bad,
    };
    if fde.cie().return_address_register() != X86_64::RA {
        return Compiled::Bad;
    }
    let Ok(row) = fde.unwind_info_for_address(section, bases, ctx, svma) else {
        return Compiled::Bad;
    };
    match to_rule(row, data, fde.is_signal_trampoline()) {
        Some(rule) => Compiled::Rule(rule),
        None => Compiled::Bad,
    }
}

fn expression(data: &[u8], e: &UnwindExpression<usize>) -> Option<Expr> {
    let bytes = data.get(e.offset..e.offset.checked_add(e.length)?)?;
    expr::recognise(bytes)
}

/// What a recognised expression's register is as a rule's base (`None`: not one).
fn base_of(reg: Reg) -> Option<Base> {
    match reg {
        Reg::Sp => Some(Base::Sp),
        Reg::Bp => Some(Base::Bp),
        Reg::Rbx | Reg::R11 => None,
    }
}

/// A register rule in compact form; `None` when it is not one of the supported forms.
fn value(rule: Option<RegisterRule<usize>>, default: Value, data: &[u8]) -> Option<Value> {
    let Some(rule) = rule else {
        return Some(default);
    };
    let at = |base, off: i64, loads| -> Option<Value> {
        Some(Value::At {
            base,
            off: i32::try_from(off).ok()?,
            loads,
        })
    };
    match rule {
        RegisterRule::Undefined => Some(Value::Undefined),
        RegisterRule::SameValue => Some(Value::Same),
        RegisterRule::Offset(off) => at(Base::Cfa, off, 1),
        RegisterRule::ValOffset(off) => at(Base::Cfa, off, 0),
        RegisterRule::Register(r) if r == X86_64::RSP => at(Base::Sp, 0, 0),
        RegisterRule::Register(r) if r == X86_64::RBP => at(Base::Bp, 0, 0),
        RegisterRule::Expression(e) => match expression(data, &e)? {
            Expr::Reg { reg, off, deref } => at(base_of(reg)?, off.into(), 1 + u8::from(deref)),
            Expr::Plt { .. } => None,
        },
        RegisterRule::ValExpression(e) => match expression(data, &e)? {
            Expr::Reg { reg, off, deref } => at(base_of(reg)?, off.into(), u8::from(deref)),
            Expr::Plt { .. } => None,
        },
        _ => None,
    }
}

/// Compiles a CFI row into a [`Rule`]: `None` when it uses what is not supported.
fn to_rule(row: &UnwindTableRow<usize>, data: &[u8], signal: bool) -> Option<Rule> {
    let cfa = match row.cfa() {
        CfaRule::RegisterAndOffset { register, offset } => {
            let reg = match *register {
                X86_64::RSP => Reg::Sp,
                X86_64::RBP => Reg::Bp,
                X86_64::RBX => Reg::Rbx,
                X86_64::R11 => Reg::R11,
                _ => return None,
            };
            Cfa::Reg {
                reg,
                off: i32::try_from(*offset).ok()?,
                deref: false,
            }
        }
        CfaRule::Expression(e) => Cfa::from(expression(data, e)?),
    };
    Rule::new(
        cfa,
        // No rule for the return address is DWARF's "undefined": the outermost frame.
        value(row.register(X86_64::RA), Value::Undefined, data)?,
        value(row.register(X86_64::RBP), Value::Same, data)?,
        value(
            row.register(X86_64::RSP),
            Value::At {
                base: Base::Cfa,
                off: 0,
                loads: 0,
            },
            data,
        )?,
        // A form that is not supported leaves rbx unknown, not the whole rule: only a
        // caller whose CFA is computed from rbx needs it. r11's rules are not read: it is
        // unknown in every caller (see `State::r11`).
        value(row.register(X86_64::RBX), Value::Same, data).unwrap_or(Value::Undefined),
        signal,
    )
}
