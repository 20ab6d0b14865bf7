//! What the off-CPU export tests share: the synthetic capture with off-CPU data
//! (testkit's `synthetic::off_cpu`), rendering it under a metric, and what went into it.

#![allow(dead_code)]

use std::collections::BTreeMap;

use hotspot_format::ThreadState;
use hotspot_replay::export::{ExportOptions, Format, Scan, Selection, Slice};
use hotspot_replay::metric::Metric;
use hotspot_testkit::synthetic::off_cpu::{self, Built, Config};
use serde_json::Value;

/// A JSON count, or a panic naming what was there instead.
pub fn count(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

pub fn scan(bytes: &[u8], sel: &Selection, order: bool) -> Scan {
    Scan::from_bytes(bytes, sel.scan_options(order), &mut |_, _| {}).expect("scan")
}

pub fn render(bytes: &[u8], sel: &Selection, format: Format) -> Vec<u8> {
    let scan = scan(bytes, sel, format.needs_order());
    let slice = Slice::new(&scan, sel).expect("slice");
    format
        .render(&slice, &ExportOptions::default())
        .unwrap_or_else(|e| panic!("{format:?}: {e}"))
}

pub fn text(bytes: &[u8], sel: &Selection, format: Format) -> String {
    String::from_utf8(render(bytes, sel, format)).expect("utf-8")
}

pub fn metric(m: Metric) -> Selection {
    Selection {
        metric: m,
        ..Selection::default()
    }
}

pub fn built() -> Built {
    off_cpu::build(&Config::default())
}

/// Periods of the off-CPU samples per state.
pub fn periods_by_state(b: &Built) -> BTreeMap<ThreadState, u64> {
    let mut m = BTreeMap::new();
    for s in &b.off_cpu {
        *m.entry(s.state).or_default() += u64::from(s.periods);
    }
    m
}

pub fn off_periods(b: &Built) -> u64 {
    b.off_cpu.iter().map(|s| u64::from(s.periods)).sum()
}

/// Whether two outputs of captures that differ in their off-CPU records only are the
/// same: byte for byte, but for the JSON document's `capture.size_bytes` (the files' sizes
/// do differ).
pub fn same_but_size(f: Format, a: &[u8], b: &[u8]) -> bool {
    if f != Format::Json {
        return a == b;
    }
    let strip = |x: &[u8]| {
        let mut v: Value = serde_json::from_slice(x).expect("json");
        v["capture"]["size_bytes"] = Value::Null;
        v
    };
    strip(a) == strip(b)
}
