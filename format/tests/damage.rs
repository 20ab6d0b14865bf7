//! Crash and damage semantics: torn tails, flipped bytes, lost blocks, hostile headers.

// Tests and tools: a failed unwrap is a test failure with a backtrace.
#![allow(clippy::unwrap_used)]

mod common;

use common::synthetic::Rng;
use hotspot_format::block::{BLOCK_HEADER_LEN, BlockHeader, Compressor, encode_block};
use hotspot_format::codec::{encode_raw, encode_record};
use hotspot_format::header::{FileHeader, HEADER_LEN};
use hotspot_format::limits::MAX_RAW_BYTES;
use hotspot_format::*;

#[test]
fn truncation_at_every_offset() {
    let (data, _) = common::progressive_capture(4, 40);
    let blocks = common::blocks_with_ranges(&data);
    assert!(blocks.len() >= 5, "several blocks");
    for cut in 0..=data.len() {
        let part = &data[..cut];
        if cut < HEADER_LEN {
            match Reader::new(part) {
                Err(FormatError::NotACapture { .. }) => assert_eq!(cut, 0),
                Err(FormatError::TruncatedHeader { len }) => assert_eq!(len, cut),
                other => panic!("cut {cut}: {other:?}"),
            }
            continue;
        }
        let events: Vec<Event> = Reader::new(part).unwrap().collect();
        let complete: Vec<&Block> = blocks
            .iter()
            .filter(|(_, r)| r.end <= cut)
            .map(|(b, _)| b)
            .collect();
        let mut expected: Vec<Event> = complete.iter().map(|&b| Event::Block(b.clone())).collect();
        if let Some((_, torn)) = blocks.iter().find(|(_, r)| r.start < cut && cut < r.end) {
            expected.push(Event::Truncated {
                offset: torn.start as u64,
                dropped_bytes: (cut - torn.start) as u64,
            });
        }
        assert_eq!(events, expected, "cut at {cut}");
    }
}

#[test]
fn flipped_bytes_are_reported_and_later_blocks_still_read() {
    let (data, _) = common::progressive_capture(6, 30);
    let blocks = common::blocks_with_ranges(&data);
    let mut rng = Rng(42);
    for iteration in 0..1500 {
        let mut bad = data.clone();
        let flips = 1 + rng.below(4) as usize;
        let mut hit = Vec::new();
        for _ in 0..flips {
            let at = HEADER_LEN + rng.below((data.len() - HEADER_LEN) as u64) as usize;
            bad[at] ^= 1 + rng.below(255) as u8;
            hit.push(at);
        }
        let events: Vec<Event> = Reader::new(&bad).unwrap().collect();
        assert!(events.len() <= blocks.len() * 2, "bounded event count");
        let damaged = |r: &std::ops::Range<usize>| hit.iter().any(|h| r.contains(h));
        let want_blocks: Vec<&Block> = blocks
            .iter()
            .filter(|(_, r)| !damaged(r))
            .map(|(b, _)| b)
            .collect();
        let got_blocks: Vec<&Block> = events
            .iter()
            .filter_map(|e| match e {
                Event::Block(b) => Some(b),
                _ => None,
            })
            .collect();
        assert_eq!(
            got_blocks, want_blocks,
            "iteration {iteration}, flips at {hit:?}"
        );
        // The skipped regions are exactly the damaged blocks.
        let mut skipped = vec![false; data.len()];
        for e in &events {
            match e {
                Event::Corrupt {
                    offset,
                    skipped_bytes,
                    ..
                } => {
                    for b in &mut skipped[*offset as usize..(*offset + *skipped_bytes) as usize] {
                        *b = true;
                    }
                }
                Event::Truncated { .. } => panic!("iteration {iteration}: no truncation here"),
                Event::Block(_) => {}
            }
        }
        for (_, r) in &blocks {
            assert!(
                skipped[r.clone()].iter().all(|&s| s == damaged(r)),
                "iteration {iteration}: block {r:?} skipped iff damaged"
            );
        }
    }
}

