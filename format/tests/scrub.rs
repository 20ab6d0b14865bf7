//! Scrubbing and marks (1.6): a scrubbed rewrite holds none of the scrubbed strings in any
//! decompressed byte and everything else unchanged; marks survive a rewrite; a reader that
//! does not know kinds 23 and 24 skips them and reads the rest unchanged.

// Tests and tools: a failed unwrap is a test failure with a backtrace.
#![allow(clippy::unwrap_used)]

use hotspot_format::block::{BLOCK_HEADER_LEN, BlockHeader, Compressor, SYNC, encode_block};
use hotspot_format::codec::{decode_records, encode_raw, encode_record};
use hotspot_format::header::FileHeader;
use hotspot_format::rewrite::{Rewritten, scrubbed};
use hotspot_format::*;

const SECRET: &str = "topsecret";
const HOST: &str = "db-7.internal.example";
const PERSON: &str = "alice";

/// A capture holding a secret on command lines, the host name and a person's name in
/// paths, everywhere a string may be; with samples, a mark and (`finished`) an end.
fn crafted(finished: bool) -> (Vec<u8>, Vec<Sample>) {
    let session = SessionHeader {
        host: HOST.into(),
        kernel_release: "6.18.0".into(),
        arch: "x86_64".into(),
        cpus: 2,
        page_size: 4096,
        freq_hz: 499,
        command_line: vec![
            "hotspot".into(),
            "record".into(),
            "--".into(),
            format!("--password={SECRET}"),
        ],
        start_wall_ns: 1_700_000_000_000_000_000,
        start_mono_ns: 1_000,
        recorder_version: "0.1.0".into(),
        ..SessionHeader::default()
    };
    let mut w = Writer::new(Vec::new(), session).unwrap();
    let file = w.intern(&format!("/home/{PERSON}/src/main.rs"));
    let func = w.intern("main");
    w.push(Record::Process(Process {
        pid: 10,
        ppid: 1,
        name: "sh".into(),
        cmdline: vec![
            "/bin/sh".into(),
            "-c".into(),
            format!("app --password={SECRET}"),
        ],
        exe: "/bin/sh".into(),
        start_ns: 1_000,
    }))
    .unwrap();
    w.push(Record::Thread(Thread {
        tid: 10,
        pid: 10,
        name: "sh".into(),
        time_ns: 1_000,
    }))
    .unwrap();
    w.push(Record::Module(Module {
        id: 0,
        kind: ModuleKind::Elf,
        path: format!("/home/{PERSON}/bin/app"),
        build_id: vec![1, 2, 3],
    }))
    .unwrap();
    w.push(Record::Frame(Frame {
        id: 0,
        module: 0,
        addr: FrameAddr::FileOffset(0x1234),
    }))
    .unwrap();
    w.push(Record::Symbol(Symbol {
        frame: 0,
        function: func,
        loc: SourceLoc {
            file: Some(file),
            line: 3,
        },
        inlined: Vec::new(),
    }))
    .unwrap();
    w.push(Record::Stack(Stack {
        id: 0,
        frames: vec![0],
    }))
    .unwrap();
    let mut samples = Vec::new();
    for i in 0..3000u64 {
        let s = Sample {
            time_ns: 2_000 + i * 2_004_008,
            tid: 10,
            cpu: (i % 2) as u32,
            stack: 0,
        };
        w.push_sample(s).unwrap();
        samples.push(s);
        if i == 1500 {
            w.push(Record::Mark(Mark {
                time_ns: s.time_ns,
                text: format!("deploy from /home/{PERSON}/rel"),
            }))
            .unwrap();
        }
        if i % 1000 == 999 {
            w.flush_block().unwrap();
        }
    }
    let data = if finished {
        w.finish(5, 6_000_000_000, 0).unwrap()
    } else {
        w.flush_block().unwrap();
        w.get_ref().clone()
    };
    (data, samples)
}

