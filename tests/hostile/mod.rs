//! Hostile captures, built with the format crate so that they are valid where they need
//! to be (checksums, compression) and reach deep into the readers: names made to drive a
//! terminal, ids out of range, self-references, duplicates, extreme times, limits at their
//! maxima and just over, decompression bombs, newer versions, and files that are not
//! captures at all.
//!
//! Shared by `tests/hostile_e2e.rs` (the real binary) and `replay/tests/hostile_views.rs`
//! (the views in-process), with `#[path]`; depends only on hotspot-format.

#![allow(dead_code, clippy::unwrap_used)]

use hotspot_format::block::{BlockHeader, Compressor, SYNC, encode_block};
use hotspot_format::codec::{encode_raw, encode_record};
use hotspot_format::header::FileHeader;
use hotspot_format::kind;
use hotspot_format::varint::{put_u32, put_u64};
use hotspot_format::{
    End, Frame, FrameAddr, InlinedFn, Module, ModuleKind, Process, Record, Sample, SampleBatch,
    SessionHeader, SourceLoc, Stack, Symbol, Thread, Writer,
};

/// A hostile capture: a name for messages and the file's bytes.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    pub bytes: Vec<u8>,
    /// What a correct reading must report, when the case has a definite answer.
    pub expect: Expect,
}

/// What a case must give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// Opens; reports exactly this many samples.
    Samples(u64),
    /// Opens (a partial or odd capture); the sample count is not asserted.
    Opens,
    /// Refused with a one-line error holding this text.
    Error(&'static str),
    /// Either is acceptable (damage that may or may not leave a readable header).
    Any,
}

impl Case {
    pub fn new(name: impl Into<String>, bytes: Vec<u8>, expect: Expect) -> Case {
        Case {
            name: name.into(),
            bytes,
            expect,
        }
    }
}

/// splitmix64: seeded, so every run builds the same cases.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// One record's bytes (kind, length, body).
pub fn rec(r: &Record) -> Vec<u8> {
    let mut out = Vec::new();
    encode_record(r, &mut out, &mut Vec::new()).unwrap();
    out
}

/// A record of any kind with any body.
pub fn raw_rec(kind: u32, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_raw(kind, body, &mut out);
    out
}

/// A file: the header of version `major.minor`, then one valid block per payload.
pub fn file_v(major: u16, minor: u16, payloads: &[Vec<u8>]) -> Vec<u8> {
    let mut out = FileHeader::default().to_bytes().to_vec();
    out[8..10].copy_from_slice(&major.to_le_bytes());
    out[10..12].copy_from_slice(&minor.to_le_bytes());
    let mut c = Compressor::new(3).unwrap();
    let mut scratch = Vec::new();
    for (seq, p) in payloads.iter().enumerate() {
        encode_block(&mut c, seq as u64, p, &[], &mut scratch, &mut out).unwrap();
    }
    out
}

/// A version 1.0 file of valid blocks holding `payloads` (decompressed).
pub fn file(payloads: &[Vec<u8>]) -> Vec<u8> {
    file_v(1, 0, payloads)
}

/// A block whose header (checksummed) declares the given lengths, followed by `payload`.
pub fn block_with(seq: u64, payload: &[u8], payload_len: u32, raw_len: u32) -> Vec<u8> {
    let h = BlockHeader {
        seq,
        payload_len,
        raw_len,
        payload_crc: crc32c(payload),
    };
    let mut out = h.to_bytes().to_vec();
    out.extend_from_slice(payload);
    out
}

/// CRC-32C (Castagnoli), bitwise.
pub fn crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x82F6_3B78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// `raw` as one zstd frame at `level`.
pub fn zstd(raw: &[u8], level: i32) -> Vec<u8> {
    let mut c = Compressor::new(level).unwrap();
    let mut out = Vec::new();
    c.compress(raw, &[], &mut out).unwrap();
    out
}

pub fn concat(parts: &[Vec<u8>]) -> Vec<u8> {
    parts.concat()
}

pub const PID: u32 = 4242;
pub const TID: u32 = 4243;
/// Monotonic start of the sessions built here.
pub const T0: u64 = 5_000_000_000_000;
pub const PERIOD: u64 = 2_002_002;

