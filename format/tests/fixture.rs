//! The committed fixture decodes to what its generator put in, and to a golden summary, so a
//! change that makes this version read old captures differently fails here.

// Tests and tools: a failed unwrap is a test failure with a backtrace.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;

use hotspot_format::definitions::Dedup;
use hotspot_format::*;

const FIXTURE: &[u8] = include_bytes!("../../fixtures/captures/synthetic-v1.hsp");

fn kind_name(k: u32) -> &'static str {
    kind::ALL
        .iter()
        .find(|(n, _)| *n == k)
        .map_or("?", |(_, name)| name)
}

#[test]
fn fixture_reads_as_generated() {
    let f = common::fixture::build();
    let (records, diag) = read_all(FIXTURE).unwrap();
    assert!(diag.finished);
    assert_eq!(
        (diag.corrupt_count, diag.truncated, diag.unknown_kinds.len()),
        (0, None, 0)
    );
    let samples: Vec<Sample> = records
        .iter()
        .filter_map(|r| match r {
            Record::Samples(b) => Some(b.samples.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(samples, f.samples);
    let mut dedup = Dedup::new();
    let want: Vec<&Record> = f.records.iter().filter(|r| dedup.keep(r)).collect();
    let got: Vec<&Record> = records
        .iter()
        .filter(|r| !matches!(r, Record::Samples(_) | Record::Index(_) | Record::End(_)))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn fixture_golden_summary() {
    let mut per_kind: BTreeMap<&str, usize> = BTreeMap::new();
    let mut blocks = 0;
    let mut samples = 0;
    let mut end = None;
    for event in Reader::new(FIXTURE).unwrap() {
        let Event::Block(b) = event else {
            panic!("{event:?}")
        };
        blocks += 1;
        for r in &b.records {
            *per_kind.entry(kind_name(r.kind())).or_default() += 1;
            match r {
                Record::Samples(s) => samples += s.samples.len(),
                Record::End(e) => end = Some(*e),
                _ => {}
            }
        }
    }
    let summary = format!("blocks={blocks} samples={samples} kinds={per_kind:?} end={end:?}");
    println!("{summary}");
    assert_eq!(
        summary,
        "blocks=5 samples=1996 kinds={\"End\": 1, \"Frame\": 48, \"Index\": 1, \"Lost\": 1, \
         \"Module\": 6, \"Process\": 6, \"ProcessExit\": 1, \"Samples\": 4, \"Session\": 2, \
         \"Stack\": 24, \"String\": 98, \"Symbol\": 48, \"Thread\": 8} \
         end=Some(End { samples: 1996, lost: 17, blocks: 5, end_wall_ns: 1700000002000000000, \
         end_mono_ns: 1001998729834 })"
    );
    let index = find_index(FIXTURE).unwrap();
    assert_eq!(index.entries.len(), 4);
    assert_eq!(index.entries.iter().map(|e| e.samples).sum::<u32>(), 1996);
}
