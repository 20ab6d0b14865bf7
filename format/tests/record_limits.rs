//! Limits on what one block may hold, whatever kinds its records are: a few KiB of zstd
//! can decompress to tens of millions of records.

#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use hotspot_format::codec::{decode_records, encode_raw};
use hotspot_format::error::{CorruptReason, RecordError};
use hotspot_format::limits::{MAX_BLOCK_RECORDS, MAX_RAW_BYTES};

/// The largest payload a block may declare, all zeros: 32 Mi records of the unknown kind 0
/// with empty bodies (the fuzzing and hostile-capture tests' zstd bomb).
#[test]
fn unknown_records_count_against_the_block_limit() {
    let raw = vec![0u8; MAX_RAW_BYTES as usize];
    let start = Instant::now();
    let err = decode_records(&raw).unwrap_err();
    let took = start.elapsed();
    match err {
        CorruptReason::Record {
            kind: 0,
            what: RecordError::Limit { what, value, max },
            ..
        } => {
            assert_eq!(what, "records in a block");
            assert_eq!(max, MAX_BLOCK_RECORDS as u64);
            assert_eq!(value, max + 1);
        }
        other => panic!("{other:?}"),
    }
    // Refused after the limit, not after reading all 32 Mi records (over a second).
    assert!(took < Duration::from_millis(500), "took {took:?}");
}

#[test]
fn unknown_records_up_to_the_limit_are_counted() {
    let mut raw = Vec::new();
    for i in 0..MAX_BLOCK_RECORDS {
        encode_raw(1000 + (i % 3) as u32, &[], &mut raw);
    }
    let d = decode_records(&raw).unwrap();
    assert!(d.records.is_empty());
    let n = MAX_BLOCK_RECORDS as u32;
    assert_eq!(
        d.unknown_kinds,
        vec![(1000, n.div_ceil(3)), (1001, (n + 1) / 3), (1002, n / 3)]
    );
    encode_raw(7777, &[], &mut raw);
    assert!(decode_records(&raw).is_err());
}