pub fn session() -> SessionHeader {
    SessionHeader {
        host: "buildhost".into(),
        kernel_release: "6.1.0".into(),
        arch: "x86_64".into(),
        cpus: 4,
        page_size: 4096,
        freq_hz: 499,
        targets: vec![PID],
        all_processes: false,
        command_line: vec!["hotspot".into(), "record".into(), PID.to_string()],
        start_wall_ns: 1_700_000_000_000_000_000,
        start_mono_ns: T0,
        recorder_version: "0.1.0".into(),
    }
}

/// The definitions of a small program: process, thread, one module, `frames` frames each
/// with a symbol `fn_<i>`, and stack `i` = frames `i, i-1, …, 0` (leaf first) for
/// `i < frames`. String ids: 0 the file name, `1 + i` the function of frame `i`.
pub fn program(frames: u32) -> Vec<Record> {
    let mut out = vec![
        Record::Process(Process {
            pid: PID,
            ppid: 1,
            name: "victim".into(),
            cmdline: vec!["./victim".into(), "--fast".into()],
            exe: "/opt/victim".into(),
            start_ns: T0,
        }),
        Record::Thread(Thread {
            tid: TID,
            pid: PID,
            name: "worker".into(),
            time_ns: T0,
        }),
        Record::Module(Module {
            id: 0,
            kind: ModuleKind::Elf,
            path: "/opt/victim".into(),
            build_id: vec![0xab; 20],
        }),
        Record::String {
            id: 0,
            text: "victim.c".into(),
        },
    ];
    for i in 0..frames {
        out.push(Record::String {
            id: 1 + i,
            text: format!("fn_{i}"),
        });
        out.push(Record::Frame(Frame {
            id: i,
            module: 0,
            addr: FrameAddr::FileOffset(0x1000 + u64::from(i) * 16),
        }));
        out.push(Record::Symbol(Symbol {
            frame: i,
            function: 1 + i,
            loc: SourceLoc {
                file: Some(0),
                line: 10 + i,
            },
            inlined: Vec::new(),
        }));
        out.push(Record::Stack(Stack {
            id: i,
            frames: (0..=i).rev().collect(),
        }));
    }
    out
}

/// `n` samples of thread [`TID`] from `start`, one period apart, cycling over `stacks`.
pub fn samples(n: u64, start: u64, stacks: &[u32]) -> Vec<Sample> {
    (0..n)
        .map(|i| Sample {
            time_ns: start + i * PERIOD,
            tid: TID,
            cpu: (i % 2) as u32,
            stack: stacks[i as usize % stacks.len()],
        })
        .collect()
}

pub fn batch(samples: Vec<Sample>) -> Vec<u8> {
    rec(&Record::Samples(SampleBatch { samples }))
}

/// A payload: the records, then optionally a batch of samples.
pub fn payload(records: &[Record], samples: Vec<Sample>) -> Vec<u8> {
    let mut out: Vec<u8> = records.iter().flat_map(rec).collect();
    if !samples.is_empty() {
        out.extend(batch(samples));
    }
    out
}

/// A well-formed capture written by [`Writer`]: `blocks` blocks of `per_block` samples
/// each, finished cleanly. Returns the bytes and the file offset where each block ends
/// (with the samples written up to there).
pub fn written(blocks: u64, per_block: u64) -> (Vec<u8>, Vec<(u64, u64)>) {
    let mut w = Writer::new(Vec::new(), session()).unwrap();
    for r in program(4) {
        w.push(r).unwrap();
    }
    let mut ends = Vec::new();
    let mut t = T0 + 1_000;
    for b in 0..blocks {
        for s in samples(per_block, t, &[0, 1, 2, 3]) {
            w.push_sample(s).unwrap();
        }
        t += per_block * PERIOD;
        w.flush_block().unwrap();
        ends.push((w.bytes_written(), (b + 1) * per_block));
    }
    let bytes = w.finish(1_700_000_010_000_000_000, t, 0).unwrap();
    (bytes, ends)
}

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

