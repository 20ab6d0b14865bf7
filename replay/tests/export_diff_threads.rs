//! The diff's wall time per thread (`replay/src/export/diff/threads.rs`): when both
//! captures have off-CPU data and the diff weighs wall (or off-CPU) time, each thread
//! name's kernel-measured CPU, S, D, R and wall time in both, in text and JSON; nothing of
//! it when either capture lacks off-CPU data, nor under `--metric cpu`.
//! The captures are testkit's synthetic off-CPU ones with different seeds, so the times
//! differ and are known exactly (`Built::times`).

mod export_common;
mod off_cpu_common;

use hotspot_replay::export::diff::threads;
use hotspot_replay::export::{DiffFormat, Selection, Slice};
use hotspot_replay::metric::Metric;
use hotspot_testkit::synthetic::off_cpu::{self, Built, Config};
use off_cpu_common::*;
use serde_json::Value;

fn two() -> (Built, Built) {
    let a = off_cpu::build(&Config::default());
    let mut cfg = Config::default();
    cfg.base.seed ^= 0x5eed;
    cfg.waits = 400;
    (a, off_cpu::build(&cfg))
}

/// The capture's thread name of a tid (what threads match by).
fn name_of(bytes: &[u8], tid: u32) -> String {
    let s = scan(bytes, &Selection::default(), false);
    s.capture.threads[&tid].name().to_string()
}

#[test]
fn wall_time_per_thread_compares_the_kernels_times() {
    let (a, b) = two();
    let sel = metric(Metric::Wall);
    let (sa, sb) = (scan(&a.bytes, &sel, false), scan(&b.bytes, &sel, false));
    let (base, new) = (
        Slice::new(&sa, &sel).expect("slice"),
        Slice::new(&sb, &sel).expect("slice"),
    );
    let rows = threads::compare(&base, &new).expect("both have off-CPU data");
    assert_eq!(rows.len(), a.times.len(), "{rows:?}");
    for t in &a.times {
        let name = name_of(&a.bytes, t.tid);
        let row = rows.iter().find(|r| r.name == name).expect("thread row");
        let other = b.times.iter().find(|x| x.tid == t.tid).expect("same tids");
        let (bw, nw) = row.walls();
        assert_eq!(bw, t.wall_ns());
        assert_eq!(nw, other.wall_ns());
        assert_eq!(row.base.expect("base").on_cpu_ns, t.on_cpu_ns);
        assert_eq!(
            row.new.expect("new").off_cpu_ns,
            [
                other.sleeping_ns,
                other.uninterruptible_ns,
                other.runnable_ns
            ]
        );
        assert_ne!(bw, nw, "the seeds must make the times differ");
    }
    // Largest change of wall time first.
    let d: Vec<u64> = rows
        .iter()
        .map(|r| {
            let (b, n) = r.walls();
            b.abs_diff(n)
        })
        .collect();
    assert!(d.windows(2).all(|w| w[0] >= w[1]), "{d:?}");

    let json: Value = serde_json::from_str(&export_common::diff_out(
        DiffFormat::Json,
        &base,
        &new,
        None,
    ))
    .expect("json");
    let first = &json["threads"][0];
    assert_eq!(first["name"], rows[0].name.as_str());
    assert_eq!(first["base"]["wall_ns"], rows[0].walls().0);
    assert_eq!(first["new"]["wall_ns"], rows[0].walls().1);
    let growth = first["wall_growth_pct"].as_f64().expect("growth");
    let (bw, nw) = rows[0].walls();
    let want = 100.0 * (nw as f64 - bw as f64) / bw as f64;
    assert!((growth - want).abs() < 0.006, "{growth} vs {want}");

    let text = export_common::diff_out(DiffFormat::Text, &base, &new, None);
    assert!(
        text.contains("wall time per thread name"),
        "no thread section:\n{text}"
    );
    let line = text
        .lines()
        .find(|l| l.ends_with(&format!("  {}", rows[0].name)))
        .unwrap_or_else(|| panic!("no line for {}:\n{text}", rows[0].name));
    assert!(
        line.contains(&format!("{:.3}", bw as f64 / 1e9))
            && line.contains(&format!("{:.3}", nw as f64 / 1e9)),
        "{line}"
    );
}

#[test]
fn without_off_cpu_data_on_either_side_or_under_cpu_there_is_no_thread_comparison() {
    let (a, b) = two();
    let sel = Selection::default();
    let (sa, sb) = (scan(&a.bytes, &sel, false), scan(&b.bytes, &sel, false));
    let (base, new) = (
        Slice::new(&sa, &sel).expect("slice"),
        Slice::new(&sb, &sel).expect("slice"),
    );
    assert!(
        threads::compare(&base, &new).is_none(),
        "under --metric cpu"
    );
    let wall = metric(Metric::Wall);
    let (sa, sb) = (scan(&a.bytes, &wall, false), scan(&b.cpu_only, &sel, false));
    let (base, new) = (
        Slice::new(&sa, &wall).expect("slice"),
        Slice::new(&sb, &sel).expect("slice"),
    );
    assert!(threads::compare(&base, &new).is_none());
    let json: Value = serde_json::from_str(&export_common::diff_out(
        DiffFormat::Json,
        &base,
        &new,
        None,
    ))
    .expect("json");
    assert!(json.get("threads").is_none(), "{json}");
    let text = export_common::diff_out(DiffFormat::Text, &base, &new, None);
    assert!(!text.contains("wall time per thread"), "{text}");
}

/// `--tid` keeps the other thread's times out of the comparison too.
#[test]
fn the_thread_filter_applies() {
    let (a, b) = two();
    let tid = hotspot_testkit::synthetic::TIDS[0];
    let sel = Selection {
        tids: vec![tid],
        metric: Metric::OffCpu,
        ..Selection::default()
    };
    let (sa, sb) = (scan(&a.bytes, &sel, false), scan(&b.bytes, &sel, false));
    let (base, new) = (
        Slice::new(&sa, &sel).expect("slice"),
        Slice::new(&sb, &sel).expect("slice"),
    );
    let rows = threads::compare(&base, &new).expect("off-CPU data");
    let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, [name_of(&a.bytes, tid)]);
}
