//! The unwinder on real stacks: dumps of `tests/dumper.c` taken at chosen points (see
//! `tests/common`), built without frame pointers and with them, checked frame by frame
//! against the symbolised call chain the program really had.

#![allow(clippy::unwrap_used)]

mod common;

use std::process::Command;
use std::sync::Arc;

use common::{Build, Dump, Loaded, Process, dumps, unwind};
use hotspot_unwind::{
    CopyEnd, End, Frame, MAX_FRAMES, Regs, StackCopy, Unwinder, splice_frame_pointers,
};

/// How every stack of the main thread ends.
const MAIN: [&str; 4] = [
    "main",
    "__libc_start_call_main",
    "__libc_start_main",
    "_start",
];

fn chain(head: &[&str]) -> Vec<String> {
    head.iter()
        .chain(MAIN.iter())
        .map(|s| s.to_string())
        .collect()
}

fn dump(build: Build, name: &str) -> &'static Dump {
    &dumps(build)[name]
}

/// Unwinds and checks the names and the end.
fn check(build: Build, name: &str, want: &[String], want_end: End) -> (Vec<Frame>, Process) {
    let (frames, end, process) = unwind(dump(build, name));
    let names = process.names(&frames);
    assert_eq!(names, want, "{build:?} {name}");
    assert_eq!(end, want_end, "{build:?} {name}: {names:?}");
    (frames, process)
}

#[test]
fn call_chain_down_to_start() {
    for build in Build::ALL {
        let (frames, _) = check(
            build,
            "chain",
            &chain(&["hs_dump", "chain_c", "chain_b", "chain_a"]),
            End::Complete,
        );
        assert!(frames[0].exact);
        assert!(frames[1..].iter().all(|f| !f.exact));
    }
}

#[test]
fn thread_down_to_clone3() {
    let want: Vec<String> = [
        "hs_dump",
        "thread_work",
        "thread_main",
        "start_thread",
        "clone3",
    ]
    .map(String::from)
    .into();
    for build in Build::ALL {
        check(build, "thread", &want, End::Complete);
    }
}

#[test]
fn recursion_of_200_frames_is_complete() {
    let mut head = vec!["hs_dump"];
    head.extend(std::iter::repeat_n("recurse", 201)); // recurse(200) .. recurse(0)
    for build in Build::ALL {
        check(build, "recursion", &chain(&head), End::Complete);
    }
}

#[test]
fn stack_realignment_drap() {
    for build in Build::ALL {
        check(build, "drap", &chain(&["hs_dump", "drap"]), End::Complete);
    }
}

#[test]
fn sample_in_a_frameless_leaf_keeps_its_caller() {
    for build in Build::ALL {
        check(
            build,
            "leaf",
            &chain(&["leaf_spin", "route", "dispatch", "sampled"]),
            End::Complete,
        );
    }
    // The point of the test: under frame pointers, the frame-pointer walk from the same
    // registers loses `route` (leaf_spin has no frame, rbp is still route's).
    let d = dump(Build::FramePointers, "leaf");
    let process = Process::new(d);
    let copy = d.copy();
    let ra = read(&copy, d.regs.bp + 8);
    assert_eq!(
        process.name(&Frame {
            addr: ra,
            exact: false
        }),
        "dispatch"
    );
}

#[test]
fn signal_handler_unwinds_through_restore_rt() {
    for build in Build::ALL {
        let (frames, _) = check(
            build,
            "signal",
            &chain(&[
                "hs_dump",
                "on_tick",
                "__restore_rt",
                "signal_spin",
                "signal_caller",
                "sampled",
            ]),
            End::Complete,
        );
        // the trampoline's entry (the kernel's return address) and the interrupted PC are
        // exact; the return addresses around them are not
        let exact: Vec<bool> = frames[..5].iter().map(|f| f.exact).collect();
        assert_eq!(exact, [true, false, true, true, false], "{build:?}");
    }
}

