//! What the `unwind` fuzz target checks (`fuzz/fuzz_targets/unwind.rs`), shared with the
//! regression test `unwind/tests/fuzz_inputs.rs`.
//!
//! An input is a 32-byte header, then the bytes of an ELF file, of a debug file and of a
//! stack copy:
//!
//! | bytes  | field                                                        |
//! |--------|--------------------------------------------------------------|
//! | 0..4   | length of the ELF file (u32 LE, cut to what follows)         |
//! | 4..8   | length of the debug file (u32 LE, cut likewise; 0: none)     |
//! | 8..16  | ip (u64 LE)                                                  |
//! | 16..24 | bp (u64 LE)                                                  |
//! | 24     | how the copy ends: 0 mapping end, 1 cap, 2 fault, 3 unknown  |
//! | 25..32 | unused                                                       |
//!
//! The module is mapped at its own addresses (avma = svma below 2^40), anonymous
//! executable memory lies at [`ANON`] and its code bytes are the debug file's bytes
//! (repeated), the stack copy starts at [`STACK`] (= sp).

use hotspot_unwind::{
    AddressSpace, CodeAt, CopyEnd, MAX_FRAMES, ModuleUnwind, Regs, StackCopy, Unwinder,
    splice_frame_pointers,
};

pub const HEADER: usize = 32;
pub const STACK: u64 = 0x7ffe_0000_0000;
pub const ANON: u64 = 0x7f00_0000_0000;

struct Space<'m>(&'m ModuleUnwind, &'m [u8]);

impl AddressSpace for Space<'_> {
    fn read_code(&mut self, avma: u64, buf: &mut [u8]) -> usize {
        let code = self.1;
        if code.is_empty() || !(ANON..ANON + (1 << 20)).contains(&avma) {
            return 0;
        }
        let at = ((avma - ANON) as usize) % code.len();
        let n = buf.len().min(code.len() - at);
        buf[..n].copy_from_slice(&code[at..at + n]);
        n
    }

    fn code_at(&mut self, avma: u64) -> CodeAt<'_> {
        if avma < 1 << 40 {
            CodeAt::Module {
                module: self.0,
                svma: avma,
            }
        } else if (ANON..ANON + (1 << 20)).contains(&avma) {
            CodeAt::Anonymous
        } else {
            CodeAt::Unmapped
        }
    }
}

/// An input in the layout above.
pub fn encode(elf: &[u8], debug: &[u8], ip: u64, bp: u64, end: u8, stack: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&(elf.len() as u32).to_le_bytes());
    b.extend_from_slice(&(debug.len() as u32).to_le_bytes());
    b.extend_from_slice(&ip.to_le_bytes());
    b.extend_from_slice(&bp.to_le_bytes());
    b.push(end);
    b.extend_from_slice(&[0; 7]);
    b.extend_from_slice(elf);
    b.extend_from_slice(debug);
    b.extend_from_slice(stack);
    b
}

fn u32_at(b: &[u8], at: usize) -> usize {
    b.get(at..at + 4)
        .and_then(|w| w.try_into().ok())
        .map_or(0, |w| u32::from_le_bytes(w) as usize)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|w| w.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// The frames and the end an input unwinds to (for the seeds' own test), if its module
/// builds.
pub fn outcome(input: &[u8]) -> Option<(usize, hotspot_unwind::End)> {
    let rest = input.get(HEADER..)?;
    let elf_len = u32_at(input, 0).min(rest.len());
    let (elf, rest) = rest.split_at(elf_len);
    let debug_len = u32_at(input, 4).min(rest.len());
    let (debug, stack) = rest.split_at(debug_len);
    let mut module = ModuleUnwind::from_elf(elf).ok()?;
    if !debug.is_empty() {
        let _ = module.add_debug_frame(debug);
    }
    let copy = StackCopy {
        base: STACK,
        bytes: stack,
        end: CopyEnd::Cap,
    };
    let regs = Regs {
        ip: u64_at(input, 8),
        sp: STACK,
        bp: u64_at(input, 16),
        rbx: STACK,
        r11: STACK,
    };
    let mut out = Vec::new();
    let end = Unwinder::new().unwind(regs, &copy, &mut Space(&module, debug), &mut out);
    Some((out.len(), end))
}

/// Builds the module, unwinds, checks: no panic (the fuzzer's own check), at most
/// MAX_FRAMES frames, the sampled PC first and exact, a warm unwind equal to the cold one,
/// a splice that only appends.
pub fn check(input: &[u8]) {
    let Some(rest) = input.get(HEADER..) else {
        return;
    };
    let elf_len = u32_at(input, 0).min(rest.len());
    let (elf, rest) = rest.split_at(elf_len);
    let debug_len = u32_at(input, 4).min(rest.len());
    let (debug, stack) = rest.split_at(debug_len);
    let ip = u64_at(input, 8);
    let bp = u64_at(input, 16);
    let end = [
        CopyEnd::MappingEnd,
        CopyEnd::Cap,
        CopyEnd::Fault,
        CopyEnd::Unknown,
    ][usize::from(input[24] % 4)];

    let Ok(mut module) = ModuleUnwind::from_elf(elf) else {
        return;
    };
    if !debug.is_empty() {
        let _ = module.add_debug_frame(debug);
    }
    if let Some(start) = module.function_start(ip) {
        assert!(start <= ip);
    }
    let _ = module.heap_bytes();

    let copy = StackCopy {
        base: STACK,
        bytes: stack,
        end,
    };
    // rbx and r11 in the copy: CFAs computed from them lead somewhere to explore
    let regs = Regs {
        ip,
        sp: STACK,
        bp,
        rbx: STACK,
        r11: STACK,
    };
    let mut unwinder = Unwinder::new();
    let mut cold = Vec::new();
    let first = unwinder.unwind(regs, &copy, &mut Space(&module, debug), &mut cold);
    assert!(!cold.is_empty() && cold.len() <= MAX_FRAMES);
    assert_eq!((cold[0].addr, cold[0].exact), (ip, true));
    let mut warm = Vec::new();
    let second = unwinder.unwind(regs, &copy, &mut Space(&module, debug), &mut warm);
    assert_eq!(first, second);
    assert_eq!(cold, warm);

    let chain: Vec<u64> = stack
        .chunks_exact(8)
        .take(MAX_FRAMES + 8)
        .map(|w| u64_at(w, 0))
        .collect();
    let mut spliced = cold.clone();
    splice_frame_pointers(
        &mut spliced,
        &chain,
        &copy,
        regs.bp,
        &mut Space(&module, debug),
    );
    assert!(spliced.len() <= MAX_FRAMES);
    assert_eq!(spliced[..cold.len()], cold[..]);
}
