//! `hotspot diff` on two fixture captures with a known shift: split7030 (hot 70%, cold 30%)
//! against split3070 (the same program run with the split inverted).

mod export_common;

use export_common::{diff_out, scan};
use hotspot_replay::export::{DiffFormat, Selection, Slice, diff};
use serde_json::Value;

fn compare<T>(f: impl FnOnce(&Slice, &Slice) -> T) -> T {
    let sel = Selection::default();
    let (b, n) = (
        scan("split7030.hsp", &sel, false),
        scan("split3070.hsp", &sel, false),
    );
    let base = Slice::new(&b, &sel).expect("base");
    let new = Slice::new(&n, &sel).expect("new");
    f(&base, &new)
}

#[test]
fn the_shift_has_the_right_sign_and_size() {
    let d = compare(diff::diff);
    let find = |f: &str| {
        d.changes
            .iter()
            .find(|c| &*c.key.function == f)
            .unwrap_or_else(|| panic!("{f} missing"))
    };
    // 70% → 30%: about −40 points of self share; leaves carry nearly all the time.
    for (f, sign) in [
        ("hot_leaf", -1.0),
        ("cold_leaf", 1.0),
        ("hot_a", -1.0),
        ("cold_a", 1.0),
    ] {
        let c = find(f);
        let delta = if f.ends_with("leaf") {
            c.delta_self
        } else {
            c.delta_total
        };
        assert!(
            (delta * sign - 40.0).abs() < 8.0,
            "{f}: change {delta:+.2} points, expected {:+.0} ± 8",
            sign * 40.0
        );
    }
    // Sorted by the size of the change: the two leaves lead.
    let first: Vec<&str> = d.changes[..2].iter().map(|c| &*c.key.function).collect();
    assert!(
        first.contains(&"hot_leaf") && first.contains(&"cold_leaf"),
        "{first:?}"
    );
    for w in d.changes.windows(2) {
        assert!(w[0].delta_self.abs() >= w[1].delta_self.abs());
    }
    // Matched by name and module: one row per function, not one per capture.
    assert_eq!(
        d.changes
            .iter()
            .filter(|c| &*c.key.function == "hot_leaf")
            .count(),
        1
    );
    let text = compare(|b, n| diff_out(DiffFormat::Text, b, n, Some(5)));
    let first_row = text.lines().nth(4).expect("row");
    assert!(first_row.contains("_leaf"), "{text}");
    // A 40-point shift over ~800 samples is far beyond noise: both changes marked.
    assert_eq!(first_row.matches('*').count(), 2, "{text}");
    assert!(text.contains("-4") && text.contains("+4"), "{text}");
}

#[test]
fn json_and_folded_forms() {
    let (json, folded, totals) = compare(|b, n| {
        (
            diff_out(DiffFormat::Json, b, n, Some(2)),
            diff_out(DiffFormat::Folded, b, n, None),
            (b.total, n.total),
        )
    });
    let v: Value = serde_json::from_str(&json).expect("json");
    assert_eq!(v["schema"], "hotspot-diff");
    assert_eq!(v["changes"].as_array().expect("changes").len(), 2);
    let hot = v["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .find(|c| c["name"] == "hot_leaf")
        .expect("hot_leaf in the top 2");
    assert!(hot["delta_self_pct"].as_f64().expect("delta") < -30.0);
    // `stack count_base count_new`, adding up to each capture's total.
    let (mut a, mut b) = (0, 0);
    for line in folded.lines() {
        let mut parts = line.rsplitn(3, ' ');
        let new: u64 = parts
            .next()
            .and_then(|x| x.parse().ok())
            .expect("new count");
        let base: u64 = parts
            .next()
            .and_then(|x| x.parse().ok())
            .expect("base count");
        assert!(parts.next().is_some_and(|s| !s.is_empty()));
        a += base;
        b += new;
    }
    assert_eq!((a, b), totals);
    assert!(folded.contains("__libc_start_call_main;main;hot_a;hot_b;hot_leaf "));
    // inferno draws a differential flame graph from it.
    let mut options = inferno::flamegraph::Options::default();
    options.deterministic = true;
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut options, folded.lines(), &mut svg).expect("inferno");
    assert!(String::from_utf8_lossy(&svg).contains("hot_leaf"));
}