#[test]
fn sample_in_the_vdso() {
    for build in Build::ALL {
        let (frames, process) = check(
            build,
            "vdso",
            &chain(&["clock_gettime", "clock_gettime", "vdso_caller", "sampled"]),
            End::Complete,
        );
        assert_eq!(process.find(frames[0].addr).unwrap().0.path, "[vdso]");
        assert!(
            process
                .find(frames[1].addr)
                .unwrap()
                .0
                .path
                .contains("libc")
        );
    }
}

#[test]
fn anonymous_code_with_a_frame_pointer_is_crossed() {
    for build in Build::ALL {
        check(
            build,
            "jit",
            &chain(&["hs_dump", "jit_callback", "[anon]", "jit_caller"]),
            End::Complete,
        );
    }
}

fn read(copy: &StackCopy, addr: u64) -> u64 {
    let at = (addr - copy.base) as usize;
    u64::from_le_bytes(copy.bytes[at..at + 8].try_into().unwrap())
}

/// The chain dump as if sampled on entry to a PLT stub that chain_c called instead of
/// hs_dump: sp at the slot of the return address into chain_c, and `pushed` more words
/// below it (the lazy-binding `push`es).
fn plt_sample(build: Build, d: &Dump, ip: u64, pushed: usize) -> (Regs, Vec<u8>, u64) {
    let mut process = Process::new(d);
    let mut out = Vec::new();
    let mut unwinder = Unwinder::new();
    unwinder.unwind(d.regs, &d.copy(), &mut process, &mut out);
    // hs_dump's CFA - 8 holds the return address into chain_c: find it in the stack.
    let ra = out[1].addr;
    let slot = (0..d.stack.len() - 8)
        .step_by(8)
        .find(|&i| u64::from_le_bytes(d.stack[i..i + 8].try_into().unwrap()) == ra)
        .unwrap();
    let mut bytes = vec![0x5au8; pushed * 8]; // not 0: a wrong CFA must not read as "outermost"
    bytes.extend_from_slice(&d.stack[slot..]);
    let sp = d.regs.sp + slot as u64 - pushed as u64 * 8;
    // rbp as hs_dump received it: with frame pointers, the one hs_dump saved; without,
    // no function on the way uses it
    let bp = match build {
        Build::FramePointers => read(&d.copy(), d.regs.bp),
        Build::Plain => d.regs.bp,
    };
    // rbx and r11: no CFA on the way is computed from them
    (
        Regs {
            ip,
            sp,
            bp,
            ..d.regs
        },
        bytes,
        sp,
    )
}

fn section(path: &str, name: &str) -> (u64, u64) {
    let out = Command::new("readelf")
        .args(["-SW", path])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.split_whitespace().any(|w| w == name))
        .unwrap_or_else(|| panic!("{path} has no {name}"));
    let f: Vec<&str> = line.split(']').nth(1).unwrap().split_whitespace().collect();
    (
        u64::from_str_radix(f[2], 16).unwrap(),
        u64::from_str_radix(f[4], 16).unwrap(),
    )
}

/// The avma of an svma of the dumper binary.
fn exe_avma(d: &Dump, svma: u64) -> u64 {
    let process = Process::new(d);
    let (m, module) = process
        .maps
        .iter()
        .find(|(m, _)| m.path == d.exe())
        .unwrap();
    let base = m.start - module.as_ref().unwrap().svma_of_offset(m.offset).unwrap();
    base + svma
}

fn unwind_names(process: &mut Process, regs: Regs, bytes: &[u8]) -> (Vec<String>, End) {
    let copy = StackCopy {
        base: regs.sp,
        bytes,
        end: CopyEnd::MappingEnd,
    };
    let mut out = Vec::new();
    let end = Unwinder::new().unwind(regs, &copy, process, &mut out);
    (process.names(&out[1..]), end)
}

