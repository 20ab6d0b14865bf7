//! `report --format speedscope` checked against the JSON schema that the speedscope npm
//! package ships (`dist/release/file-format-schema.json`, validated with ajv), and its
//! per-thread sample counts against the report's.

mod export_common;

use export_common::{ajv_validate, npm_modules, out, tmp, with_slice};
use hotspot_replay::export::{Format, Selection};
use hotspot_replay::time::TimeSpec;
use serde_json::Value;

fn check(name: &str, sel: &Selection, keep_order: bool) {
    let (doc, per_thread, period, total) = with_slice(name, sel, keep_order, |s| {
        (
            out(Format::Speedscope, s, None),
            s.thread_samples.clone(),
            s.period_ns(),
            s.total,
        )
    });
    let dir = tmp(&format!("speedscope-{name}-{keep_order}"));
    let path = dir.join("profile.speedscope.json");
    std::fs::write(&path, &doc).expect("write");
    ajv_validate(
        &npm_modules().join("speedscope/dist/release/file-format-schema.json"),
        &path,
    );
    let v: Value = serde_json::from_str(&doc).expect("json");
    let frames = v["shared"]["frames"].as_array().expect("frames").len();
    let profiles = v["profiles"].as_array().expect("profiles");
    assert_eq!(
        profiles.len(),
        per_thread.len(),
        "{name}: one profile per thread"
    );
    let mut sum = 0;
    for (p, (tid, &n)) in profiles.iter().zip(&per_thread) {
        assert!(
            p["name"]
                .as_str()
                .expect("name")
                .ends_with(&format!("(tid {tid})")),
            "{name}: profiles in tid order"
        );
        assert_eq!(p["unit"], "nanoseconds");
        let weights: u64 = p["weights"]
            .as_array()
            .expect("weights")
            .iter()
            .map(|w| w.as_u64().expect("integer weight"))
            .sum();
        assert_eq!(weights, n * period, "{name}: tid {tid} has {n} samples");
        assert_eq!(p["endValue"].as_u64(), Some(weights));
        let samples = p["samples"].as_array().expect("samples");
        assert_eq!(samples.len(), p["weights"].as_array().expect("w").len());
        for s in samples {
            for i in s.as_array().expect("stack") {
                assert!((i.as_u64().expect("index") as usize) < frames);
            }
        }
        sum += n;
    }
    assert_eq!(sum, total, "{name}: every selected sample is in a profile");
}

#[test]
fn validates_against_speedscopes_schema_with_the_right_counts() {
    check("split7030.hsp", &Selection::default(), true);
    check("split7030.hsp", &Selection::default(), false);
    check(
        "phased-report.hsp",
        &Selection {
            from: Some(TimeSpec::Offset(1_000_000_000)),
            no_kernel: true,
            ..Selection::default()
        },
        true,
    );
}

#[test]
fn time_order_is_kept() {
    // In phased, p1 runs before p2 before p3: the first sample of the thread's
    // profile must be in phase one and the last in phase three.
    let doc = with_slice("phased-report.hsp", &Selection::default(), true, |s| {
        out(Format::Speedscope, s, None)
    });
    let v: Value = serde_json::from_str(&doc).expect("json");
    let frames: Vec<&str> = v["shared"]["frames"]
        .as_array()
        .expect("frames")
        .iter()
        .map(|f| f["name"].as_str().expect("name"))
        .collect();
    let p = &v["profiles"][0];
    let stacks: Vec<Vec<&str>> = p["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .map(|s| {
            s.as_array()
                .expect("stack")
                .iter()
                .map(|i| frames[i.as_u64().expect("i") as usize])
                .collect()
        })
        .collect();
    let phase = |s: &Vec<&str>| {
        s.iter()
            .find(|f| f.starts_with("phase_"))
            .map(|f| f.to_string())
    };
    let phases: Vec<String> = stacks.iter().filter_map(phase).collect();
    let mut order = phases.clone();
    order.dedup();
    assert_eq!(
        order,
        ["phase_one", "phase_two", "phase_three"],
        "runs in time order"
    );
}