/// Every hostile case (`bytes` are the file's contents).
pub fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    let prog = program(4);
    let good = |n: u64| payload(&prog, samples(n, T0 + 1_000, &[0, 1, 2, 3]));

    // Not captures.
    v.push(Case::new(
        "empty",
        Vec::new(),
        Expect::Error("not a hotspot capture"),
    ));
    v.push(Case::new(
        "text",
        b"hello, this is a text file\nnot a capture\n".to_vec(),
        Expect::Error("not a hotspot capture"),
    ));
    v.push(Case::new(
        "elf",
        elf_bytes(),
        Expect::Error("not a hotspot capture"),
    ));
    v.push(Case::new(
        "zeros",
        vec![0u8; 4096],
        Expect::Error("not a hotspot capture"),
    ));
    let header = FileHeader::default().to_bytes().to_vec();
    v.push(Case::new(
        "header_cut",
        header[..11].to_vec(),
        Expect::Error("cut short"),
    ));
    v.push(Case::new("header_only", header.clone(), Expect::Samples(0)));
    v.push(Case::new(
        "newer_major",
        file_v(2, 0, &[good(10)]),
        Expect::Error("newer"),
    ));
    v.push(Case::new(
        "major_u16_max",
        file_v(u16::MAX, u16::MAX, &[good(10)]),
        Expect::Error("newer"),
    ));
    v.push(Case::new(
        "major_zero",
        file_v(0, 0, &[good(10)]),
        Expect::Error("not a hotspot capture"),
    ));
    v.push(Case::new(
        "newer_minor",
        file_v(1, 9, &[good(10)]),
        Expect::Samples(10),
    ));
    let mut flags = file(&[good(10)]);
    flags[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    v.push(Case::new("unknown_flags", flags, Expect::Samples(10)));
    let mut sync_only = header.clone();
    sync_only.extend_from_slice(&SYNC);
    v.push(Case::new("sync_marker_only", sync_only, Expect::Samples(0)));

    // Decompression bombs and lying lengths.
    let zeros = vec![0u8; 64 << 20];
    let bomb = zstd(&zeros, 1);
    // Declares 1 KiB but the frame holds 64 MiB.
    v.push(Case::new(
        "zstd_bomb_small_raw_len",
        concat(&[
            header.clone(),
            block_with(0, &bomb, bomb.len() as u32, 1024),
        ]),
        Expect::Samples(0),
    ));
    // A frame of 64 MiB + 1 behind a header declaring the maximum.
    let over = zstd(&vec![0u8; (64 << 20) + 1], 1);
    v.push(Case::new(
        "zstd_bomb_over_limit",
        concat(&[
            header.clone(),
            block_with(0, &over, over.len() as u32, 64 << 20),
        ]),
        Expect::Samples(0),
    ));
    // 64 MiB of records of an unknown kind 0 with empty bodies: 32 Mi records.
    v.push(Case::new(
        "zstd_bomb_max_raw_unknown_records",
        concat(&[
            file(&[good(5)]),
            block_with(1, &bomb, bomb.len() as u32, 64 << 20),
        ]),
        Expect::Samples(5),
    ));
    // Declared lengths at their maxima, with a valid header checksum.
    for (name, plen, rlen) in [
        ("payload_len_u32_max", u32::MAX, 100),
        ("raw_len_u32_max", 100, u32::MAX),
        ("payload_len_over_limit", (16 << 20) + 1, 100),
        ("payload_len_at_limit_missing", 16 << 20, 100),
    ] {
        v.push(Case::new(
            name,
            concat(&[file(&[good(7)]), block_with(1, &[0u8; 100], plen, rlen)]),
            Expect::Samples(7),
        ));
    }
    // A frame whose header records a content size of 2^60.
    let mut fake = zstd(b"abc", 3);
    fake_content_size(&mut fake);
    v.push(Case::new(
        "zstd_content_size_huge",
        concat(&[file(&[good(3)]), block_with(1, &fake, fake.len() as u32, 3)]),
        Expect::Samples(3),
    ));
    // Sequence numbers at their maximum, and out of order.
    let mut blocks = file(&[good(4)]);
    let mut c = Compressor::new(3).unwrap();
    encode_block(
        &mut c,
        u64::MAX,
        &good(4),
        &[],
        &mut Vec::new(),
        &mut blocks,
    )
    .unwrap();
    encode_block(&mut c, 0, &good(4), &[], &mut Vec::new(), &mut blocks).unwrap();
    v.push(Case::new(
        "seq_max_and_backwards",
        blocks,
        Expect::Samples(12),
    ));

    // Counts and lengths at their maxima (valid) and just over (a corrupt block).
    let big = samples(1_000_000, T0, &[0, 1, 2, 3]);
    v.push(Case::new(
        "batch_of_a_million",
        file(&[payload(&prog, big)]),
        Expect::Samples(1_000_000),
    ));
    let mut two = payload(&prog, samples(600_000, T0, &[0]));
    two.extend(batch(samples(500_000, T0, &[1])));
    v.push(Case::new(
        "block_over_a_million_samples",
        file(&[good(9), two]),
        Expect::Samples(9),
    ));
    let mut count_lie = Vec::new();
    put_u32(&mut count_lie, 1_000_000);
    put_u64(&mut count_lie, T0);
    count_lie.extend([0, 0, 0, 0, 0, 0]);
    v.push(Case::new(
        "batch_count_without_columns",
        file(&[
            good(2),
            concat(&[
                prog.iter().flat_map(rec).collect(),
                raw_rec(kind::SAMPLES, &count_lie),
            ]),
        ]),
        Expect::Samples(2),
    ));
    let mut many: Vec<u8> = prog.iter().flat_map(rec).collect();
    for i in 0..262_144u32 - prog.len() as u32 {
        many.extend(rec(&Record::String {
            id: 1000 + i,
            text: String::new(),
        }));
    }
    v.push(Case::new(
        "records_at_block_limit",
        file(&[many.clone()]),
        Expect::Samples(0),
    ));
    many.extend(rec(&Record::String {
        id: 999,
        text: String::new(),
    }));
    v.push(Case::new(
        "records_over_block_limit",
        file(&[good(6), many]),
        Expect::Samples(6),
    ));
    let deep = Record::Stack(Stack {
        id: 100,
        frames: vec![3; 1024],
    });
    v.push(Case::new(
        "stack_1024_frames_recursive",
        file(&[payload(
            &[prog.clone(), vec![deep]].concat(),
            samples(50, T0, &[100]),
        )]),
        Expect::Samples(50),
    ));
    // The format's limit (2048 since 1.1) plus one.
    let mut too_deep = Vec::new();
    put_u32(&mut too_deep, 101);
    put_u64(&mut too_deep, 2049);
    too_deep.extend(vec![1u8; 2049]);
    v.push(Case::new(
        "stack_2049_frames",
        file(&[good(8), raw_rec(kind::STACK, &too_deep)]),
        Expect::Samples(8),
    ));
    let max_str = "\u{1b}".repeat(64 * 1024);
    v.push(Case::new(
        "string_64k_of_esc",
        file(&[payload(
            &[
                vec![Record::String {
                    id: 1,
                    text: max_str.clone(),
                }],
                prog.clone(),
            ]
            .concat(),
            samples(5, T0, &[0]),
        )]),
        Expect::Samples(5),
    ));
    let mut long_str = Vec::new();
    put_u32(&mut long_str, 77);
    put_u64(&mut long_str, 100_000);
    long_str.extend(vec![b'A'; 100_000]);
    v.push(Case::new(
        "string_100k",
        file(&[good(4), raw_rec(kind::STRING, &long_str)]),
        Expect::Samples(4),
    ));
    // Names that are not UTF-8 (the format's strings must be): the block is corrupt.
    let mut bad_utf8 = Vec::new();
    put_u32(&mut bad_utf8, 1);
    put_u64(&mut bad_utf8, 6);
    bad_utf8.extend(b"a\xff\xfe\xc0\x80b");
    let mut bad_thread = Vec::new();
    put_u32(&mut bad_thread, TID);
    put_u32(&mut bad_thread, PID);
    put_u64(&mut bad_thread, 3);
    bad_thread.extend(b"\x1b\xff]");
    put_u64(&mut bad_thread, T0);
    v.push(Case::new(
        "names_not_utf8",
        file(&[
            good(4),
            concat(&[raw_rec(kind::STRING, &bad_utf8), good(5)]),
            concat(&[raw_rec(kind::THREAD, &bad_thread), good(6)]),
        ]),
        Expect::Samples(4),
    ));
    // Lengths claiming the most a varint can hold.
    let mut huge_len = Vec::new();
    put_u32(&mut huge_len, kind::STRING);
    put_u64(&mut huge_len, u64::MAX);
    v.push(Case::new(
        "record_length_u64_max",
        file(&[good(3), huge_len]),
        Expect::Samples(3),
    ));
    let mut vec_claim = Vec::new();
    put_u32(&mut vec_claim, 5);
    put_u64(&mut vec_claim, u64::MAX);
    v.push(Case::new(
        "stack_frame_count_u64_max",
        file(&[good(3), raw_rec(kind::STACK, &vec_claim)]),
        Expect::Samples(3),
    ));
    let mut unknown = Vec::new();
    for k in 0..1025u32 {
        unknown.extend(raw_rec(1000 + k, &[]));
    }
    v.push(Case::new(
        "unknown_kinds_over_limit",
        file(&[good(2), unknown]),
        Expect::Samples(2),
    ));
    v.push(Case::new(
        "unknown_kind_u32_max",
        file(&[concat(&[good(2), raw_rec(u32::MAX, &[1, 2, 3])])]),
        Expect::Samples(2),
    ));
    // A symbol with a million inlined functions, each 64 KiB long, on every frame of a
    // 1024-frame stack: expanding it naively is 64 GiB of names.
    v.push(Case::new(
        "inline_expansion_bomb",
        inline_bomb(),
        Expect::Opens,
    ));
    // Thousands of distinct deep stacks: memory must not be a multiple of what they expand
    // to with every name copied.
    v.push(Case::new(
        "many_deep_stacks",
        many_deep_stacks(32),
        Expect::Samples(32),
    ));

    // Ids out of range and self-references.
    let mut refs = prog.clone();
    refs.extend([
        // A stack of frames nobody defined, and frames of modules and strings nobody defined.
        Record::Stack(Stack {
            id: 10,
            frames: vec![u32::MAX, 77, 3],
        }),
        Record::Frame(Frame {
            id: 77,
            module: u32::MAX,
            addr: FrameAddr::KernelSymbol {
                symbol: u32::MAX,
                offset: u64::MAX,
            },
        }),
        Record::Symbol(Symbol {
            frame: 3,
            function: u32::MAX,
            loc: SourceLoc {
                file: Some(u32::MAX),
                line: u32::MAX,
            },
            inlined: vec![InlinedFn {
                function: u32::MAX - 1,
                loc: SourceLoc {
                    file: None,
                    line: 0,
                },
            }],
        }),
        // A symbol for a frame that does not exist.
        Record::Symbol(Symbol {
            frame: 999_999,
            function: 1,
            loc: SourceLoc::default(),
            inlined: Vec::new(),
        }),
        Record::Stack(Stack {
            id: u32::MAX,
            frames: vec![0],
        }),
        Record::Stack(Stack {
            id: 11,
            frames: Vec::new(),
        }),
        // A thread of a process nobody defined; a process that is its own parent.
        Record::Thread(Thread {
            tid: u32::MAX,
            pid: u32::MAX,
            name: "orphan".into(),
            time_ns: u64::MAX,
        }),
        Record::Process(Process {
            pid: 7,
            ppid: 7,
            ..Process::default()
        }),
    ]);
    let odd = vec![
        sample(T0, TID, 10),
        sample(T0 + 1, TID, 11),
        sample(T0 + 2, TID, u32::MAX),
        sample(T0 + 3, TID, 12345),
        sample(T0 + 4, u32::MAX, 0),
        sample(T0 + 5, 0, 1),
    ];
    v.push(Case::new(
        "ids_out_of_range",
        file(&[payload(&refs, odd)]),
        Expect::Samples(6),
    ));
    // A symbol whose inlined functions are itself, many times over.
    let selfref = vec![Record::Symbol(Symbol {
        frame: 0,
        function: 1,
        loc: SourceLoc::default(),
        inlined: vec![
            InlinedFn {
                function: 1,
                loc: SourceLoc::default(),
            };
            64
        ],
    })];
    v.push(Case::new(
        "symbol_inlines_itself",
        file(&[payload(
            &[selfref, prog.clone()].concat(),
            samples(20, T0, &[0, 1]),
        )]),
        Expect::Samples(20),
    ));
    // Duplicate definitions: the first wins, whatever the later ones say.
    let dups = vec![
        Record::String {
            id: 1,
            text: "first_name".into(),
        },
        Record::String {
            id: 1,
            text: "second_name".into(),
        },
        Record::Stack(Stack {
            id: 0,
            frames: vec![0],
        }),
        Record::Stack(Stack {
            id: 0,
            frames: vec![3, 2, 1, 0],
        }),
        Record::Session(SessionHeader {
            freq_hz: 1,
            ..session()
        }),
        Record::End(End::default()),
        Record::End(End {
            samples: u64::MAX,
            lost: u64::MAX,
            blocks: u64::MAX,
            end_wall_ns: u64::MAX,
            end_mono_ns: u64::MAX,
        }),
    ];
    v.push(Case::new(
        "duplicate_definitions",
        file(&[
            payload(
                &[vec![Record::Session(session())], dups, prog.clone()].concat(),
                samples(30, T0, &[0]),
            ),
            payload(&prog, samples(30, T0 + 100 * PERIOD, &[0])),
        ]),
        Expect::Samples(60),
    ));

    // Times: backwards, at the extremes, sessions and ends that contradict the samples.
    let mut extreme = session();
    extreme.start_mono_ns = u64::MAX;
    extreme.start_wall_ns = u64::MAX;
    extreme.freq_hz = u32::MAX;
    extreme.cpus = u32::MAX;
    let times = vec![
        sample(u64::MAX, TID, 0),
        sample(0, TID, 1),
        sample(u64::MAX - 1, TID, 2),
        sample(1, TID, 3),
        sample(u64::MAX / 2, TID, 0),
    ];
    v.push(Case::new(
        "times_extreme",
        file(&[
            payload(
                &[vec![Record::Session(extreme)], prog.clone()].concat(),
                times,
            ),
            rec(&Record::End(End {
                samples: 0,
                lost: u64::MAX,
                blocks: 0,
                end_wall_ns: 0,
                end_mono_ns: 0,
            })),
        ]),
        Expect::Samples(5),
    ));
    // Every sample at the last instant the clock can name, without a session to place
    // the start; and every sample at 0.
    for (name, t) in [("times_all_at_max", u64::MAX), ("times_all_at_zero", 0)] {
        v.push(Case::new(
            name,
            file(&[payload(
                &prog,
                (0..50).map(|i| sample(t, TID + i % 2, i % 4)).collect(),
            )]),
            Expect::Samples(50),
        ));
    }
    let mut zero = session();
    zero.start_mono_ns = 0;
    zero.start_wall_ns = 0;
    zero.freq_hz = 0;
    let backwards: Vec<Sample> = (0..200u64)
        .map(|i| sample(T0 + (200 - i) * PERIOD, TID, (i % 4) as u32))
        .collect();
    v.push(Case::new(
        "times_backwards_zero_session",
        file(&[payload(
            &[vec![Record::Session(zero)], prog.clone()].concat(),
            backwards,
        )]),
        Expect::Samples(200),
    ));
    let lost = (0..3)
        .map(|i| {
            rec(&Record::Lost(hotspot_format::Lost {
                time_ns: u64::MAX - i,
                cpu: u32::MAX,
                count: u64::MAX,
            }))
        })
        .collect::<Vec<_>>()
        .concat();
    v.push(Case::new(
        "lost_counts_overflow",
        file(&[concat(&[good(5), lost])]),
        Expect::Samples(5),
    ));
    v.push(Case::new(
        "nasty_names",
        nasty_names(),
        Expect::Samples(400),
    ));
    v
}

