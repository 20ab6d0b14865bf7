//! Seeking by time: the index answers like a linear scan does.

// Tests and tools: a failed unwrap is a test failure with a backtrace.
#![allow(clippy::unwrap_used)]

mod common;

use hotspot_format::reader::block_for_time;
use hotspot_format::*;

#[test]
fn index_and_linear_scan_agree() {
    let (data, samples) = common::progressive_capture(70, 20);
    let index = find_index(&data).expect("a finished capture has a complete index");
    assert!(index.complete);
    assert!(index.entries.len() >= 70);
    let last = samples.iter().map(|s| s.time_ns).max().unwrap();
    let mut times: Vec<u64> = samples.iter().map(|s| s.time_ns).step_by(37).collect();
    times.extend([0, 1, last - 1, last, last + 1, u64::MAX]);
    // Cut off before the final block: no complete index, the reader falls back.
    let blocks = common::blocks_with_ranges(&data);
    let cut = &data[..blocks.last().unwrap().1.start];
    assert_eq!(find_index(cut), None);
    for t in times {
        let linear = block_for_time(&data, t);
        let mut r = Reader::new(&data).unwrap();
        assert_eq!(r.seek_to_time(t), linear, "t = {t}");
        let mut r2 = Reader::new(cut).unwrap();
        assert_eq!(r2.seek_to_time(t), linear, "cut capture, t = {t}");
        match linear {
            Some(offset) => {
                let Some(Event::Block(b)) = r.next() else {
                    panic!("a block at {offset}")
                };
                assert_eq!(b.offset, offset);
                let first = b
                    .records
                    .iter()
                    .find_map(|r| match r {
                        Record::Samples(s) => s.samples.iter().map(|s| s.time_ns).max(),
                        _ => None,
                    })
                    .unwrap();
                assert!(first >= t);
            }
            None => assert!(t > last),
        }
    }
}
