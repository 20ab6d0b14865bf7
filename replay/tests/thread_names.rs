//! A thread's names as the capture gives them: each version of its `Thread` definition
//! once, in order, though the writer repeats a block's definitions in the next block
//! (SPEC §7.2: a `Thread` is keyed by `(tid, time_ns)`; a repeated key is not a rename).

use hotspot_format::{Record, Sample, SessionHeader, Stack, Thread, Writer};
use hotspot_replay::Capture;

fn thread(time_ns: u64, name: &str) -> Record {
    Record::Thread(Thread {
        tid: 7,
        pid: 7,
        name: name.into(),
        time_ns,
    })
}

fn sample(time_ns: u64) -> Sample {
    Sample {
        time_ns,
        tid: 7,
        cpu: 0,
        stack: 0,
    }
}

#[test]
fn renames_within_one_block_are_each_named_once() {
    let mut w = Writer::new(Vec::new(), SessionHeader::default()).expect("writer");
    w.push(Record::Stack(Stack {
        id: 0,
        frames: vec![],
    }))
    .expect("stack");
    // Renamed twice within the first block, back to its first name the second time (a
    // name may come back: only the key tells a repetition from a rename).
    for (t, name) in [(10, "first"), (20, "second"), (30, "first")] {
        w.push(thread(t, name)).expect("thread");
        w.push_sample(sample(t)).expect("sample");
    }
    w.flush_block().expect("block 0");
    // The next blocks repeat those three versions, then add one.
    w.push_sample(sample(40)).expect("sample");
    w.flush_block().expect("block 1");
    w.push(thread(50, "third")).expect("thread");
    w.push_sample(sample(50)).expect("sample");
    let bytes = w.finish(0, 60, 0).expect("finish");
    let c = Capture::from_bytes(&bytes).expect("capture");
    assert!(c.blocks >= 3, "{} blocks", c.blocks);
    assert_eq!(
        c.threads[&7].names,
        [
            (10, "first".to_string()),
            (20, "second".into()),
            (30, "first".into()),
            (50, "third".into()),
        ]
    );
}
