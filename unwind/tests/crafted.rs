//! Hostile ELF files, CFI and stacks, crafted byte by byte (`tests/common/craft.rs`):
//! every one must give an error or a stop with a reason, never a panic, a hang or an
//! allocation beyond the caps of `hotspot_unwind::limits`.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use common::craft::{
    DebugFrame, EhFrame, NOBITS, Section, elf, hdr_table, module, op, strip_section_headers,
};
use hotspot_unwind::limits::{MAX_ENTRY_BYTES, MAX_INDEX_ENTRIES, MAX_SECTION_BYTES};
use hotspot_unwind::{
    AddressSpace, CodeAt, CopyEnd, End, Frame, MAX_FRAMES, ModuleUnwind, Regs, StackCopy,
    UnwindError, Unwinder,
};

const STACK: u64 = 0x7000_0000;

/// A process with one module mapped at its own addresses (0x1000..0x10_0000) and
/// anonymous executable memory at 0x9000_0000..0x9001_0000.
struct Space<'m>(&'m ModuleUnwind);

impl AddressSpace for Space<'_> {
    fn code_at(&mut self, avma: u64) -> CodeAt<'_> {
        match avma {
            0x1000..0x10_0000 => CodeAt::Module {
                module: self.0,
                svma: avma,
            },
            0x9000_0000..0x9001_0000 => CodeAt::Anonymous,
            _ => CodeAt::Unmapped,
        }
    }
}

