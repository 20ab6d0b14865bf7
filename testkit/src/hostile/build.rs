//! The pieces hostile captures are made of: records as bytes, blocks whose header may lie,
//! whole files of any version, and a small well-formed program with its samples.

use hotspot_format::block::{BlockHeader, Compressor, encode_block};
use hotspot_format::codec::{encode_raw, encode_record};
use hotspot_format::header::FileHeader;
use hotspot_format::{
    Frame, FrameAddr, Module, ModuleKind, Process, Record, Sample, SampleBatch, SessionHeader,
    SourceLoc, Stack, Symbol, Thread, Writer,
};

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

pub(crate) fn sample(time_ns: u64, tid: u32, stack: u32) -> Sample {
    Sample {
        time_ns,
        tid,
        cpu: 0,
        stack,
    }
}
