//! The writer's block observer: it hears of every block (automatic flushes included)
//! before and after the write, with the sample count the capture holds once it is written,
//! so a capture cut off at any moment can be checked against what was flushed.

use std::io::Write;
use std::sync::{Arc, Mutex};

use hotspot_format::{
    BlockEvent, Record, Sample, SessionHeader, Writer, read_all, writer::BLOCK_MAX_SAMPLES,
};

fn session() -> SessionHeader {
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

fn sample(i: u64) -> Sample {
    Sample {
        time_ns: 5_000_000_000 + i * 1000,
        tid: 100,
        cpu: (i % 4) as u32,
        stack: 0,
    }
}

fn samples_in(bytes: &[u8]) -> u64 {
    let (records, _) = read_all(bytes).expect("reads");
    records
        .iter()
        .map(|r| match r {
            Record::Samples(b) => b.samples.len() as u64,
            _ => 0,
        })
        .sum()
}

fn observed(w: &mut Writer<impl Write>) -> Arc<Mutex<Vec<BlockEvent>>> {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    w.observe_blocks(Box::new(move |e| sink.lock().expect("lock").push(e)));
    events
}

#[test]
fn every_block_is_announced_and_confirmed_with_the_running_sample_count() {
    let mut w = Writer::new(Vec::new(), session()).expect("writer");
    let events = observed(&mut w);
    // More than one automatic block's worth, then a partial block flushed by hand.
    let n = BLOCK_MAX_SAMPLES as u64 * 2 + 123;
    for i in 0..n {
        w.push_sample(sample(i)).expect("push");
    }
    w.flush_block().expect("flush");
    let out = w.finish(1, 2, 0).expect("finish");
    let events = events.lock().expect("lock").clone();
    // Automatic, automatic, by hand, final (End, no new samples).
    let expected_counts = [BLOCK_MAX_SAMPLES as u64, BLOCK_MAX_SAMPLES as u64 * 2, n, n];
    let expected: Vec<BlockEvent> = expected_counts
        .iter()
        .flat_map(|&s| {
            [
                BlockEvent::Writing { samples: s },
                BlockEvent::Written { samples: s },
            ]
        })
        .collect();
    assert_eq!(events, expected);
    assert_eq!(samples_in(&out), n);
}

/// Fails every write after the first `ok` ones, like a full disk.
struct FailAfter {
    out: Vec<u8>,
    ok: usize,
}

impl Write for FailAfter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.ok == 0 {
            return Err(std::io::Error::other("no space"));
        }
        self.ok -= 1;
        self.out.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_failed_write_is_announced_but_never_confirmed() {
    // The file header and one block go through; the second block's write fails.
    let mut w = Writer::new(
        FailAfter {
            out: Vec::new(),
            ok: 2,
        },
        session(),
    )
    .expect("writer");
    let events = observed(&mut w);
    for i in 0..10 {
        w.push_sample(sample(i)).expect("push");
    }
    w.flush_block().expect("first block");
    for i in 10..25 {
        w.push_sample(sample(i)).expect("push");
    }
    assert!(
        w.flush_block().is_err(),
        "the second block cannot be written"
    );
    assert_eq!(
        *events.lock().expect("lock"),
        vec![
            BlockEvent::Writing { samples: 10 },
            BlockEvent::Written { samples: 10 },
            BlockEvent::Writing { samples: 25 },
        ]
    );
    assert_eq!(samples_in(&w.get_ref().out), 10);
}