fn words(w: &[u64]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn run(module: &ModuleUnwind, ip: u64, bp: u64, stack: &[u8], end: CopyEnd) -> (Vec<Frame>, End) {
    let regs = Regs {
        ip,
        sp: STACK,
        bp,
        ..Regs::default()
    };
    run_regs(module, regs, stack, end)
}

/// [`run`] from any registers (sp must be STACK).
fn run_regs(module: &ModuleUnwind, regs: Regs, stack: &[u8], end: CopyEnd) -> (Vec<Frame>, End) {
    let copy = StackCopy {
        base: STACK,
        bytes: stack,
        end,
    };
    let mut out = Vec::new();
    let mut unwinder = Unwinder::new();
    let got = unwinder.unwind(regs, &copy, &mut Space(module), &mut out);
    // the same again from the warm cache
    let mut again = Vec::new();
    assert_eq!(
        unwinder.unwind(regs, &copy, &mut Space(module), &mut again),
        got
    );
    assert_eq!(again, out);
    assert!(!out.is_empty() && out.len() <= MAX_FRAMES);
    (out, got)
}

fn addrs(frames: &[Frame]) -> Vec<u64> {
    frames.iter().map(|f| f.addr).collect()
}

/// f at 0x1000 pushes rbp (CFA = rsp + 16, rbp at CFA - 16 from 0x1001); g at 0x1100
/// has the CIE's rule.
fn two_functions() -> Vec<(u64, u32, Vec<u8>)> {
    let mut f = op::advance(1);
    f.extend(op::def_cfa_offset(16));
    f.extend(op::offset(6, 2));
    vec![(0x1000, 0x100, f), (0x1100, 0x100, vec![])]
}

/// The stack of a sample in f at 0x1010, called from g at 0x1150, g called from nowhere.
fn two_frames() -> Vec<u8> {
    words(&[0xbbbb, 0x1150, 0])
}

#[test]
fn crafted_module_unwinds_with_and_without_hdr() {
    for hdr in [true, false] {
        let m = ModuleUnwind::from_elf(&module(&two_functions(), hdr)).unwrap();
        assert!(m.has_cfi());
        let (frames, end) = run(&m, 0x1010, 0, &two_frames(), CopyEnd::MappingEnd);
        assert_eq!(addrs(&frames), [0x1010, 0x1150], "hdr {hdr}");
        assert_eq!(end, End::Complete);
        assert_eq!(m.function_start(0x1010), Some(0x1000));
        assert_eq!(m.function_start(0x1150), Some(0x1100));
        assert_eq!(m.function_start(0x1200), None);
        assert!(m.heap_bytes() > 0);
    }
}

/// A stack of `len` bytes from STACK, zero but for `words` (address, value).
fn stack_with(len: u64, words: &[(u64, u64)]) -> Vec<u8> {
    let mut w = vec![0u64; (len / 8) as usize];
    for &(addr, value) in words {
        w[((addr - STACK) / 8) as usize] = value;
    }
    self::words(&w)
}

/// Frames whose CFA is computed from r11 or rbx, as real code has them. probe at 0x1000
/// is LLVM's inline stack probe (`push rbx; mov rsp, r11; sub $0x3000, r11`, then
/// CFA = r11 + 0x3010 while a loop walks rsp down to r11: 16 rows of librustc_driver);
/// resolve at 0x1200 is ld.so's `_dl_runtime_resolve` (`push rbx; mov rsp, rbx`, then
/// CFA = rbx + 16 while rsp is realigned); fixup at 0x1300, which resolve calls, saves
/// rbx at CFA - 16 and reuses it; 0x1100 has the CIE's rule.
fn cfa_register_functions() -> ModuleUnwind {
    let mut probe = op::advance(1);
    probe.extend(op::def_cfa_offset(16));
    probe.extend(op::advance(10));
    probe.extend(op::def_cfa(11, 0x3010));
    let mut resolve = op::advance(1);
    resolve.extend(op::def_cfa_offset(16));
    resolve.extend(op::offset(3, 2));
    resolve.extend(op::advance(3));
    resolve.extend(op::def_cfa(3, 16));
    let mut fixup = op::advance(1);
    fixup.extend(op::def_cfa_offset(16));
    fixup.extend(op::offset(3, 2));
    let functions = [
        (0x1000, 0x100, probe),
        (0x1100, 0x100, vec![]),
        (0x1200, 0x100, resolve),
        (0x1300, 0x100, fixup),
    ];
    ModuleUnwind::from_elf(&module(&functions, true)).unwrap()
}

#[test]
fn a_cfa_in_r11_or_rbx_is_computed_from_the_sampled_registers() {
    let m = cfa_register_functions();
    // in the probe loop a page above its end: r11 = STACK - 0x1000, CFA = STACK + 0x2010
    let stack = stack_with(0x2018, &[(STACK + 0x2008, 0x1150)]);
    let regs = Regs {
        ip: 0x1020,
        sp: STACK,
        bp: 0,
        rbx: 0x5a5a,
        r11: STACK - 0x1000,
    };
    let (frames, end) = run_regs(&m, regs, &stack, CopyEnd::MappingEnd);
    assert_eq!((addrs(&frames), end), (vec![0x1020, 0x1150], End::Complete));

    // in resolve, rsp realigned below its frame: rbx = STACK + 0x100, CFA = STACK + 0x110
    let stack = stack_with(0x118, &[(STACK + 0x100, 0xcafe), (STACK + 0x108, 0x1150)]);
    let regs = Regs {
        ip: 0x1220,
        rbx: STACK + 0x100,
        r11: 0,
        ..regs
    };
    let (frames, end) = run_regs(&m, regs, &stack, CopyEnd::MappingEnd);
    assert_eq!((addrs(&frames), end), (vec![0x1220, 0x1150], End::Complete));
}

#[test]
fn rbx_is_restored_for_callers_and_r11_is_not() {
    let m = cfa_register_functions();
    // in fixup, which saved resolve's rbx (STACK + 0x100) at STACK and holds junk in it
    let stack = stack_with(
        0x118,
        &[
            (STACK, STACK + 0x100),
            (STACK + 0x8, 0x1220),
            (STACK + 0x100, 0xcafe),
            (STACK + 0x108, 0x1150),
        ],
    );
    let regs = Regs {
        ip: 0x1310,
        sp: STACK,
        bp: 0,
        rbx: 0x4242,
        r11: 0x4242,
    };
    let (frames, end) = run_regs(&m, regs, &stack, CopyEnd::MappingEnd);
    assert_eq!(
        (addrs(&frames), end),
        (vec![0x1310, 0x1220, 0x1150], End::Complete)
    );
    // fixup called from the probe loop: r11 is caller-saved, unknown there, even when the
    // sampled r11 would give a CFA in the copy
    let stack = stack_with(0x2018, &[(STACK + 0x8, 0x1021), (STACK + 0x2008, 0x1150)]);
    let regs = Regs {
        r11: STACK - 0x1000,
        ..regs
    };
    let (frames, end) = run_regs(&m, regs, &stack, CopyEnd::MappingEnd);
    assert_eq!(
        (addrs(&frames), end),
        (vec![0x1310, 0x1021], End::BadUnwindInfo)
    );
}

#[test]
fn without_section_headers_the_program_headers_lead_to_the_cfi() {
    let mut eh = EhFrame::new(0x3000);
    let cie = eh.cie(false, None);
    for (start, len, ins) in two_functions() {
        eh.fde(cie, start, len, &ins);
    }
    eh.terminate();
    let sections = [
        Section::new(".text", 0x1000, vec![0xcc; 0x1000]),
        Section::new(".eh_frame_hdr", 0x2000, eh.hdr(0x2000)),
        Section::new(".eh_frame", 0x3000, eh.bytes.clone()),
    ];
    let data = strip_section_headers(elf(&sections, true));
    let m = ModuleUnwind::from_elf(&data).unwrap();
    let (frames, end) = run(&m, 0x1010, 0, &two_frames(), CopyEnd::MappingEnd);
    assert_eq!((addrs(&frames), end), (vec![0x1010, 0x1150], End::Complete));
}

#[test]
fn truncated_files_and_sections() {
    let whole = module(&two_functions(), true);
    // every truncation of the file: an error or a module, never a panic
    for len in 0..whole.len() {
        if let Ok(m) = ModuleUnwind::from_elf(&whole[..len]) {
            let _ = run(&m, 0x1010, 0, &two_frames(), CopyEnd::Cap);
        }
    }
    // .eh_frame cut inside g's FDE: f still unwinds; g has no FDE (and no frame pointer)
    let mut eh = EhFrame::new(0x3000);
    let cie = eh.cie(false, None);
    for (start, len, ins) in two_functions() {
        eh.fde(cie, start, len, &ins);
    }
    let hdr = eh.hdr(0x2000);
    let cut = eh.bytes.len() - 6;
    for with_hdr in [true, false] {
        let mut sections = vec![Section::new(".text", 0x1000, vec![0xcc; 0x1000])];
        if with_hdr {
            sections.push(Section::new(".eh_frame_hdr", 0x2000, hdr.clone()));
        }
        sections.push(Section::new(".eh_frame", 0x3000, eh.bytes[..cut].to_vec()));
        let m = ModuleUnwind::from_elf(&elf(&sections, false)).unwrap();
        let (frames, end) = run(&m, 0x1010, 0, &two_frames(), CopyEnd::MappingEnd);
        assert_eq!(addrs(&frames), [0x1010, 0x1150]);
        let want = if with_hdr {
            End::BadUnwindInfo // the table names an FDE that no longer parses
        } else {
            End::NoUnwindInfo // the scan stopped before it
        };
        assert_eq!(end, want, "hdr {with_hdr}");
    }
}

#[test]
fn hdr_tables_that_lie() {
    let mut eh = EhFrame::new(0x3000);
    let cie = eh.cie(false, None);
    for (start, len, ins) in two_functions() {
        eh.fde(cie, start, len, &ins);
    }
    eh.terminate();
    let good = eh.fdes.clone();
    let tables: Vec<(&str, Vec<u8>)> = vec![
        // more entries than bytes
        ("count", hdr_table(0x2000, 0x3000, &good, 1_000_000)),
        ("count max", hdr_table(0x2000, 0x3000, &good, u32::MAX)),
        // unsorted: not used, the section is scanned instead
        (
            "unsorted",
            hdr_table(0x2000, 0x3000, &[good[1], good[0]], 2),
        ),
        // FDE addresses anywhere: past the section, into an FDE's middle, at the CIE,
        // before the section
        (
            "anywhere",
            hdr_table(
                0x2000,
                0x3000,
                &[(0x1000, 0x7fff_0000), (0x1100, good[1].1 + 3)],
                2,
            ),
        ),
        (
            "at the cie",
            hdr_table(0x2000, 0x3000, &[(0x1000, cie), (0x1100, cie)], 2),
        ),
        (
            "before",
            hdr_table(0x2000, 0x3000, &[(0x1000, 0xffff_f000)], 1),
        ),
        ("empty", hdr_table(0x2000, 0x3000, &[], 0)),
        ("cut", hdr_table(0x2000, 0x3000, &good, 2)[..13].to_vec()),
    ];
    for (what, table) in tables {
        let sections = [
            Section::new(".text", 0x1000, vec![0xcc; 0x1000]),
            Section::new(".eh_frame_hdr", 0x2000, table),
            Section::new(".eh_frame", 0x3000, eh.bytes.clone()),
        ];
        let m = ModuleUnwind::from_elf(&elf(&sections, false)).unwrap();
        let (frames, end) = run(&m, 0x1010, 0, &two_frames(), CopyEnd::MappingEnd);
        match what {
            // an unusable table is replaced by the scan: the right answer
            "count" | "count max" | "unsorted" | "empty" | "cut" => {
                assert_eq!(
                    (addrs(&frames), end),
                    (vec![0x1010, 0x1150], End::Complete),
                    "{what}"
                )
            }
            // a usable table that points wrong: a stop, not a wrong frame
            _ => {
                assert_eq!(frames.len(), 1, "{what}");
                assert!(
                    matches!(end, End::BadUnwindInfo | End::NoUnwindInfo),
                    "{what}: {end:?}"
                );
            }
        }
        let _ = m.function_start(0x1010);
    }
}

#[test]
fn garbage_instructions() {
    // a few patterns and a seeded pseudo-random stream of instruction bytes
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut random = |n: usize| -> Vec<u8> {
        (0..n)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect()
    };
    let mut cases: Vec<Vec<u8>> = vec![
        vec![0xff; 64],                                 // DW_CFA_hi_user
        vec![0x0c, 0x07],                               // def_cfa without an offset
        vec![op::RESTORE],                              // restore_state without remember_state
        vec![op::REMEMBER; 100], // a remember_state stack deeper than gimli's
        vec![0x0c, 0x1f, 0x08],  // CFA in r31
        vec![0x0c, 0x10, 0x08],  // CFA in the return address column
        vec![0x0f, 0x05, 0x30, 0x31, 0x22, 0x06, 0x06], // an expression not recognised
        vec![0x0f, 0xff, 0xff, 0xff, 0xff, 0x0f], // an expression longer than the FDE
        vec![0x10, 0x10, 0x02, 0x77, 0x40], // RA at rsp + 64 (a stack read)
        vec![0x16, 0x06, 0x01, 0x96], // val_expression with DW_OP_nop... not recognised
        op::def_cfa(7, 1 << 40), // a CFA offset beyond 32 bits
        op::def_cfa(6, 16),      // CFA in rbp
        op::undefined(16),       // the outermost frame
    ];
    for n in [1usize, 2, 3, 7, 16, 64, 200] {
        for _ in 0..30 {
            cases.push(random(n));
        }
    }
    for ins in cases {
        let functions = vec![(0x1000, 0x100, ins.clone()), (0x1100, 0x100, vec![])];
        for hdr in [true, false] {
            let m = ModuleUnwind::from_elf(&module(&functions, hdr)).unwrap();
            for ip in [0x1000, 0x1001, 0x1010, 0x10ff] {
                let _ = run(&m, ip, STACK + 8, &two_frames(), CopyEnd::Cap);
            }
        }
    }
}

#[test]
fn specific_rules_stop_with_their_reason() {
    let cases: Vec<(Vec<u8>, End)> = vec![
        (op::def_cfa(7, 0), End::NoProgress), // CFA = rsp: does not grow
        (op::def_cfa(6, 0), End::NoProgress), // CFA = rbp = rsp
        (op::def_cfa(7, 0x1000), End::OutsideStack), // past the end of the mapping
        (vec![op::RESTORE], End::BadUnwindInfo),
        (vec![op::REMEMBER; 100], End::BadUnwindInfo),
        (vec![0x0c, 0x1f, 0x08], End::BadUnwindInfo), // CFA in r31
        (op::undefined(16), End::Complete),
        // CFA = [rsp + 8]: the stack's second word (0x1150) is no stack address
        (
            op::def_cfa_expression(&[0x77, 0x08, 0x06]),
            End::OutsideStack,
        ),
    ];
    for (ins, want) in cases {
        let functions = vec![(0x1000, 0x100, ins.clone()), (0x1100, 0x100, vec![])];
        let m = ModuleUnwind::from_elf(&module(&functions, true)).unwrap();
        let (frames, end) = run(&m, 0x1000, STACK, &two_frames(), CopyEnd::MappingEnd);
        assert_eq!((frames.len(), end), (1, want), "{ins:x?}");
    }
    // the same CFA-not-growing rule under a cap, and a cap hit by a real rule
    let functions = vec![(0x1000, 0x100, op::def_cfa(7, 0x1000))];
    let m = ModuleUnwind::from_elf(&module(&functions, true)).unwrap();
    assert_eq!(
        run(&m, 0x1000, 0, &two_frames(), CopyEnd::Cap).1,
        End::StackCap
    );
    assert_eq!(
        run(&m, 0x1000, 0, &two_frames(), CopyEnd::Fault).1,
        End::UnreadablePage
    );
}

#[test]
fn cie_pointers_that_loop_or_point_anywhere() {
    // .eh_frame: an FDE whose CIE pointer points at itself, one at another FDE, one past
    // the section, one before it
    let mut eh = EhFrame::new(0x3000);
    let cie = eh.cie(false, None);
    let f = eh.fde(cie, 0x1000, 0x100, &[]);
    let g = eh.fde(cie, 0x1100, 0x100, &[]);
    eh.terminate();
    let patch = |bytes: &mut Vec<u8>, fde: u32, cie_ptr: u32| {
        bytes[fde as usize + 4..fde as usize + 8].copy_from_slice(&cie_ptr.to_le_bytes());
    };
    for (fde, ptr) in [(f, 4), (g, g + 4 - f), (f, 0x8000_0000), (g, 0xffff_fff0)] {
        let mut bytes = eh.bytes.clone();
        patch(&mut bytes, fde, ptr);
        let sections = [
            Section::new(".text", 0x1000, vec![0xcc; 0x1000]),
            Section::new(".eh_frame_hdr", 0x2000, eh.hdr(0x2000)),
            Section::new(".eh_frame", 0x3000, bytes),
        ];
        let m = ModuleUnwind::from_elf(&elf(&sections, false)).unwrap();
        let ip = if fde == f { 0x1010 } else { 0x1110 };
        let (frames, end) = run(&m, ip, 0, &two_frames(), CopyEnd::MappingEnd);
        assert_eq!(
            (frames.len(), end),
            (1, End::BadUnwindInfo),
            "{fde} {ptr:#x}"
        );
    }
    // .debug_frame: FDEs whose CIE pointer is an FDE (itself, the other), or past the end
    let mut df = DebugFrame::default();
    let cie = df.cie();
    let f = df.fde(cie, 0x1000, 0x100, &[]);
    for target in [f, f + 40, 0xffff_0000] {
        let mut df2 = df.clone();
        df2.fde(target, 0x1100, 0x100, &[]);
        let debug = elf(&[Section::new(".debug_frame", 0, df2.bytes.clone())], false);
        let mut m =
            ModuleUnwind::from_elf(&elf(&[Section::new(".text", 0x1000, vec![0; 16])], false))
                .unwrap();
        m.add_debug_frame(&debug).unwrap();
        let (frames, end) = run(&m, 0x1110, 0, &two_frames(), CopyEnd::MappingEnd);
        // the FDE with a bad CIE pointer is not indexed: no unwind info there
        assert_eq!((frames.len(), end), (1, End::NoUnwindInfo), "{target:#x}");
        // the good one still works
        let (frames, end) = run(&m, 0x1010, 0, &words(&[0x1150, 0]), CopyEnd::MappingEnd);
        assert_eq!(
            (addrs(&frames), end),
            (vec![0x1010, 0x1150], End::NoUnwindInfo)
        );
    }
}

#[test]
fn debug_frame_from_a_debug_file() {
    let mut df = DebugFrame::default();
    let cie = df.cie();
    let mut f = op::advance(1);
    f.extend(op::def_cfa_offset(16));
    f.extend(op::offset(6, 2));
    df.fde(cie, 0x1000, 0x100, &f);
    df.fde(cie, 0x1100, 0x100, &op::undefined(16));
    // a stripped module without CFI, and its debug file: plain and zlib-compressed
    let m = module(&[], false);
    let plain = elf(&[Section::new(".debug_frame", 0, df.bytes.clone())], false);
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut z, &df.bytes).unwrap();
    let compressed = Section {
        compressed: Some(df.bytes.len() as u64),
        ..Section::new(".debug_frame", 0, z.finish().unwrap())
    };
    let zlib = elf(std::slice::from_ref(&compressed), false);
    for debug in [plain, zlib] {
        let mut m = ModuleUnwind::from_elf(&m).unwrap();
        let (_, end) = run(&m, 0x1010, 0, &two_frames(), CopyEnd::MappingEnd);
        // no CFI at all: the frame-pointer rule, and rbp = 0 marks the outermost frame
        assert_eq!(end, End::Complete);
        m.add_debug_frame(&debug).unwrap();
        assert!(m.has_cfi());
        let (frames, end) = run(&m, 0x1010, 0, &two_frames(), CopyEnd::MappingEnd);
        assert_eq!((addrs(&frames), end), (vec![0x1010, 0x1150], End::Complete));
        assert_eq!(m.function_start(0x1150), Some(0x1100));
    }
    // a compressed section that lies about its size: refused, without allocating it
    for claimed in [1u64 << 32, MAX_SECTION_BYTES as u64 + 1] {
        let lying = elf(
            &[Section {
                compressed: Some(claimed),
                ..compressed.clone()
            }],
            false,
        );
        let mut m = ModuleUnwind::from_elf(&m).unwrap();
        assert!(matches!(
            m.add_debug_frame(&lying),
            Err(UnwindError::TooLarge { .. })
        ));
    }
    let short = elf(
        &[Section {
            compressed: Some(60 << 20),
            ..compressed.clone()
        }],
        false,
    );
    let mut mm = ModuleUnwind::from_elf(&m).unwrap();
    assert!(matches!(
        mm.add_debug_frame(&short),
        Err(UnwindError::Decompress { .. })
    ));
    // a debug file without .debug_frame, and one with it NOBITS: nothing changes
    let none = elf(&[Section::new(".text", 0x1000, vec![0; 8])], false);
    let nobits = elf(
        &[Section {
            kind: NOBITS,
            ..Section::new(".debug_frame", 0, vec![0; 64])
        }],
        false,
    );
    for debug in [none, nobits] {
        let mut m = ModuleUnwind::from_elf(&m).unwrap();
        m.add_debug_frame(&debug).unwrap();
        assert!(!m.has_cfi());
    }
}

