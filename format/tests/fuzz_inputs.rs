//! Replays `tests/fuzz_inputs/` through the checks the fuzz targets make (see `fuzz/`).

#![allow(clippy::unwrap_used)]

use std::io::Cursor;

use hotspot_format::{Event, Follower, Reader, codec, columns, find_index, read_all};

fn blocks(events: Vec<Event>) -> Vec<Event> {
    events
        .into_iter()
        .filter(|e| matches!(e, Event::Block(_)))
        .collect()
}

/// What `fuzz/fuzz_targets/reader.rs` checks (all at once rather than in installments).
fn reader_checks(data: &[u8]) {
    let whole = Reader::new(data).ok().map(|r| blocks(r.collect()));
    let _ = read_all(data);
    let _ = find_index(data);
    if let Ok(mut reader) = Reader::new(data) {
        let _ = reader.seek_to_time(data.len() as u64 * 1_000_003);
        for _event in reader {}
    }
    let mut follower = Follower::new(Cursor::new(data.to_vec()));
    if let (Ok(events), Some(want)) = (follower.poll(), &whole) {
        assert_eq!(&blocks(events), want);
    }
}

/// What `fuzz/fuzz_targets/records.rs` checks.
fn records_checks(data: &[u8]) {
    let _ = codec::decode_records(data);
    if let Ok(samples) = columns::decode_batch(data, u64::MAX) {
        let mut again = Vec::new();
        columns::encode_batch(&samples, &mut again);
        assert_eq!(columns::decode_batch(&again, u64::MAX).ok(), Some(samples));
    }
}

#[test]
fn fuzz_inputs_still_pass() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fuzz_inputs");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let data = std::fs::read(&path).unwrap();
        if name.starts_with("reader-") || name.starts_with("crash-reader-") {
            reader_checks(&data);
        } else if name.starts_with("records-") || name.starts_with("crash-records-") {
            records_checks(&data);
        } else {
            continue;
        }
        // Every input is also fed to the other target's checks: both must hold for any bytes.
        reader_checks(&data);
        records_checks(&data);
        n += 1;
    }
    assert!(n >= 20, "{n} inputs");
}
