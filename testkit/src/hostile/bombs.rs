//! Captures built to exhaust a reader's memory or time if it expands what they hold
//! naively, and a file that is an ELF binary rather than a capture.

use hotspot_format::{Frame, FrameAddr, InlinedFn, Record, SourceLoc, Stack, Symbol};

use super::build::{T0, file, payload, program, samples};

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
pub(crate) fn fake_content_size(frame: &mut Vec<u8>) {
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
pub(crate) fn inline_bomb() -> Vec<u8> {
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
