//! x86-64 instructions of the interpreter's and glibc's own functions, decoded by
//! `iced-x86`: the few questions detection asks of machine code.

use iced_x86::{Decoder, DecoderOptions, Instruction};

/// Decodes `code` (placed at `address`) from its start, in order. Bytes that decode to no
/// instruction come out as `INVALID` instructions and the sweep goes on past them.
pub(crate) fn instructions(code: &[u8], address: u64) -> impl Iterator<Item = Instruction> + '_ {
    let mut decoder = Decoder::with_ip(64, code, address, DecoderOptions::NONE);
    std::iter::from_fn(move || {
        if !decoder.can_decode() {
            return None;
        }
        let mut insn = Instruction::default();
        decoder.decode_out(&mut insn);
        Some(insn)
    })
}

/// Targets of the direct jumps (conditional or not, short or near) in `code`, by a linear
/// sweep. Compilers put no data in `.text` on x86-64, so a sweep from a function's start
/// sees the instructions the function has.
pub(crate) fn jump_targets(code: &[u8], address: u64) -> impl Iterator<Item = u64> + '_ {
    instructions(code, address)
        .filter(|i| i.is_jcc_short_or_near() || i.is_jmp_short_or_near())
        .map(|i| i.near_branch_target())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn finds_short_and_near_jumps() {
        // jne +2 (rel8); jmp rel32 -> 0x1000 + 2 + 5 + 0x10; ret
        let code = [0x75, 0x02, 0xe9, 0x10, 0, 0, 0, 0xc3];
        let targets: Vec<u64> = jump_targets(&code, 0x1000).collect();
        assert_eq!(targets, vec![0x1004, 0x1017]);
    }

    #[test]
    fn garbage_decodes_without_stopping() {
        let code = [0x0f, 0xff, 0xff, 0xff, 0xc3];
        assert!(instructions(&code, 0).count() >= 1);
    }
}
