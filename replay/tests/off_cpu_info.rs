//! `hotspot info` of captures with and without off-CPU data: the off-CPU period, the
//! samples by state, lost records, and each thread's kernel-measured times; a 1.3 capture
//! without off-CPU data says so in one line.

use hotspot_format::ThreadState;
use hotspot_replay::export::{Scan, ScanOptions};
use hotspot_replay::info;
use hotspot_testkit::synthetic::off_cpu::{self, Config, UNKNOWN_TID};
use serde_json::Value;

fn scan(bytes: &[u8]) -> Scan {
    let options = ScanOptions {
        measure_sizes: true,
        ..ScanOptions::default()
    };
    Scan::from_bytes(bytes, options, &mut |_, _| {}).expect("scan")
}

#[test]
fn info_gives_each_threads_times() {
    let b = off_cpu::build(&Config {
        unknown_tid_times: true,
        ..Config::default()
    });
    let s = scan(&b.bytes);
    let text = info::scan_text(&s);
    let periods: u64 = b.off_cpu.iter().map(|o| u64::from(o.periods)).sum();
    let line = text
        .lines()
        .find(|l| l.starts_with("off-CPU:"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains(&format!(
            "({} ns); {} samples standing for {periods} periods",
            b.period_ns,
            b.off_cpu.len()
        )),
        "{line}"
    );
    assert!(line.ends_with("; 3 lost"), "{line}");
    let table = &text[text.find("thread times:").expect("thread times")..];
    for t in &b.times {
        let row = table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(&t.tid.to_string()) && l.contains('%'))
            .unwrap_or_else(|| panic!("tid {}: {text}", t.tid));
        let wall = format!("{:.3}", t.wall_ns() as f64 / 1e9);
        let cpu = format!("{:.3}", t.on_cpu_ns as f64 / 1e9);
        assert!(row.contains(&wall) && row.contains(&cpu), "{row}");
        let life = format!("{:.3}", (t.last_ns - t.first_ns) as f64 / 1e9);
        assert!(row.contains(&format!("% {life:>10}")), "{row}");
        assert_eq!(row.ends_with(", exited"), t.exited, "{row}");
    }
    let doc: Value = serde_json::from_str(&info::scan_json(&s)).expect("json");
    let o = &doc["off_cpu"];
    assert_eq!(o["recorded"], true);
    assert_eq!(o["period_ns"], b.period_ns);
    assert_eq!(o["samples"], b.off_cpu.len() as u64);
    assert_eq!(o["periods"], periods);
    assert_eq!(o["ns"], periods * b.period_ns);
    assert_eq!(o["lost"], 3);
    for (i, st) in ThreadState::ALL.into_iter().enumerate() {
        let want: u64 = b
            .off_cpu
            .iter()
            .filter(|x| x.state == st)
            .map(|x| u64::from(x.periods))
            .sum();
        assert_eq!(o["states"][i]["state"], st.letter().to_string());
        assert_eq!(o["states"][i]["periods"], want);
    }
    let rows = o["thread_times"].as_array().expect("thread_times");
    assert_eq!(rows.len(), b.times.len());
    for t in &b.times {
        let r = rows
            .iter()
            .find(|r| r["tid"] == t.tid)
            .unwrap_or_else(|| panic!("tid {}", t.tid));
        assert_eq!(r["on_cpu_ns"], t.on_cpu_ns);
        assert_eq!(r["sleeping_ns"], t.sleeping_ns);
        assert_eq!(r["uninterruptible_ns"], t.uninterruptible_ns);
        assert_eq!(r["runnable_ns"], t.runnable_ns);
        assert_eq!(r["off_cpu_ns"], t.total_off_cpu_ns());
        assert_eq!(r["wall_ns"], t.on_cpu_ns + t.total_off_cpu_ns());
    }
    // The thread only its times name has no name, and is listed all the same.
    let unknown = rows
        .iter()
        .find(|r| r["tid"] == UNKNOWN_TID)
        .expect("unknown");
    assert_eq!(unknown["name"], "");
    // info counts CPU samples as it always did.
    assert_eq!(doc["counts"]["samples"], b.samples.len() as u64);
}

#[test]
fn a_capture_without_off_cpu_data_says_so() {
    let b = off_cpu::build(&Config::default());
    let s = scan(&b.cpu_only);
    let text = info::scan_text(&s);
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("off-CPU")).collect();
    assert_eq!(
        lines,
        ["off-CPU:    no off-CPU data (recorded without --off-cpu)"]
    );
    let doc: Value = serde_json::from_str(&info::scan_json(&s)).expect("json");
    assert_eq!(doc["off_cpu"]["recorded"], false);
    assert_eq!(
        doc["off_cpu"]["thread_times"].as_array().map(Vec::len),
        Some(0)
    );
    // Apart from that line, and the record table, info is the one of the capture with
    // off-CPU data.
    let with = info::scan_text(&scan(&b.bytes));
    let keep = |t: &str| -> Vec<String> {
        let mut skip = false;
        let mut out = Vec::new();
        for l in t.lines().take_while(|l| !l.starts_with("size:")) {
            skip = (skip || l.starts_with("off-CPU:")) && !l.starts_with("unwinding:");
            // The file's size and blocks differ: the off-CPU records take room.
            if !skip && !l.starts_with("capture:") && !l.starts_with("blocks:") {
                out.push(l.to_string());
            }
        }
        out
    };
    assert_eq!(keep(&text), keep(&with));
}