#[test]
fn a_lost_block_loses_only_its_samples() {
    let (data, all_samples) = common::progressive_capture(8, 50);
    let blocks = common::blocks_with_ranges(&data);
    // Block 4 holds the samples of the 4th recorded batch and defines stacks that block 5 uses.
    let (lost, range) = &blocks[4];
    let lost_samples: Vec<Sample> = lost
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Samples(b) => Some(b.samples.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    assert!(!lost_samples.is_empty());
    let mut bad = data.clone();
    for b in &mut bad[range.clone()] {
        *b = 0x55;
    }
    let (records, diag) = read_all(&bad).unwrap();
    assert_eq!(diag.corrupt_count, 1);
    assert_eq!(diag.corrupt_bytes, range.len() as u64);
    assert!(diag.finished);
    let stacks: std::collections::HashSet<u32> = records
        .iter()
        .filter_map(|r| match r {
            Record::Stack(s) => Some(s.id),
            _ => None,
        })
        .collect();
    let frames: std::collections::HashSet<u32> = records
        .iter()
        .filter_map(|r| match r {
            Record::Frame(f) => Some(f.id),
            _ => None,
        })
        .collect();
    let samples: Vec<Sample> = records
        .iter()
        .filter_map(|r| match r {
            Record::Samples(b) => Some(b.samples.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    let expected: Vec<Sample> = all_samples
        .iter()
        .filter(|s| !lost_samples.contains(s))
        .copied()
        .collect();
    assert_eq!(samples, expected);
    // Every surviving sample resolves its stack and frames, including those defined in the
    // lost block (used by the block after it).
    assert!(samples.iter().any(|s| s.stack / 3 == 4));
    for s in &samples {
        assert!(stacks.contains(&s.stack), "stack {} resolved", s.stack);
    }
    for r in &records {
        if let Record::Stack(s) = r {
            assert!(s.frames.iter().all(|f| frames.contains(f)));
        }
    }
}

#[test]
fn two_adjacent_lost_blocks_can_lose_a_definition() {
    let (data, _) = common::progressive_capture(8, 50);
    let blocks = common::blocks_with_ranges(&data);
    let mut bad = data.clone();
    for b in &mut bad[blocks[3].1.start..blocks[4].1.end] {
        *b = 0;
    }
    let (records, diag) = read_all(&bad).unwrap();
    assert_eq!(diag.corrupt_count, 1);
    let stacks: std::collections::HashSet<u32> = records
        .iter()
        .filter_map(|r| match r {
            Record::Stack(s) => Some(s.id),
            _ => None,
        })
        .collect();
    // Stacks first defined in (recording) batch 3 were in blocks 3 and 4 only; block 5 uses
    // the stacks of batch 4, which block 5 repeats, so its samples all resolve.
    assert!(!stacks.contains(&9));
    for r in &records {
        if let Record::Samples(b) = r {
            assert!(b.samples.iter().all(|s| stacks.contains(&s.stack)));
        }
    }
}

fn header_with(major: u16, minor: u16, flags: u32) -> Vec<u8> {
    FileHeader {
        major,
        minor,
        flags,
    }
    .to_bytes()
    .to_vec()
}

/// A capture whose only block holds `raw` (records framed by hand).
fn capture_with_raw(header: Vec<u8>, raw: &[u8]) -> Vec<u8> {
    let mut out = header;
    let mut c = Compressor::new(3).unwrap();
    encode_block(&mut c, 0, raw, &[], &mut Vec::new(), &mut out).unwrap();
    out
}

#[test]
fn newer_major_is_rejected_newer_minor_is_read() {
    let (data, _) = common::progressive_capture(1, 5);
    let mut newer = data.clone();
    newer[8..10].copy_from_slice(&2u16.to_le_bytes());
    match Reader::new(&newer) {
        Err(FormatError::NewerVersion { found, supported }) => {
            assert_eq!((found, supported), (2, 1));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        read_all(&newer),
        Err(FormatError::NewerVersion { found: 2, .. })
    ));
    let mut f = Follower::new(std::io::Cursor::new(newer));
    assert!(matches!(
        f.poll(),
        Err(FormatError::NewerVersion { found: 2, .. })
    ));
    // A newer minor, unknown flags, and trailing bytes appended to a record body are read.
    let mut raw = Vec::new();
    let mut body = postcard::to_allocvec(&ProcessExit { pid: 3, time_ns: 4 }).unwrap();
    body.extend_from_slice(b"a field from minor 7");
    encode_raw(kind::PROCESS_EXIT, &body, &mut raw);
    let newer_minor = capture_with_raw(header_with(1, 7, 0xffff_0000), &raw);
    let r = Reader::new(&newer_minor).unwrap();
    assert_eq!(r.header().minor, 7);
    let events: Vec<Event> = r.collect();
    let [Event::Block(b)] = &events[..] else {
        panic!("{events:?}")
    };
    assert_eq!(
        b.records,
        vec![Record::ProcessExit(ProcessExit { pid: 3, time_ns: 4 })]
    );
}

#[test]
fn unknown_kinds_are_skipped_and_counted() {
    let mut raw = Vec::new();
    let mut scratch = Vec::new();
    encode_raw(99, b"from the future", &mut raw);
    encode_record(
        &Record::Lost(Lost {
            time_ns: 1,
            cpu: 2,
            count: 3,
        }),
        &mut raw,
        &mut scratch,
    )
    .unwrap();
    encode_raw(99, b"", &mut raw);
    encode_raw(1000, &[0; 300], &mut raw);
    let data = capture_with_raw(header_with(1, 0, 0), &raw);
    let events: Vec<Event> = Reader::new(&data).unwrap().collect();
    let [Event::Block(b)] = &events[..] else {
        panic!("{events:?}")
    };
    assert_eq!(b.unknown_kinds, vec![(99, 2), (1000, 1)]);
    assert_eq!(b.records.len(), 1);
    let (_, diag) = read_all(&data).unwrap();
    assert_eq!(diag.unknown_kinds, vec![(99, 2), (1000, 1)]);
}

/// What a 1.3 reader makes of a 1.4 capture's `FeatureOff` (kind 20): the same bytes under a
/// kind this reader does not know (a 1.3 reader knows none from 20 on) are skipped by their
/// length and counted, and the records around them are read unchanged; under their own kind
/// they are read, and bytes a later minor appends to the body are ignored.
#[test]
fn a_feature_off_record_is_skipped_by_a_reader_that_does_not_know_it() {
    let off = FeatureOff {
        feature: feature::CFI_UNWINDING,
        instead: "frame-pointer stacks".into(),
        reason: "the kernel refused BPF program `hs_sample_stack`".into(),
    };
    let lost = Record::Lost(Lost {
        time_ns: 1,
        cpu: 2,
        count: 3,
    });
    let mut body = postcard::to_allocvec(&off).unwrap();
    let frame = |kind: u32, body: &[u8]| {
        let mut raw = Vec::new();
        let mut scratch = Vec::new();
        encode_record(&lost, &mut raw, &mut scratch).unwrap();
        encode_raw(kind, body, &mut raw);
        encode_record(&lost, &mut raw, &mut scratch).unwrap();
        capture_with_raw(header_with(1, 4, 0), &raw)
    };
    let block = |data: &[u8]| {
        let events: Vec<Event> = Reader::new(data).unwrap().collect();
        let [Event::Block(b)] = &events[..] else {
            panic!("{events:?}")
        };
        (b.records.clone(), b.unknown_kinds.clone())
    };
    let unknown = 0x7fff_fff0;
    let (records, skipped) = block(&frame(unknown, &body));
    assert_eq!(records, vec![lost.clone(), lost.clone()]);
    assert_eq!(skipped, vec![(unknown, 1)]);

    let (records, skipped) = block(&frame(kind::FEATURE_OFF, &body));
    assert_eq!(
        records,
        vec![lost.clone(), Record::FeatureOff(off.clone()), lost.clone()]
    );
    assert!(skipped.is_empty());

    body.extend_from_slice(b"a field from minor 9");
    let (records, _) = block(&frame(kind::FEATURE_OFF, &body));
    assert_eq!(records[1], Record::FeatureOff(off));
}

#[test]
fn empty_and_foreign_files_are_not_captures() {
    assert!(matches!(
        Reader::new(b""),
        Err(FormatError::NotACapture { .. })
    ));
    assert!(matches!(
        Reader::new(b"hello, this is a text file with more than sixteen bytes"),
        Err(FormatError::NotACapture { .. })
    ));
    assert!(matches!(
        Reader::new(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"),
        Err(FormatError::NotACapture { .. })
    ));
    assert!(matches!(
        Reader::new(&header_with(0, 1, 0)),
        Err(FormatError::NotACapture { .. })
    ));
    assert!(matches!(
        read_all(b"x"),
        Err(FormatError::NotACapture { .. })
    ));
    let mut f = Follower::new(std::io::Cursor::new(
        b"GIF89a and so on and so forth".to_vec(),
    ));
    assert!(matches!(f.poll(), Err(FormatError::NotACapture { .. })));
    // A bare header is an empty capture, not an error.
    let bare = header_with(1, 0, 0);
    assert_eq!(Reader::new(&bare).unwrap().count(), 0);
    assert_eq!(find_index(&bare), None);
}

/// Wraps a payload in a block with a header whose checksums verify.
fn block_with(seq: u64, payload: &[u8], raw_len: u32) -> Vec<u8> {
    let mut out = BlockHeader {
        seq,
        payload_len: payload.len() as u32,
        raw_len,
        payload_crc: crc32c::crc32c(payload),
    }
    .to_bytes()
    .to_vec();
    out.extend_from_slice(payload);
    out
}

/// A zstd frame whose header does not record the content size.
fn unsized_frame(data: &[u8]) -> Vec<u8> {
    use zstd::zstd_safe::{CCtx, CParameter};
    let mut c = CCtx::create();
    c.set_parameter(CParameter::ContentSizeFlag(false)).unwrap();
    let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(data.len()));
    c.compress2(&mut out, data).unwrap();
    assert!(matches!(
        zstd::zstd_safe::get_frame_content_size(&out),
        Ok(None)
    ));
    out
}

#[test]
fn oversized_and_lying_blocks_are_rejected() {
    let good = capture_with_raw(header_with(1, 0, 0), b"");
    let good_block = &good[HEADER_LEN..];
    let cases: Vec<(Vec<u8>, &str)> = vec![
        // Declares more raw bytes than the limit: rejected before decompressing.
        (
            block_with(
                0,
                &zstd::bulk::compress(b"x", 3).unwrap(),
                MAX_RAW_BYTES + 1,
            ),
            "over the limit",
        ),
        // The frame records far more than declared: rejected before decompressing.
        (
            block_with(
                0,
                &zstd::bulk::compress(&vec![0u8; 8 << 20], 19).unwrap(),
                1000,
            ),
            "frame records",
        ),
        // The frame records less than declared.
        (
            block_with(0, &zstd::bulk::compress(&[1u8, 0], 3).unwrap(), 100),
            "frame records",
        ),
        // A frame without a recorded size that decompresses to more than declared: zstd
        // stops at the declared size.
        (
            block_with(0, &unsized_frame(&vec![0u8; 8 << 20]), 1000),
            "zstd",
        ),
        // ... or to less.
        (
            block_with(0, &unsized_frame(&[1u8, 0]), 100),
            "decompressed to",
        ),
        // Two frames.
        (
            block_with(
                0,
                &[
                    zstd::bulk::compress(b"", 3).unwrap(),
                    zstd::bulk::compress(b"", 3).unwrap(),
                ]
                .concat(),
                0,
            ),
            "frame",
        ),
        // Not zstd at all.
        (block_with(0, b"definitely not zstd", 5), "zstd"),
    ];
    for (block, what) in cases {
        let mut data = header_with(1, 0, 0);
        data.extend_from_slice(&block);
        data.extend_from_slice(good_block);
        let events: Vec<Event> = Reader::new(&data).unwrap().collect();
        match &events[..] {
            [
                Event::Corrupt {
                    offset: 16,
                    skipped_bytes,
                    reason,
                },
                Event::Block(b),
            ] => {
                assert_eq!(*skipped_bytes, block.len() as u64, "{what}");
                assert!(reason.to_string().contains(what), "{reason} vs {what}");
                assert_eq!(b.offset, (HEADER_LEN + block.len()) as u64);
            }
            other => panic!("{what}: {other:?}"),
        }
    }
}

#[test]
fn torn_and_garbage_tails() {
    let (data, _) = common::progressive_capture(2, 5);
    // Garbage shorter than a header after the last block.
    let mut g = data.clone();
    g.extend_from_slice(b"junk");
    assert!(matches!(
        Reader::new(&g).unwrap().last(),
        Some(Event::Corrupt {
            skipped_bytes: 4,
            reason: CorruptReason::Garbage,
            ..
        })
    ));
    // A partial sync marker is a torn block.
    let mut t = data.clone();
    t.extend_from_slice(&hotspot_format::block::SYNC[..5]);
    assert_eq!(
        Reader::new(&t).unwrap().last(),
        Some(Event::Truncated {
            offset: data.len() as u64,
            dropped_bytes: 5
        })
    );
    // Corruption followed by a torn block: both reported.
    let mut ct = data.clone();
    ct.extend_from_slice(&[7u8; 100]);
    let block = &data[HEADER_LEN..HEADER_LEN + BLOCK_HEADER_LEN + 3];
    ct.extend_from_slice(block);
    let events: Vec<Event> = Reader::new(&ct).unwrap().collect();
    let n = events.len();
    assert_eq!(
        events[n - 2..],
        [
            Event::Corrupt {
                offset: data.len() as u64,
                skipped_bytes: 100,
                reason: CorruptReason::BadHeader
            },
            Event::Truncated {
                offset: data.len() as u64 + 100,
                dropped_bytes: block.len() as u64
            }
        ]
    );
}
