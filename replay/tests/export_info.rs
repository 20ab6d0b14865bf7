//! `hotspot info` on the fixture captures: the size breakdown adds up to the file, symbol
//! coverage is measured, and a cut or torn capture says where it ends.

mod export_common;

use export_common::{capture, tmp};
use hotspot_replay::export::{Scan, ScanOptions};
use hotspot_replay::info;

fn scan_bytes(bytes: &[u8]) -> Scan {
    let options = ScanOptions {
        measure_sizes: true,
        ..ScanOptions::default()
    };
    Scan::from_bytes(bytes, options, &mut |_, _| {}).expect("scan")
}

#[test]
fn sizes_add_up_to_the_file() {
    for name in ["split7030.hsp", "phased-report.hsp"] {
        let s = export_common::scan_info(name);
        let z = &s.sizes;
        let disk: u64 = z.kinds.values().map(|k| k.disk_bytes).sum();
        assert_eq!(
            z.file_header + disk + z.unattributed + z.damaged,
            z.file,
            "{name}"
        );
        assert_eq!(
            z.file,
            std::fs::metadata(capture(name)).expect("meta").len()
        );
        let samples = &z.kinds[&hotspot_format::kind::SAMPLES];
        assert!(samples.records > 0 && samples.raw_bytes > samples.disk_bytes / 2);
        // Every record the capture counted is in the breakdown.
        for (kind, n) in &s.capture.record_counts {
            assert_eq!(z.kinds[kind].records, *n, "{name}: kind {kind}");
        }
    }
}

#[test]
fn coverage_is_measured_per_module() {
    let s = export_common::scan_info("split7030.hsp");
    let cov = info::coverage(&info::Facts::of_scan(&s));
    assert_eq!(cov.samples, s.samples);
    assert!(
        cov.named * 100 >= cov.samples * 95,
        "{} of {}",
        cov.named,
        cov.samples
    );
    let main = cov.modules.first().expect("a module");
    assert_eq!(main.module, "split7030", "busiest module first");
    assert_eq!(main.named, main.samples);
    let text = info::scan_text(&s);
    assert!(text.contains("symbols:    ") && text.contains("of samples have a named leaf frame"));
    assert!(text.contains("size:       ") && text.contains("raw bytes"));
}

#[test]
fn a_cut_capture_says_where_it_stops() {
    let bytes = std::fs::read(capture("phased-report.hsp")).expect("read");
    let whole = scan_bytes(&bytes);
    // Drop the tail: no end marker, and the last block torn.
    let cut = &bytes[..bytes.len() * 2 / 3];
    let s = scan_bytes(cut);
    assert!(s.samples < whole.samples);
    let text = info::scan_text(&s);
    let ending = text
        .lines()
        .find(|l| l.starts_with("ending:"))
        .expect("ending line");
    assert!(
        ending.contains("truncated") && ending.contains("at offset"),
        "{ending}"
    );
    assert!(ending.contains("the last sample is at"), "{ending}");
    let v: serde_json::Value = serde_json::from_str(&info::scan_json(&s)).expect("json");
    assert_eq!(v["ending"]["clean"], false);
    assert!(v["ending"]["truncated"]["offset"].as_u64().is_some());
    assert_eq!(v["capture"]["ending"], "truncated");
    let z = &s.sizes;
    let disk: u64 = z.kinds.values().map(|k| k.disk_bytes).sum();
    assert_eq!(
        z.file_header + disk + z.unattributed + z.damaged,
        cut.len() as u64
    );
    let _ = tmp("info-cut");
}