#[test]
fn sizes_that_lie() {
    // a section header claiming 4 GiB in a small file
    let mut eh = EhFrame::new(0x3000);
    let cie = eh.cie(false, None);
    eh.fde(cie, 0x1000, 0x100, &[]);
    eh.terminate();
    let lying = Section {
        claimed_size: Some(4 << 30),
        ..Section::new(".eh_frame", 0x3000, eh.bytes.clone())
    };
    assert!(ModuleUnwind::from_elf(&elf(&[lying], false)).is_err());
    // an entry whose 64-bit length claims 4 GiB: the scan stops there, the table's FDE
    // does not parse
    let mut bytes = eh.bytes.clone();
    let fde = eh.fdes[0].1 as usize;
    bytes[fde..fde + 4].copy_from_slice(&0xffff_ffffu32.to_le_bytes());
    bytes.splice(fde + 4..fde + 4, (4u64 << 30).to_le_bytes());
    for hdr in [true, false] {
        let mut sections = vec![Section::new(".text", 0x1000, vec![0xcc; 0x1000])];
        if hdr {
            sections.push(Section::new(".eh_frame_hdr", 0x2000, eh.hdr(0x2000)));
        }
        sections.push(Section::new(".eh_frame", 0x3000, bytes.clone()));
        let m = ModuleUnwind::from_elf(&elf(&sections, false)).unwrap();
        // rbp 1: no frame pointer either
        let (_, end) = run(&m, 0x1010, 1, &two_frames(), CopyEnd::MappingEnd);
        assert!(
            matches!(end, End::BadUnwindInfo | End::NoUnwindInfo),
            "{end:?}"
        );
    }
    // an FDE of more than MAX_ENTRY_BYTES (all nops): refused, not evaluated
    let big = vec![0u8; MAX_ENTRY_BYTES + 64];
    let m = ModuleUnwind::from_elf(&module(&[(0x1000, 0x100, big)], true)).unwrap();
    assert_eq!(
        run(&m, 0x1010, 0, &two_frames(), CopyEnd::MappingEnd).1,
        End::BadUnwindInfo
    );
    // an FDE covering the whole address space
    let m = ModuleUnwind::from_elf(&module(&[(0x1000, u32::MAX, vec![])], true)).unwrap();
    let _ = run(&m, 0x1010, 0, &two_frames(), CopyEnd::MappingEnd);
    // not x86_64, not ELF64, not ELF
    let mut other = module(&two_functions(), true);
    other[18] = 0xb7; // EM_AARCH64
    assert!(matches!(
        ModuleUnwind::from_elf(&other),
        Err(UnwindError::Architecture { .. })
    ));
    let mut elf32 = module(&two_functions(), true);
    elf32[4] = 1;
    assert!(ModuleUnwind::from_elf(&elf32).is_err());
    assert!(ModuleUnwind::from_elf(b"not an elf file").is_err());
    assert!(ModuleUnwind::from_elf(&[]).is_err());
}

