//! Helpers shared by the format crate's integration tests; the synthetic stream and the
//! committed fixture's recipe live in `hotspot-testkit`, shared with the benchmark and the
//! examples.
#![allow(dead_code)]

// Not every test binary uses both.
#[allow(unused_imports)]
pub use hotspot_testkit::synthetic::{self, fixture};

use hotspot_format::{
    Block, Event, Frame, FrameAddr, Module, ModuleKind, Process, Reader, Record, Sample,
    SessionHeader, Stack, Thread, Writer,
};

pub fn session() -> SessionHeader {
    SessionHeader {
        host: "test-host".into(),
        kernel_release: "6.1.0".into(),
        arch: "x86_64".into(),
        cpus: 4,
        page_size: 4096,
        freq_hz: 499,
        targets: vec![100],
        all_processes: false,
        command_line: vec!["hotspot".into(), "record".into()],
        start_wall_ns: 1_700_000_000_000_000_000,
        start_mono_ns: 5_000_000_000,
        recorder_version: "0.1.0".into(),
    }
}

/// A capture of `blocks` sample blocks, as a recording would make it: each block introduces
/// a few new frames and stacks (with their strings) and its samples use the stacks of this
/// and the previous block. Returns the bytes and every sample pushed, in order.
pub fn progressive_capture(blocks: usize, samples_per_block: usize) -> (Vec<u8>, Vec<Sample>) {
    let mut w = Writer::new(Vec::new(), session()).unwrap();
    w.push(Record::Process(Process {
        pid: 100,
        ppid: 1,
        name: "app".into(),
        cmdline: vec!["app".into()],
        exe: "/usr/bin/app".into(),
        start_ns: 5_000_000_000,
    }))
    .unwrap();
    w.push(Record::Module(Module {
        id: 0,
        kind: ModuleKind::Elf,
        path: "/usr/bin/app".into(),
        build_id: vec![1, 2, 3],
    }))
    .unwrap();
    let mut all = Vec::new();
    let mut t = 5_000_000_000u64;
    for b in 0..blocks as u32 {
        w.push(Record::Thread(Thread {
            tid: 100 + b,
            pid: 100,
            name: format!("t{b}"),
            time_ns: t,
        }))
        .unwrap();
        for j in 0..3u32 {
            let id = b * 3 + j;
            let symbol = w.intern(&format!("sym_{id}"));
            w.push(Record::Frame(Frame {
                id,
                module: 0,
                addr: if j == 2 {
                    FrameAddr::KernelSymbol { symbol, offset: 4 }
                } else {
                    FrameAddr::FileOffset(0x1000 + u64::from(id))
                },
            }))
            .unwrap();
            w.push(Record::Stack(Stack {
                id,
                frames: vec![id, id / 2],
            }))
            .unwrap();
        }
        for i in 0..samples_per_block as u32 {
            t += 1_000_000 + u64::from(i % 7) * 1000;
            let stack_block = if b > 0 && i % 2 == 1 { b - 1 } else { b };
            let s = Sample {
                time_ns: t,
                tid: 100 + b,
                cpu: i % 2,
                stack: stack_block * 3 + i % 3,
            };
            w.push_sample(s).unwrap();
            all.push(s);
        }
        w.flush_block().unwrap();
    }
    (w.finish(t + 1, t + 1, 0).unwrap(), all)
}

/// All events of a whole-buffer read.
pub fn events(data: &[u8]) -> Vec<Event> {
    Reader::new(data).unwrap().collect()
}

/// The blocks of a clean read, with their byte ranges.
pub fn blocks_with_ranges(data: &[u8]) -> Vec<(Block, std::ops::Range<usize>)> {
    let evs = events(data);
    let mut out: Vec<(Block, std::ops::Range<usize>)> = Vec::new();
    for ev in evs {
        match ev {
            Event::Block(b) => {
                let start = b.offset as usize;
                if let Some(last) = out.last_mut() {
                    last.1.end = start;
                }
                out.push((b, start..data.len()));
            }
            other => panic!("unexpected event in a clean capture: {other:?}"),
        }
    }
    out
}
