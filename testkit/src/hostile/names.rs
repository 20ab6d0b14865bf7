//! Names made to drive a terminal (escape sequences, controls, bidi overrides, markup), and
//! a capture whose every name is one of them.

use hotspot_format::{
    Frame, FrameAddr, InlinedFn, Module, ModuleKind, Process, Record, Sample, SourceLoc, Stack,
    Symbol, Thread, Writer,
};

use super::build::{PERIOD, PID, T0, TID, session};

/// Text that would drive a terminal if printed raw: ESC sequences (CSI, OSC title, OSC 8
/// link, OSC 52 clipboard), C0 and C1 controls, DEL, bidi overrides and isolates,
/// zero-width characters, line separators; and markup for the SVG and JSON outputs.
pub const NASTY: &str = "a\u{1b}[2J\u{1b}]0;pwned\u{7}\u{1b}]8;;http://evil/\u{1b}\\link\u{1b}]8;;\u{1b}\\\
    \u{1b}]52;c;cm0gLXJmIH4=\u{7}\u{7}\u{8}\r\n\t\u{0}\u{7f}\u{85}\u{9b}31m\u{9d}x\
    \u{202e}gnp.exe\u{202c}\u{2066}\u{2067}\u{2068}\u{2069}\u{200e}\u{200f}\u{61c}\
    \u{200b}\u{200c}\u{200d}\u{2060}\u{feff}\u{2028}\u{2029}<b>&amp;\"'z";

/// [`NASTY`] made unique per use, so that names do not merge.
pub fn nasty(tag: &str) -> String {
    format!("{tag}{NASTY}{tag}")
}

/// A capture, written by [`Writer`], whose every name is hostile: host, kernel, arch,
/// command line, recorder version, process name and command line, exe, thread name (and a
/// rename), module paths, function names, inlined function names, source files, kernel
/// symbols; one function name is 64 KiB (the format's maximum) long.
pub fn nasty_names() -> Vec<u8> {
    let mut s = session();
    s.host = nasty("host");
    s.kernel_release = nasty("kernel");
    s.arch = nasty("arch");
    s.command_line = vec![nasty("cmd"), nasty("arg")];
    s.recorder_version = nasty("ver");
    let mut w = Writer::new(Vec::new(), s).unwrap();
    let long = format!("{}{}", NASTY, "x".repeat(64 * 1024 - NASTY.len()));
    let mut recs = vec![
        Record::Process(Process {
            pid: PID,
            ppid: PID,
            name: nasty("comm"),
            cmdline: vec![nasty("argv0"), nasty("argv1")],
            exe: nasty("/opt/exe"),
            start_ns: T0,
        }),
        Record::Thread(Thread {
            tid: TID,
            pid: PID,
            name: nasty("thread"),
            time_ns: T0,
        }),
        Record::Thread(Thread {
            tid: TID + 1,
            pid: PID,
            name: nasty("renamed"),
            time_ns: T0 + 5,
        }),
        Record::Module(Module {
            id: 0,
            kind: ModuleKind::Elf,
            path: format!("/opt/{}", nasty("lib.so")),
            build_id: vec![0x1b; 20],
        }),
        Record::Module(Module {
            id: 1,
            kind: ModuleKind::Kernel,
            path: nasty("[kernel.kallsyms]"),
            build_id: Vec::new(),
        }),
        Record::Module(Module {
            id: 2,
            kind: ModuleKind::Elf,
            path: nasty("/usr/lib/unsymbolised.so"),
            build_id: Vec::new(),
        }),
    ];
    let strings: Vec<String> = vec![
        nasty("fn_main"),
        nasty("fn_leaf"),
        nasty("inlined"),
        nasty("/src/file.c"),
        nasty("ksym"),
        long,
        // A source path that links (under /src, no empty component), yet hostile.
        "/src/inl\u{1b}]8;;x\u{7}\u{202e}<b>\u{9b}.h".to_string(),
    ];
    for (id, text) in strings.into_iter().enumerate() {
        recs.push(Record::String {
            id: id as u32,
            text,
        });
    }
    // Frames: 0 main, 1 leaf (with an inlined function), 2 kernel, 3 the 64 KiB name,
    // 4 in a module without symbols.
    for id in 0..5u32 {
        recs.push(Record::Frame(Frame {
            id,
            module: match id {
                2 => 1,
                4 => 2,
                _ => 0,
            },
            addr: if id == 2 {
                FrameAddr::KernelSymbol {
                    symbol: 4,
                    offset: 0x10,
                }
            } else {
                FrameAddr::FileOffset(0x100 * u64::from(id))
            },
        }));
    }
    for (frame, function, inlined) in [(0u32, 0u32, false), (1, 1, true), (3, 5, false)] {
        recs.push(Record::Symbol(Symbol {
            frame,
            function,
            loc: SourceLoc {
                file: Some(3),
                line: 7,
            },
            inlined: if inlined {
                vec![InlinedFn {
                    function: 2,
                    loc: SourceLoc {
                        file: Some(6),
                        line: 3,
                    },
                }]
            } else {
                Vec::new()
            },
        }));
    }
    recs.extend([
        Record::Stack(Stack {
            id: 0,
            frames: vec![1, 0],
        }),
        Record::Stack(Stack {
            id: 1,
            frames: vec![2, 1, 0],
        }),
        Record::Stack(Stack {
            id: 2,
            frames: vec![3, 0],
        }),
        Record::Stack(Stack {
            id: 3,
            frames: vec![4, 0],
        }),
    ]);
    for r in recs {
        w.push(r).unwrap();
    }
    let mut t = T0 + 10;
    for i in 0..400u32 {
        w.push_sample(Sample {
            time_ns: t,
            tid: if i % 3 == 0 { TID + 1 } else { TID },
            cpu: i % 2,
            stack: i % 4,
        })
        .unwrap();
        t += PERIOD;
        if i == 200 {
            w.flush_block().unwrap();
        }
    }
    w.finish(1_700_000_010_000_000_000, t, 0).unwrap()
}
