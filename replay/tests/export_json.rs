//! `report --format json` (and `info --json`, `diff --format json`): the documented schemas
//! hold for real output (checked with ajv), golden files on the committed fixture captures,
//! internal consistency, and byte-identical output across runs for every format.

mod export_common;

use export_common::{
    ajv_validate, diff_out, documented_schema, golden, out, scan, tmp, with_slice,
};
use hotspot_replay::export::{DiffFormat, ExportOptions, Format, Selection, Slice};
use hotspot_replay::time::TimeSpec;
use serde_json::Value;

fn report(name: &str, selection: &Selection, top: Option<usize>) -> String {
    with_slice(name, selection, false, |s| out(Format::Json, s, top))
}

fn window(from: f64, to: f64) -> Selection {
    Selection {
        from: Some(TimeSpec::Offset((from * 1e9) as u64)),
        to: Some(TimeSpec::Offset((to * 1e9) as u64)),
        ..Selection::default()
    }
}

fn validate(test: &str, schema: &str, documents: &[(&str, String)]) {
    let dir = tmp(test);
    let schema_path = dir.join(format!("{schema}.schema.json"));
    std::fs::write(&schema_path, documented_schema(schema).to_string()).expect("write schema");
    for (name, doc) in documents {
        let path = dir.join(name);
        std::fs::write(&path, doc).expect("write document");
        ajv_validate(&schema_path, &path);
    }
}

#[test]
fn report_json_matches_the_documented_schema() {
    let no_kernel = Selection {
        no_kernel: true,
        ..Selection::default()
    };
    validate(
        "report_schema",
        "hotspot-report",
        &[
            (
                "split7030.json",
                report("split7030.hsp", &Selection::default(), None),
            ),
            (
                "split3070-top3.json",
                report("split3070.hsp", &Selection::default(), Some(3)),
            ),
            (
                "phased-window.json",
                report("phased-report.hsp", &window(2.5, 4.0), Some(5)),
            ),
            (
                "phased-no-kernel.json",
                report("phased-report.hsp", &no_kernel, None),
            ),
        ],
    );
}

#[test]
fn info_and_diff_json_match_their_schemas() {
    let info: Vec<(&str, String)> = ["split7030.hsp", "phased-report.hsp"]
        .iter()
        .map(|n| {
            let s = export_common::scan_info(n);
            (*n, hotspot_replay::info::scan_json(&s))
        })
        .collect();
    validate("info_schema", "hotspot-info", &info);
    let sel = Selection::default();
    let (base, new) = (
        scan("split7030.hsp", &sel, false),
        scan("split3070.hsp", &sel, false),
    );
    let base = Slice::new(&base, &sel).expect("base");
    let new = Slice::new(&new, &sel).expect("new");
    validate(
        "diff_schema",
        "hotspot-diff",
        &[
            ("diff.json", diff_out(DiffFormat::Json, &base, &new, None)),
            (
                "diff-top2.json",
                diff_out(DiffFormat::Json, &base, &new, Some(2)),
            ),
        ],
    );
}

#[test]
fn goldens_of_the_committed_captures() {
    golden(
        "split7030.report.json",
        &report("split7030.hsp", &Selection::default(), None),
    );
    golden(
        "phased-report.phase-two.json",
        &report("phased-report.hsp", &window(2.5, 4.0), Some(5)),
    );
    golden(
        "split7030.report.txt",
        &with_slice("split7030.hsp", &Selection::default(), false, |s| {
            out(Format::Text, s, Some(10))
        }),
    );
    golden(
        "split7030.info.json",
        &hotspot_replay::info::scan_json(&export_common::scan_info("split7030.hsp")),
    );
    golden(
        "split7030.info.txt",
        &hotspot_replay::info::scan_text(&export_common::scan_info("split7030.hsp")).replace(
            export_common::capture("split7030.hsp")
                .to_string_lossy()
                .as_ref(),
            "split7030.hsp",
        ),
    );
}

#[test]
fn report_json_is_consistent() {
    for (name, sel) in [
        ("split7030.hsp", Selection::default()),
        ("phased-report.hsp", window(0.5, 5.0)),
    ] {
        let v: Value = serde_json::from_str(&report(name, &sel, None)).expect("json");
        let samples = v["totals"]["samples"].as_u64().expect("samples");
        let unknown = v["totals"]["unknown_stack_samples"]
            .as_u64()
            .expect("unknown");
        let threads: u64 = v["threads"]
            .as_array()
            .expect("threads")
            .iter()
            .map(|t| t["samples"].as_u64().expect("n"))
            .sum();
        assert_eq!(threads, samples, "{name}: thread samples add up");
        let tree = v["tree"].as_array().expect("tree");
        assert_eq!(
            tree[0]["total"].as_u64(),
            Some(samples - unknown),
            "{name}: root"
        );
        let mut child_sum = vec![0u64; tree.len()];
        for (i, n) in tree.iter().enumerate() {
            assert_eq!(n["id"].as_u64(), Some(i as u64));
            if let Some(p) = n["parent"].as_u64() {
                assert!((p as usize) < i, "{name}: parent before child");
                child_sum[p as usize] += n["total"].as_u64().expect("total");
                assert_eq!(
                    n["depth"].as_u64(),
                    tree[p as usize]["depth"].as_u64().map(|d| d + 1)
                );
            }
        }
        for (i, n) in tree.iter().enumerate() {
            assert_eq!(
                n["total"].as_u64(),
                Some(n["self"].as_u64().expect("self") + child_sum[i]),
                "{name}: node {i} total = self + children"
            );
        }
        let self_sum: u64 = v["functions"]
            .as_array()
            .expect("functions")
            .iter()
            .map(|f| f["self"].as_u64().expect("self"))
            .sum();
        let root_self = tree[0]["self"].as_u64().expect("root self");
        assert_eq!(
            self_sum + root_self + unknown,
            samples,
            "{name}: self adds up"
        );
        let functions = v["functions"].as_array().expect("functions");
        for w in functions.windows(2) {
            assert!(
                w[0]["self"].as_u64() >= w[1]["self"].as_u64(),
                "{name}: sorted"
            );
        }
    }
}

#[test]
fn every_format_is_byte_identical_across_runs() {
    let sel = Selection {
        from: Some(TimeSpec::Offset(300_000_000)),
        no_kernel: false,
        ..Selection::default()
    };
    let render = || -> Vec<Vec<u8>> {
        with_slice("phased-report.hsp", &sel, true, |s| {
            vec![
                out(Format::Text, s, Some(30)).into_bytes(),
                out(Format::Json, s, None).into_bytes(),
                out(Format::Folded, s, None).into_bytes(),
                Format::Svg
                    .render(s, &ExportOptions::default())
                    .expect("svg"),
                Format::Pprof
                    .render(s, &ExportOptions::default())
                    .expect("pprof"),
                out(Format::Speedscope, s, None).into_bytes(),
            ]
        })
    };
    let (a, b) = (render(), render());
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert!(!x.is_empty(), "format {i} is empty");
        assert!(x == y, "format {i} differs between two runs");
    }
}
