//! Off-CPU records with hostile values: a period of u64::MAX ns, samples of u32::MAX
//! periods, thread times near u64::MAX and for a thread nothing else names. Every output
//! under every metric is produced without a panic, and nanoseconds saturate instead of
//! wrapping.

use hotspot_format::ThreadTimes;
use hotspot_replay::export::{
    DiffFormat, ExportOptions, Format, Scan, ScanOptions, Selection, Slice,
};
use hotspot_replay::info;
use hotspot_replay::metric::Metric;
use hotspot_testkit::synthetic::off_cpu::{self, Config};
use serde_json::Value;

fn hostile() -> off_cpu::Built {
    off_cpu::build(&Config {
        waits: 30,
        max_periods: u32::MAX,
        period_ns: Some(u64::MAX),
        unknown_tid_times: true,
        lost_off_cpu: u64::MAX,
        ..Config::default()
    })
}

#[test]
fn every_output_survives_hostile_periods() {
    let b = hostile();
    for metric in Metric::ALL {
        let sel = Selection {
            metric,
            ..Selection::default()
        };
        for f in [
            Format::Text,
            Format::Json,
            Format::Folded,
            Format::Svg,
            Format::Pprof,
            Format::Speedscope,
        ] {
            let scan =
                Scan::from_bytes(&b.bytes, sel.scan_options(f.needs_order()), &mut |_, _| {})
                    .expect("scan");
            let slice = Slice::new(&scan, &sel).expect("slice");
            let out = f
                .render(&slice, &ExportOptions::default())
                .unwrap_or_else(|e| panic!("{metric} {f:?}: {e}"));
            assert!(!out.is_empty());
            if f == Format::Json && metric != Metric::Cpu {
                let doc: Value = serde_json::from_slice(&out).expect("json");
                // Periods × u64::MAX ns saturates.
                assert_eq!(doc["totals"]["samples_ns"], u64::MAX);
                assert_eq!(doc["period_ns"], u64::MAX);
            }
        }
        let scan =
            Scan::from_bytes(&b.bytes, sel.scan_options(false), &mut |_, _| {}).expect("scan");
        let slice = Slice::new(&scan, &sel).expect("slice");
        for f in [DiffFormat::Text, DiffFormat::Json, DiffFormat::Folded] {
            f.render(&slice, &slice, &ExportOptions::default())
                .unwrap_or_else(|e| panic!("{metric} {f:?}: {e}"));
        }
    }
}

#[test]
fn info_survives_thread_times_near_overflow() {
    let b = hostile();
    // Two records for one tid whose sums would wrap, and others for unknown tids.
    let extra = |tid: u32| ThreadTimes {
        tid,
        pid: tid,
        first_ns: 0,
        last_ns: u64::MAX,
        on_cpu_ns: u64::MAX - 1,
        sleeping_ns: u64::MAX,
        uninterruptible_ns: u64::MAX,
        runnable_ns: u64::MAX,
        exited: false,
    };
    let mut w = hotspot_format::Writer::new(
        Vec::new(),
        hotspot_testkit::synthetic::session(&Config::default().base),
    )
    .expect("writer");
    w.push(hotspot_format::Record::OffCpu(hotspot_format::OffCpu {
        period_ns: u64::MAX,
    }))
    .expect("push");
    // tid 78 ends before it starts.
    let backwards = ThreadTimes {
        first_ns: u64::MAX,
        last_ns: 0,
        ..extra(78)
    };
    for t in [extra(1), extra(1), extra(77), backwards] {
        w.push(hotspot_format::Record::ThreadTimes(t))
            .expect("push");
    }
    let small = w.finish(0, 0, 0).expect("finish");
    for data in [&b.bytes, &small] {
        let scan = Scan::from_bytes(
            data,
            ScanOptions {
                measure_sizes: true,
                ..ScanOptions::default()
            },
            &mut |_, _| {},
        )
        .expect("scan");
        let text = info::scan_text(&scan);
        assert!(text.contains("thread times:"), "{text}");
        let doc: Value = serde_json::from_str(&info::scan_json(&scan)).expect("json");
        for r in doc["off_cpu"]["thread_times"].as_array().expect("rows") {
            assert!(r["wall_ns"].as_u64().is_some());
        }
    }
    let scan = Scan::from_bytes(&small, ScanOptions::default(), &mut |_, _| {}).expect("scan");
    let doc: Value = serde_json::from_str(&info::scan_json(&scan)).expect("json");
    let one = doc["off_cpu"]["thread_times"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["tid"] == 1)
        .cloned()
        .expect("tid 1");
    // Summed per tid, saturating.
    assert_eq!(one["on_cpu_ns"], u64::MAX);
    assert_eq!(one["wall_ns"], u64::MAX);
}