#[test]
fn index_scan_is_capped() {
    // more FDEs than the index takes, no hdr: the scan stops at the cap, in bounded time
    let n = MAX_INDEX_ENTRIES + 1000;
    let mut eh = EhFrame::new(0x3000);
    let cie = eh.cie(false, None);
    for i in 0..n as u64 {
        eh.fde(cie, 0x1000 + i, 1, &[]);
    }
    eh.terminate();
    let data = elf(
        &[
            Section::new(".text", 0x1000, vec![0xcc; 16]),
            Section::new(".eh_frame", 0x3000, eh.bytes.clone()),
        ],
        false,
    );
    drop(eh);
    let t = Instant::now();
    let m = ModuleUnwind::from_elf(&data).unwrap();
    let took = t.elapsed();
    assert!(took < Duration::from_secs(20), "{took:?}");
    // entries up to the cap are indexed, the ones past it are not
    assert_eq!(m.function_start(0x1000 + 5), Some(0x1000 + 5));
    assert_eq!(m.function_start(0x1000 + n as u64 - 1), None);
    assert!(m.heap_bytes() < data.len() + 16 * MAX_INDEX_ENTRIES + 4096);
}

#[test]
fn hostile_registers_and_stacks() {
    let m = ModuleUnwind::from_elf(&module(&two_functions(), true)).unwrap();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let special = [
        0,
        1,
        8,
        0x1000,
        0x1010,
        0x1150,
        0x9000_0000,
        STACK,
        STACK + 8,
        u64::MAX,
        u64::MAX - 7,
    ];
    for round in 0..2000 {
        let len = (next() % 512) as usize;
        let bytes: Vec<u8> = (0..len / 8)
            .flat_map(|_| {
                let v = if next() % 2 == 0 {
                    special[(next() % special.len() as u64) as usize]
                } else {
                    next()
                };
                v.to_le_bytes()
            })
            .collect();
        let base = if round % 3 == 0 {
            u64::MAX - len as u64
        } else {
            STACK
        };
        let regs = Regs {
            ip: special[(next() % special.len() as u64) as usize],
            sp: base,
            bp: special[(next() % special.len() as u64) as usize],
            rbx: special[(next() % special.len() as u64) as usize],
            r11: special[(next() % special.len() as u64) as usize],
        };
        let copy = StackCopy {
            base,
            bytes: &bytes,
            end: [
                CopyEnd::MappingEnd,
                CopyEnd::Cap,
                CopyEnd::Fault,
                CopyEnd::Unknown,
            ][round % 4],
        };
        let mut out = Vec::new();
        let _ = Unwinder::new().unwind(regs, &copy, &mut Space(&m), &mut out);
        assert!(!out.is_empty() && out.len() <= MAX_FRAMES);
    }
    // a frame-pointer chain in anonymous code that points at itself: stops
    let stack = words(&[STACK, 0x9000_0010, STACK, 0x9000_0010]);
    let (_, end) = run(&m, 0x9000_0000, STACK, &stack, CopyEnd::MappingEnd);
    assert_eq!(end, End::NoUnwindInfo);
    // a return address pointing back at the same code and a CFA that grows: runs to the
    // depth limit or the end of the copy, never further
    let stack: Vec<u8> = words(&vec![0x1150; 2000]);
    let (frames, end) = run(&m, 0x1150, 0, &stack, CopyEnd::Cap);
    assert_eq!((frames.len(), end), (MAX_FRAMES, End::DepthLimit));
}