/// Every block's decompressed payload, concatenated (what a scrub must leave nothing in).
fn decompressed(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = data[at..].windows(SYNC.len()).position(|w| w == SYNC) {
        let start = at + i;
        let header: &[u8; BLOCK_HEADER_LEN] =
            data[start..start + BLOCK_HEADER_LEN].try_into().unwrap();
        let h = BlockHeader::parse(header).unwrap();
        let payload = &data[start + BLOCK_HEADER_LEN..start + h.block_len()];
        out.extend(zstd::decode_all(payload).unwrap());
        at = start + h.block_len();
    }
    assert!(!out.is_empty(), "no block found");
    out
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

fn scrub(data: &[u8], what: Scrubbed) -> (Vec<u8>, Rewritten) {
    scrubbed(data, Vec::new(), what).unwrap()
}

/// The records `read_all` keeps, and the samples.
fn contents(data: &[u8]) -> (Vec<Record>, Vec<Sample>) {
    let (records, _) = read_all(data).unwrap();
    let mut samples = Vec::new();
    let mut kept = Vec::new();
    for r in records {
        match r {
            Record::Samples(b) => samples.extend(b.samples),
            Record::Index(_) => {}
            r => kept.push(r),
        }
    }
    (kept, samples)
}

#[test]
fn a_scrubbed_copy_holds_no_scrubbed_string_in_any_byte() {
    let (original, samples) = crafted(true);
    let raw = decompressed(&original);
    for s in [SECRET, HOST, PERSON] {
        assert!(contains(&raw, s), "the crafted capture lacks {s}");
    }
    let (copy, stats) = scrub(&original, Scrubbed::ALL);
    assert_eq!(
        stats,
        Rewritten {
            finished: true,
            corrupt_regions: 0,
            unknown_records: 0,
            scrubbed: Scrubbed::ALL,
        }
    );
    let raw = decompressed(&copy);
    for s in [SECRET, HOST, PERSON] {
        assert!(!contains(&raw, s), "the scrubbed copy still holds {s}");
    }
    let (records, got) = contents(&copy);
    assert_eq!(got, samples, "samples changed");
    let session = records
        .iter()
        .find_map(|r| match r {
            Record::Session(s) => Some(s),
            _ => None,
        })
        .unwrap();
    assert_eq!(session.host, scrub::HOST);
    assert_eq!(session.command_line, ["hotspot"]);
    assert_eq!(session.freq_hz, 499);
    assert!(records.contains(&Record::Scrubbed(Scrubbed::ALL)));
    let process = records
        .iter()
        .find_map(|r| match r {
            Record::Process(p) => Some(p),
            _ => None,
        })
        .unwrap();
    assert_eq!(process.cmdline, ["/bin/sh"]);
    assert!(records.contains(&Record::Module(Module {
        id: 0,
        kind: ModuleKind::Elf,
        path: "/home/USER/bin/app".into(),
        build_id: vec![1, 2, 3],
    })));
    let marks: Vec<&Mark> = records
        .iter()
        .filter_map(|r| match r {
            Record::Mark(m) => Some(m),
            _ => None,
        })
        .collect();
    assert_eq!(
        marks,
        [&Mark {
            time_ns: samples[1500].time_ns,
            text: "deploy from /home/USER/rel".into()
        }]
    );
    let end = records
        .iter()
        .find_map(|r| match r {
            Record::End(e) => Some(e),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        (end.end_wall_ns, end.end_mono_ns, end.samples),
        (5, 6_000_000_000, 3000)
    );
}

#[test]
fn what_is_kept_stays_byte_for_byte() {
    let (original, _) = crafted(true);
    let (orig, orig_samples) = contents(&original);
    // Nothing scrubbed: the records are the original's, plus the `Scrubbed` statement.
    let (copy, stats) = scrub(&original, Scrubbed::default());
    let (records, samples) = contents(&copy);
    assert_eq!(samples, orig_samples);
    assert_eq!(stats.scrubbed, Scrubbed::default());
    // The copy's blocks are its own (the rewrite fills them to the writer's target), so
    // `End.blocks` is the only other field allowed to differ.
    let any_blocks = |r: Record| match r {
        Record::End(e) => Record::End(End { blocks: 0, ..e }),
        r => r,
    };
    let without: Vec<Record> = records
        .into_iter()
        .filter(|r| !matches!(r, Record::Scrubbed(_)))
        .map(any_blocks)
        .collect();
    assert_eq!(
        without,
        orig.into_iter().map(any_blocks).collect::<Vec<_>>()
    );
    // Arguments kept: the secret stays, the person and the host go.
    let keep_args = Scrubbed {
        arguments: false,
        ..Scrubbed::ALL
    };
    let raw = decompressed(&scrub(&original, keep_args).0);
    assert!(contains(&raw, SECRET));
    assert!(!contains(&raw, PERSON) && !contains(&raw, HOST));
}

#[test]
fn a_cut_capture_stays_cut_and_scrubs_add_up() {
    let (original, samples) = crafted(false);
    let (copy, stats) = scrub(
        &original,
        Scrubbed {
            host: true,
            ..Scrubbed::default()
        },
    );
    assert!(!stats.finished);
    let (records, got) = contents(&copy);
    assert_eq!(got, samples);
    assert!(!records.iter().any(|r| matches!(r, Record::End(_))));
    // Scrubbed again for arguments: the copy says both were removed, once.
    let (again, stats) = scrub(
        &copy,
        Scrubbed {
            arguments: true,
            ..Scrubbed::default()
        },
    );
    let want = Scrubbed {
        arguments: true,
        host: true,
        user_paths: false,
    };
    assert_eq!(stats.scrubbed, want);
    let (records, _) = contents(&again);
    let said: Vec<&Record> = records
        .iter()
        .filter(|r| matches!(r, Record::Scrubbed(_)))
        .collect();
    assert_eq!(said, [&Record::Scrubbed(want)]);
}

/// A 1.3 reader knows neither kind: to it they are kinds without a decoder, framed like any
/// record. Renumbering them to kinds nobody knows is what it sees.
#[test]
fn a_reader_without_kinds_23_and_24_skips_them() {
    let mut scratch = Vec::new();
    let lost = Record::Lost(Lost {
        time_ns: 1,
        cpu: 0,
        count: 2,
    });
    let new = [
        Record::Mark(Mark {
            time_ns: 7,
            text: "deploy 4.2".into(),
        }),
        Record::Scrubbed(Scrubbed::ALL),
    ];
    let mut as_written = Vec::new();
    let mut as_unknown = Vec::new();
    for r in new.iter().chain([&lost]) {
        let mut one = Vec::new();
        encode_record(r, &mut one, &mut scratch).unwrap();
        as_written.extend_from_slice(&one);
        match r {
            Record::Lost(_) => as_unknown.extend_from_slice(&one),
            // The body is what follows the kind and length varints (each one byte here).
            _ => encode_raw(r.kind() + 1000, &one[2..], &mut as_unknown),
        }
    }
    let known = decode_records(&as_written).unwrap();
    assert_eq!(
        known.records,
        [new[0].clone(), new[1].clone(), lost.clone()]
    );
    assert!(known.unknown_kinds.is_empty());
    let old = decode_records(&as_unknown).unwrap();
    assert_eq!(old.records, [lost]);
    assert_eq!(old.unknown_kinds, [(1023, 1), (1024, 1)]);
    // And through a whole file, as a reader meets them.
    let mut c = Compressor::new(3).unwrap();
    let mut data = FileHeader::default().to_bytes().to_vec();
    encode_block(&mut c, 0, &as_unknown, &[], &mut Vec::new(), &mut data).unwrap();
    let events: Vec<Event> = Reader::new(&data).unwrap().collect();
    let [Event::Block(b)] = &events[..] else {
        panic!("{events:?}")
    };
    assert_eq!(b.unknown_kinds, [(1023, 1), (1024, 1)]);
}