#[test]
fn samples_inside_plt_stubs() {
    let want = chain(&["chain_c", "chain_b", "chain_a"]);
    for build in Build::ALL {
        let d = dump(build, "chain");
        let (plt, size) = section(d.exe(), ".plt");
        assert!(size >= 0x30);
        // (offset in .plt, words pushed so far): PLT0 after the entry's push, PLT0 after
        // its own, an entry's jmp, and an entry after its push (the FDE's expression).
        for (off, pushed) in [
            (0x00, 1),
            (0x06, 2),
            (0x10, 0),
            (0x16, 0),
            (0x1b, 1),
            (0x20, 0),
        ] {
            let (regs, bytes, _) = plt_sample(build, d, exe_avma(d, plt + off), pushed);
            let (names, end) = unwind_names(&mut Process::new(d), regs, &bytes);
            assert_eq!(names, want, "{build:?} .plt+{off:#x} {end:?}");
            assert_eq!(end, End::Complete);
        }
        // .plt.got has an FDE of the CIE's rule (CFA = rsp + 8)
        let (plt_got, _) = section(d.exe(), ".plt.got");
        let (regs, bytes, _) = plt_sample(build, d, exe_avma(d, plt_got), 0);
        let (names, _) = unwind_names(&mut Process::new(d), regs, &bytes);
        assert_eq!(names, want, "{build:?} .plt.got");
    }
}

/// The dumper binary without its CFI (`objcopy --remove-section`), as a module.
fn without_cfi(d: &Dump) -> Arc<Loaded> {
    let out = d.dir.join("dumper-nocfi");
    let status = Command::new("objcopy")
        .args([
            "--remove-section",
            ".eh_frame",
            "--remove-section",
            ".eh_frame_hdr",
        ])
        .arg(d.exe())
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success());
    let data = std::fs::read(&out).unwrap();
    let loaded = Loaded::load(d.exe(), data);
    assert!(!loaded.unwind.has_cfi());
    Arc::new(loaded)
}

#[test]
fn plt_ranges_without_cfi_and_a_module_without_cfi() {
    let build = Build::FramePointers;
    let d = dump(build, "chain");
    let stripped = without_cfi(d);
    // PLT entries without an FDE: CFA = rsp + 8 (the jmp before any push)
    let (plt, _) = section(d.exe(), ".plt");
    let (regs, bytes, _) = plt_sample(build, d, exe_avma(d, plt + 0x10), 0);
    let mut process = Process::replacing(d, d.exe(), stripped.clone());
    let (names, end) = unwind_names(&mut process, regs, &bytes);
    assert_eq!(names, chain(&["chain_c", "chain_b", "chain_a"]), "{end:?}");
    assert_eq!(end, End::Complete);
    // The whole chain through a module without CFI: the frame-pointer rule, on to libc's CFI.
    let mut process = Process::replacing(d, d.exe(), stripped);
    let mut out = Vec::new();
    let end = Unwinder::new().unwind(d.regs, &d.copy(), &mut process, &mut out);
    assert_eq!(
        process.names(&out),
        chain(&["hs_dump", "chain_c", "chain_b", "chain_a"]),
        "{end:?}"
    );
    assert_eq!(
        process.names(&out),
        chain(&["hs_dump", "chain_c", "chain_b", "chain_a"])
    );
    assert_eq!(end, End::Complete);
}

#[test]
fn copies_that_end_early() {
    for build in Build::ALL {
        let d = dump(build, "recursion");
        let full = unwind(d).0;
        for (end, want) in [
            (CopyEnd::Cap, End::StackCap),
            (CopyEnd::Unknown, End::StackCap),
            (CopyEnd::Fault, End::UnreadablePage),
            (CopyEnd::MappingEnd, End::OutsideStack),
        ] {
            for len in [0usize, 7, 8, 100, 512, 4096] {
                let copy = StackCopy {
                    base: d.regs.sp,
                    bytes: &d.stack[..len],
                    end,
                };
                let mut process = Process::new(d);
                let mut out = Vec::new();
                let got = Unwinder::new().unwind(d.regs, &copy, &mut process, &mut out);
                assert_eq!(got, want, "{build:?} {len} bytes, {end:?}");
                // what was unwound is a prefix of the full stack
                assert!(!out.is_empty());
                assert_eq!(out[..], full[..out.len()], "{build:?} {len}");
            }
        }
    }
}

