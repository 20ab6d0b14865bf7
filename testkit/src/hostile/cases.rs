//! Every hostile case, with what a correct reading must report: files that are not
//! captures, decompression bombs and lying lengths, counts at their limits and just over,
//! ids out of range, duplicates, extreme times, hostile names.

use hotspot_format::block::{Compressor, SYNC, encode_block};
use hotspot_format::header::FileHeader;
use hotspot_format::kind;
use hotspot_format::varint::{put_u32, put_u64};
use hotspot_format::{
    End, Frame, FrameAddr, InlinedFn, Process, Record, Sample, SessionHeader, SourceLoc, Stack,
    Symbol, Thread,
};

use super::bombs::{elf_bytes, fake_content_size, inline_bomb, many_deep_stacks};
use super::build::{
    PERIOD, PID, T0, TID, batch, block_with, concat, file, file_v, payload, program, raw_rec, rec,
    sample, samples, session, zstd,
};
use super::names::nasty_names;
use super::{Case, Expect};

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
