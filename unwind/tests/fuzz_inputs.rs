//! Replays `tests/fuzz_inputs/` through the fuzz target's checks, and checks the
//! fuzzer's seeds too. The `unwind` target found nothing to fix in two 25-minute runs
//! (152 million inputs); `corpus-END-*` are the smallest corpus inputs ending with each
//! [`End`] (and one whose ELF does not parse), kept so that every stop stays covered.
//! Anything a run finds goes here, minimised, as `crash-unwind-<hash>`.
//!
//! The seeds are made here from real ELF files (the vDSO and the dumper binary, with
//! stacks of real dumps relocated into the fuzz target's address space) and from crafted
//! ones. `HS_FUZZ_SEEDS=DIR cargo test -p hotspot-unwind --test fuzz_inputs` writes them to
//! DIR (e.g. `fuzz/corpus/unwind`) to start a run from.

#![allow(clippy::unwrap_used)]

mod common;
use hotspot_testkit::unwind::fuzz_check;

use std::process::Command;

use common::craft::{self, DebugFrame, EhFrame, Section, op};
use common::{Build, Dump, Process, dumps};
use fuzz_check::{STACK, check, encode};
use hotspot_unwind::End;

#[test]
fn fuzz_inputs_still_pass() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fuzz_inputs");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().unwrap().to_string_lossy().starts_with('.') {
            continue;
        }
        check(&std::fs::read(&path).unwrap());
        n += 1;
    }
    println!("{n} regression inputs");
}

/// A dump's stack words rewritten for the fuzz target's address space: addresses in the
/// stack move to [`STACK`], code addresses of the dump's main module become its svmas.
fn relocate(d: &Dump, process: &Process, module_path: &str) -> (Vec<u8>, u64, u64) {
    let sp = d.regs.sp;
    let end = sp + d.stack.len() as u64;
    let move_word = |w: u64| -> u64 {
        if (sp..end).contains(&w) {
            return w - sp + STACK;
        }
        match process.translate(w.wrapping_sub(1)) {
            Some((m, svma)) if m.path == module_path => svma + 1,
            _ => w,
        }
    };
    let stack = d
        .stack
        .chunks_exact(8)
        .flat_map(|w| move_word(u64::from_le_bytes(w.try_into().unwrap())).to_le_bytes())
        .collect();
    let ip = process.translate(d.regs.ip).map_or(d.regs.ip, |(_, s)| s);
    (stack, ip, move_word(d.regs.bp))
}