/// The kernel's frame-pointer walk of a dump: the PC, then return addresses via rbp.
fn frame_pointer_chain(d: &Dump) -> Vec<u64> {
    let copy = d.copy();
    let end = copy.base + copy.bytes.len() as u64;
    let mut chain = vec![d.regs.ip];
    let mut bp = d.regs.bp;
    while bp >= copy.base && bp + 16 <= end && chain.len() < 4096 {
        chain.push(read(&copy, bp + 8));
        let next = read(&copy, bp);
        if next <= bp {
            break;
        }
        bp = next;
    }
    chain
}

#[test]
fn frame_pointer_splice_past_the_cap() {
    let d = dump(Build::FramePointers, "recursion");
    let (full, end, _) = unwind(d);
    assert_eq!(end, End::Complete);
    let chain = frame_pointer_chain(d);
    // the frame-pointer walk stops in libc (no frame pointers): it is shorter
    assert!(
        chain.len() > 200 && chain.len() < full.len(),
        "{}",
        chain.len()
    );
    let copy = StackCopy {
        base: d.regs.sp,
        bytes: &d.stack[..2048],
        end: CopyEnd::Cap,
    };
    let mut process = Process::new(d);
    let mut out = Vec::new();
    assert_eq!(
        Unwinder::new().unwind(d.regs, &copy, &mut process, &mut out),
        End::StackCap
    );
    let before = out.len();
    assert!(before < 100);
    assert!(splice_frame_pointers(
        &mut out,
        &chain,
        &copy,
        d.regs.bp,
        &mut process
    ));
    // the frames the chain has are exactly the full unwind's, as far as it goes
    let addrs: Vec<u64> = out.iter().map(|f| f.addr).collect();
    let full_addrs: Vec<u64> = full.iter().map(|f| f.addr).collect();
    assert_eq!(addrs, full_addrs[..addrs.len()]);
    assert_eq!(addrs.len(), chain.len());
}

#[test]
fn function_start_names_code() {
    let d = dump(Build::Plain, "chain");
    let (frames, _, process) = unwind(d);
    for f in &frames[..4] {
        let (module, svma) = process.translate(f.addr - u64::from(!f.exact)).unwrap();
        let start = module.unwind.function_start(svma).unwrap();
        let name = module.symbol(svma).unwrap();
        assert_eq!(module.symbol(start), Some(name));
        assert!(start <= svma);
        // the symbol starts where the FDE does
        assert_ne!(module.symbol(start - 1), Some(name));
    }
    assert_eq!(frames.len(), 8);
}

#[test]
fn many_frames_stop_at_the_depth_limit() {
    // A stack of frame-pointer frames in anonymous code, deeper than MAX_FRAMES: each
    // frame is (saved rbp, return address into the same anonymous page).
    let n = MAX_FRAMES + 50;
    let base = 0x7000_0000_0000u64;
    let mut bytes = Vec::new();
    for i in 0..n as u64 {
        let next_bp = base + (i + 1) * 16;
        bytes.extend_from_slice(&next_bp.to_le_bytes());
        bytes.extend_from_slice(&0x1000_0040u64.to_le_bytes());
    }
    struct Anon;
    impl hotspot_unwind::AddressSpace for Anon {
        fn code_at(&mut self, avma: u64) -> hotspot_unwind::CodeAt<'_> {
            if (0x1000_0000..0x1000_1000).contains(&avma) {
                hotspot_unwind::CodeAt::Anonymous
            } else {
                hotspot_unwind::CodeAt::Unmapped
            }
        }
    }
    let copy = StackCopy {
        base,
        bytes: &bytes,
        end: CopyEnd::MappingEnd,
    };
    let regs = Regs {
        ip: 0x1000_0010,
        sp: base,
        bp: base,
        ..Regs::default()
    };
    let mut out = Vec::new();
    let end = Unwinder::new().unwind(regs, &copy, &mut Anon, &mut out);
    assert_eq!(end, End::DepthLimit);
    assert_eq!(out.len(), MAX_FRAMES);
}