fn sample(time_ns: u64, tid: u32, stack: u32) -> Sample {
    Sample {
        time_ns,
        tid,
        cpu: 0,
        stack,
    }
}

/// The first 64 KiB of an ELF executable (the test binary itself).
pub fn elf_bytes() -> Vec<u8> {
    let exe = std::env::current_exe().unwrap();
    let mut b = std::fs::read(exe).unwrap();
    b.truncate(64 << 10);
    assert_eq!(&b[..4], b"\x7fELF");
    b
}

/// Rewrites a zstd frame's header to record a content size of 2^60 (the frame itself is
/// left as it was, so decoding it fails or stops short).
fn fake_content_size(frame: &mut Vec<u8>) {
    // Magic (4), frame header descriptor: set the content-size flag to 3 (8 bytes).
    let fhd = frame[4];
    let single = fhd & 0x20 != 0;
    let fcs_flag = fhd >> 6;
    let fcs_len = match fcs_flag {
        0 => usize::from(single),
        1 => 2,
        2 => 4,
        _ => 8,
    };
    let did_len = match fhd & 3 {
        0 => 0,
        1 => 1,
        2 => 2,
        _ => 4,
    };
    let wd_len = usize::from(!single);
    let at = 5 + wd_len + did_len;
    frame.splice(at..at + fcs_len, (1u64 << 60).to_le_bytes());
    frame[4] = (fhd & 0x3f) | 0xc0;
}