fn seeds() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    // crafted: two functions, with and without hdr, no section headers, a debug file,
    // a signal trampoline and a PLT rule
    let mut f = op::advance(1);
    f.extend(op::def_cfa_offset(16));
    f.extend(op::offset(6, 2));
    let functions = vec![(0x1000u64, 0x100u32, f.clone()), (0x1100, 0x100, vec![])];
    let stack: Vec<u8> = [0xbbbbu64, 0x1150, 0]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    for hdr in [true, false] {
        let elf = craft::module(&functions, hdr);
        out.push((
            format!("crafted-hdr-{hdr}"),
            encode(&elf, &[], 0x1010, 0, 0, &stack),
        ));
    }
    let mut eh = EhFrame::new(0x3000);
    let cie = eh.cie(false, None);
    eh.fde(cie, 0x1000, 0x100, &f);
    let signal = eh.cie(true, Some(&[]));
    let mut restore = op::def_cfa_expression(&[0x77, 0xa0, 0x01, 0x06]);
    restore.extend(op::expression(16, &[0x77, 0xa8, 0x01]));
    restore.extend(op::expression(6, &[0x77, 0xf8, 0x00])); // rbp at rsp + 120
    eh.fde(signal, 0x1200, 0x10, &restore);
    let plt = op::def_cfa_expression(&[
        0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22,
    ]);
    eh.fde(cie, 0x1300, 0x40, &plt);
    eh.terminate();
    let sections = [
        Section::new(".text", 0x1000, vec![0xcc; 0x1000]),
        Section::new(".eh_frame_hdr", 0x2000, eh.hdr(0x2000)),
        Section::new(".eh_frame", 0x3000, eh.bytes.clone()),
        Section::new(".plt.sec", 0x1400, vec![0xcc; 0x40]),
    ];
    let elf = craft::elf(&sections, true);
    let mut ucontext = vec![0u8; 0xb0];
    ucontext[0xa0..0xa8].copy_from_slice(&(STACK + 0xb0).to_le_bytes());
    ucontext[0xa8..0xb0].copy_from_slice(&0x1010u64.to_le_bytes());
    ucontext.extend_from_slice(&stack);
    out.push((
        "crafted-signal".into(),
        encode(&elf, &[], 0x1200, 0, 1, &ucontext),
    ));
    out.push((
        "crafted-plt".into(),
        encode(&elf, &[], 0x1310, 0, 2, &stack),
    ));
    out.push((
        "crafted-plt-sec".into(),
        encode(&elf, &[], 0x1408, 0, 3, &stack),
    ));
    let stripped = craft::strip_section_headers(elf.clone());
    out.push((
        "crafted-no-sections".into(),
        encode(&stripped, &[], 0x1010, 0, 0, &stack),
    ));
    let mut df = DebugFrame::default();
    let cie = df.cie();
    df.fde(cie, 0x1000, 0x100, &f);
    df.fde(cie, 0x1100, 0x100, &op::undefined(16));
    let debug = craft::elf(&[Section::new(".debug_frame", 0, df.bytes)], false);
    let bare = craft::module(&[], false);
    out.push((
        "crafted-debug-frame".into(),
        encode(&bare, &debug, 0x1010, 0, 0, &stack),
    ));

    // a return into anonymous code without a frame pointer that ends in a plain epilogue
    // (CPython 3.12's perf trampolines: add $8,%rsp; ret), its bytes the debug file's
    let elf = craft::module(&[(0x1000, 0x100, vec![]), (0x1100, 0x100, vec![])], true);
    let epilogue = [0x48, 0x83, 0xc4, 0x08, 0xc3];
    // (the code repeats every 5 bytes: ANON + 15 is its start)
    let stack: Vec<u8> = [fuzz_check::ANON + 15, 0x5a5a, 0x1150, 0]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    out.push((
        "crafted-anon-epilogue".into(),
        encode(&elf, &epilogue, 0x1010, 0, 0, &stack),
    ));

    // real: the vDSO and the dumper binary (stripped of its DWARF: smaller), with the
    // stacks of their dumps
    for (name, d) in [
        ("vdso", "vdso"),
        ("chain", "chain"),
        ("signal", "signal"),
        ("jit", "jit"),
    ] {
        let d = &dumps(Build::Plain)[d];
        let process = Process::new(d);
        let (path, elf) = if name == "vdso" {
            (
                "[vdso]".to_string(),
                std::fs::read(d.dir.join("vdso.so")).unwrap(),
            )
        } else {
            let out = d.dir.join("dumper-stripped");
            let status = Command::new("strip")
                .args(["--strip-debug", "-o"])
                .arg(&out)
                .arg(d.exe())
                .status()
                .unwrap();
            assert!(status.success());
            (d.exe().to_string(), std::fs::read(&out).unwrap())
        };
        let (stack, ip, bp) = relocate(d, &process, &path);
        // keep seeds small: the first 2 KiB of stack hold the frames that matter
        let stack = &stack[..stack.len().min(2048)];
        out.push((format!("real-{name}"), encode(&elf, &[], ip, bp, 1, stack)));
    }
    out
}

#[test]
fn seeds_pass_and_can_be_written() {
    let seeds = seeds();
    for (name, input) in &seeds {
        check(input);
        let (frames, end) = fuzz_check::outcome(input).unwrap();
        println!("{name}: {frames} frames, {end:?}");
        // each seed gets past its first frame's rule (the vDSO's caller is libc, not in
        // the fuzz target's address space): mutations start from real unwinding
        assert!(
            frames >= 2 || end == End::Unmapped,
            "{name}: {frames} {end:?}"
        );
    }
    if let Ok(dir) = std::env::var("HS_FUZZ_SEEDS") {
        std::fs::create_dir_all(&dir).unwrap();
        for (name, input) in &seeds {
            std::fs::write(format!("{dir}/seed-{name}"), input).unwrap();
        }
    }
    println!(
        "{} seeds, {} bytes",
        seeds.len(),
        seeds.iter().map(|s| s.1.len()).sum::<usize>()
    );
}
