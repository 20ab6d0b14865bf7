//! The follower sees what the reader sees, however the bytes trickle in.

// Tests and tools: a failed unwrap is a test failure with a backtrace.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{Cursor, Read, Seek, SeekFrom};
use std::sync::{Arc, Mutex};

use hotspot_format::*;

/// A file another party keeps appending to: reads see only what has been appended so far.
#[derive(Clone, Default)]
struct Growing {
    data: Arc<Mutex<Vec<u8>>>,
    pos: u64,
}

impl Growing {
    fn append(&self, bytes: &[u8]) {
        self.data.lock().unwrap().extend_from_slice(bytes);
    }
}

impl Read for Growing {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let data = self.data.lock().unwrap();
        let mut c = Cursor::new(&data[..]);
        c.set_position(self.pos);
        let n = c.read(buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for Growing {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        let len = self.data.lock().unwrap().len() as u64;
        self.pos = match pos {
            SeekFrom::Start(p) => p,
            SeekFrom::End(d) => len.saturating_add_signed(d),
            SeekFrom::Current(d) => self.pos.saturating_add_signed(d),
        };
        Ok(self.pos)
    }
}

fn follow_in_steps(data: &[u8], step: usize) -> (Vec<Event>, bool) {
    let file = Growing::default();
    let mut f = Follower::new(file.clone());
    let mut events = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let next = (at + step).min(data.len());
        file.append(&data[at..next]);
        at = next;
        for e in f.poll().unwrap() {
            assert!(!matches!(e, Event::Truncated { .. }), "never truncated");
            events.push(e);
        }
        if at < data.len() {
            assert!(!f.finished());
        }
    }
    events.extend(f.poll().unwrap());
    (events, f.finished())
}

#[test]
fn follower_matches_reader_at_any_pace() {
    let (data, _) = common::progressive_capture(5, 40);
    let want = common::events(&data);
    for step in [1, 7, 31, 32, 33, 100, 1000, data.len()] {
        let (got, finished) = follow_in_steps(&data, step);
        assert_eq!(got, want, "step {step}");
        assert!(finished);
    }
}

#[test]
fn follower_waits_on_a_torn_tail_and_resyncs_after_damage() {
    let (data, _) = common::progressive_capture(5, 40);
    let blocks = common::blocks_with_ranges(&data);
    let mut bad = data.clone();
    let r = blocks[2].1.clone();
    for b in &mut bad[r.start + 3..r.start + 40] {
        *b ^= 0x5a;
    }
    let want = common::events(&bad);
    assert!(want.iter().any(|e| matches!(e, Event::Corrupt { .. })));
    for step in [1, 13, 64, bad.len()] {
        let (got, finished) = follow_in_steps(&bad, step);
        assert_eq!(got, want, "step {step}");
        assert!(finished);
    }
    // Cut mid-block: the follower reports the complete blocks and waits, no truncation.
    let cut = blocks[3].1.start + 10;
    let mut f = Follower::new(Cursor::new(data[..cut].to_vec()));
    let got = f.poll().unwrap();
    assert_eq!(got.len(), 3);
    assert!(f.poll().unwrap().is_empty());
    assert!(!f.finished());
}

#[test]
fn follower_waits_for_the_file_header() {
    let (data, _) = common::progressive_capture(1, 3);
    let file = Growing::default();
    let mut f = Follower::new(file.clone());
    assert!(f.poll().unwrap().is_empty());
    file.append(&data[..5]);
    assert!(f.poll().unwrap().is_empty());
    assert_eq!(f.header(), None);
    file.append(&data[5..]);
    assert_eq!(f.poll().unwrap().len(), 2);
    assert!(f.finished());
}

#[test]
fn a_big_file_is_caught_up_in_bounded_polls() {
    // Noisy times, cpus and threads: a capture that does not compress to nothing.
    let mut w = Writer::new(Vec::new(), common::session()).unwrap();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut t = 1_000_000_000u64;
    for block in 0..40 {
        for _ in 0..50_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            t += x % 4_000_000;
            let s = Sample {
                time_ns: t,
                tid: (x >> 20) as u32 % 64,
                cpu: (x >> 30) as u32 % 16,
                stack: (x >> 40) as u32 % 4096,
            };
            w.push_sample(s).unwrap();
        }
        if block % 4 == 3 {
            w.flush_block().unwrap();
        }
    }
    let data = w.finish(t + 1, t + 1, 0).unwrap();
    assert!(
        data.len() > 3 << 20,
        "the capture must exceed one poll's budget"
    );
    let want = common::events(&data);
    let mut f = Follower::new(Cursor::new(data.clone()));
    let mut got = f.poll().unwrap();
    assert!(
        f.behind(),
        "one poll must not read a {} byte file",
        data.len()
    );
    assert!(got.len() < want.len());
    let mut polls = 1;
    while f.behind() {
        got.extend(f.poll().unwrap());
        polls += 1;
    }
    got.extend(f.poll().unwrap());
    assert_eq!(got, want);
    assert!(f.finished());
    assert!(polls >= 2);
}