/// See the `inline_expansion_bomb` case.
fn inline_bomb() -> Vec<u8> {
    let name = "N".repeat(64 * 1024);
    let mut recs = program(1);
    recs.push(Record::String {
        id: 500,
        text: name,
    });
    let per_block = 1_000_000;
    recs.push(Record::Symbol(Symbol {
        frame: 900,
        function: 500,
        loc: SourceLoc {
            file: Some(500),
            line: 1,
        },
        inlined: vec![
            InlinedFn {
                function: 500,
                loc: SourceLoc {
                    file: Some(500),
                    line: 1,
                },
            };
            per_block
        ],
    }));
    recs.push(Record::Frame(Frame {
        id: 900,
        module: 0,
        addr: FrameAddr::FileOffset(0),
    }));
    for id in 0..16 {
        recs.push(Record::Stack(Stack {
            id: 900 + id,
            frames: vec![900; 1024 - id as usize],
        }));
    }
    let s: Vec<u32> = (900..916).collect();
    file(&[payload(&recs, samples(64, T0, &s))])
}

/// `n` distinct stacks of 1024 frames over 1024 frames whose functions have 4 KiB names,
/// each sampled once.
pub fn many_deep_stacks(n: u32) -> Vec<u8> {
    let mut recs = program(1);
    for i in 0..1024u32 {
        recs.extend(named_frame(i, format!("{i:04}{}", "f".repeat(4092)), true));
    }
    let mut payloads = vec![payload(&recs, Vec::new())];
    let mut stacks = Vec::new();
    for s in 0..n {
        // Stack s: the frames rotated by s, so every stack differs from the root down.
        let frames: Vec<u32> = (0..1024).map(|i| 2000 + (i + s) % 1024).collect();
        stacks.push(Record::Stack(Stack {
            id: 3000 + s,
            frames,
        }));
        if stacks.len() == 4096 {
            payloads.push(payload(&std::mem::take(&mut stacks), Vec::new()));
        }
    }
    let ids: Vec<u32> = (3000..3000 + n).collect();
    payloads.push(payload(&stacks, samples(u64::from(n), T0, &ids)));
    file(&payloads)
}

