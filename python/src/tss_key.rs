//! Where the interpreter's own code finds its pthread key: the offset of `autoTSSkey` in
//! `_PyRuntime` as `PyGILState_GetThisThreadState` reads it, the check that the per-version
//! table is right for this very binary (stripped ones included).
//!
//! Every build seen passes `&_PyRuntime + T` (the `Py_tss_t`) to `PyThread_tss_get` or
//! loads the key itself from `_PyRuntime + T + 4`, reaching `_PyRuntime` through a
//! GOT slot (pyenv's shared builds: `mov rax, [rip+got]; lea rdi, [rax+T]`) or directly
//! (Debian's static build: `mov edi, [rip+_PyRuntime+T+4]`).

use std::collections::HashMap;

use iced_x86::{Mnemonic, OpKind, Register};

use crate::disasm::instructions;
use crate::elf::{ElfImage, Sym};
use crate::limits::MAX_PROLOGUE_INSNS;

/// The key's offset inside `Py_tss_t` (after `int _is_initialized`).
pub const KEY_IN_TSS: u32 = 4;

/// What a register holds, as far as the tracking goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Value {
    /// `_PyRuntime` plus an offset.
    Runtime(i64),
}

/// The offset of the `Py_tss_t` in `_PyRuntime` that `func` (the bytes of
/// `PyGILState_GetThisThreadState`) uses, or `None` when its code has no shape seen before.
pub(crate) fn tss_offset_in_code(elf: &ElfImage<'_>, func: Sym, runtime: Sym) -> Option<u32> {
    let len = func.size.clamp(1, 256);
    let code = elf.bytes_at(func.address, len)?;
    let in_runtime = |a: u64| runtime.range().contains(&a);
    let rel = |a: u64| i64::try_from(a - runtime.address).ok();
    let mut regs: HashMap<Register, Value> = HashMap::new();
    let to_offset = |v: i64| u32::try_from(v).ok();

    for insn in instructions(code, func.address).take(MAX_PROLOGUE_INSNS) {
        let m = insn.mnemonic();
        if matches!(m, Mnemonic::Ret | Mnemonic::Call) || insn.is_jmp_short_or_near() {
            return None;
        }
        if insn.op_count() < 2 || insn.op0_kind() != OpKind::Register {
            continue;
        }
        let dst = insn.op0_register();
        let full = dst.full_register();
        let src_mem = insn.op1_kind() == OpKind::Memory;
        // What the source operand is, as an address or a tracked value.
        let mem_value = || -> Option<i64> {
            if insn.is_ip_rel_memory_operand() {
                let a = insn.ip_rel_memory_address();
                return in_runtime(a).then(|| rel(a)).flatten();
            }
            if insn.memory_index() != Register::None {
                return None;
            }
            let Value::Runtime(base) = *regs.get(&insn.memory_base().full_register())?;
            Some(base + insn.memory_displacement64() as i64)
        };
        let value = match m {
            // `lea r, [rip+_PyRuntime+k]` or `lea r, [tracked+k]`: an address in _PyRuntime.
            Mnemonic::Lea if dst.size() == 8 => mem_value().map(Value::Runtime),
            Mnemonic::Mov if src_mem && dst.size() == 8 => {
                // `mov r, [rip+slot]`, a GOT slot bound to _PyRuntime.
                if insn.is_ip_rel_memory_operand() {
                    elf.slot_symbol(insn.ip_rel_memory_address())
                        .filter(|(name, _)| name == "_PyRuntime")
                        .map(|(_, addend)| Value::Runtime(addend))
                } else {
                    None
                }
            }
            // `mov edi, [_PyRuntime+k]`: the key itself, passed on to pthread_getspecific.
            Mnemonic::Mov if src_mem && dst == Register::EDI => {
                let key = mem_value()?;
                return to_offset(key - i64::from(KEY_IN_TSS));
            }
            Mnemonic::Mov if insn.op1_kind() == OpKind::Register && dst.size() == 8 => {
                regs.get(&insn.op1_register().full_register()).copied()
            }
            // Compares write no register.
            Mnemonic::Cmp | Mnemonic::Test => continue,
            _ => None,
        };
        match value {
            Some(Value::Runtime(k)) if full == Register::RDI => return to_offset(k),
            Some(v) => {
                regs.insert(full, v);
            }
            None => {
                regs.remove(&full);
            }
        }
    }
    None
}

/// Whether `PyThread_tss_get` reads the key at [`KEY_IN_TSS`] of the `Py_tss_t` it is
/// given (`mov edi, [rdi+4]`); `None` when its code has no shape seen before.
pub(crate) fn key_in_tss_matches(elf: &ElfImage<'_>, func: Sym) -> Option<bool> {
    let code = elf.bytes_at(func.address, func.size.clamp(1, 64))?;
    for insn in instructions(code, func.address).take(4) {
        if insn.mnemonic() == Mnemonic::Mov
            && insn.op0_kind() == OpKind::Register
            && insn.op0_register() == Register::EDI
            && insn.op1_kind() == OpKind::Memory
            && insn.memory_base() == Register::RDI
            && insn.memory_index() == Register::None
        {
            return Some(insn.memory_displacement64() == u64::from(KEY_IN_TSS));
        }
    }
    None
}