/// `n` distinct stacks of 1024 frames that share their 1023 outermost frames, each ending
/// in a leaf of its own, over functions with 1 KiB names (the longest a capture keeps),
/// each stack sampled once. Folded text repeats the shared frames on every line; the call
/// tree holds them once.
pub fn shared_prefix_stacks(n: u32) -> Vec<u8> {
    let mut recs = program(1);
    for i in 0..1023 + n {
        recs.extend(named_frame(i, format!("{i:06}{}", "g".repeat(1018)), false));
    }
    let mut payloads = vec![payload(&recs, Vec::new())];
    let stacks: Vec<Record> = (0..n)
        .map(|s| {
            // Leaf first.
            let mut frames = vec![2000 + 1023 + s];
            frames.extend((0..1023).rev().map(|i| 2000 + i));
            Record::Stack(Stack {
                id: 3000 + s,
                frames,
            })
        })
        .collect();
    let ids: Vec<u32> = (3000..3000 + n).collect();
    payloads.push(payload(&stacks, samples(u64::from(n), T0, &ids)));
    file(&payloads)
}

/// Frame `2000 + i` (module 0, file offset `i`) named `text` (string `2000 + i`), with
/// that string as its source file too when `file`.
fn named_frame(i: u32, text: String, file: bool) -> [Record; 3] {
    [
        Record::String { id: 2000 + i, text },
        Record::Frame(Frame {
            id: 2000 + i,
            module: 0,
            addr: FrameAddr::FileOffset(u64::from(i)),
        }),
        Record::Symbol(Symbol {
            frame: 2000 + i,
            function: 2000 + i,
            loc: SourceLoc {
                file: file.then_some(2000 + i),
                line: if file { i } else { 0 },
            },
            inlined: Vec::new(),
        }),
    ]
}
