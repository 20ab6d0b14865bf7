//! The headless outputs under `--metric cpu|off-cpu|wall`, on a synthetic capture with
//! off-CPU data (testkit's `synthetic::off_cpu`): `cpu` ignores the off-CPU records
//! exactly, the other metrics count their periods, text, JSON, folded, SVG and diff split
//! blocked time by state and give nanoseconds as periods × the off-CPU period (pprof and
//! speedscope: `export_off_cpu_pprof.rs`).

mod export_common;
mod off_cpu_common;

use std::collections::BTreeMap;

use hotspot_format::ThreadState;
use hotspot_replay::export::{DiffFormat, ExportError, Format, Scan, Selection, Slice};
use hotspot_replay::metric::{self, Metric, state_frame};
use hotspot_replay::time::TimeSpec;
use hotspot_testkit::synthetic::off_cpu::{self, Config};
use off_cpu_common::*;
use serde_json::Value;

#[test]
fn cpu_outputs_ignore_the_off_cpu_records_exactly() {
    let b = built();
    assert!(!b.off_cpu.is_empty());
    let selections = [
        Selection::default(),
        Selection {
            no_kernel: true,
            ..Selection::default()
        },
        Selection {
            from: Some(TimeSpec::Offset(200_000_000)),
            to: Some(TimeSpec::Offset(700_000_000)),
            tids: vec![hotspot_testkit::synthetic::TIDS[1]],
            ..Selection::default()
        },
    ];
    for sel in &selections {
        for f in Format::ALL {
            let with = render(&b.bytes, sel, f);
            let without = render(&b.cpu_only, sel, f);
            assert!(
                same_but_size(f, &with, &without),
                "{f:?} {sel:?}:\n{}\n---\n{}",
                String::from_utf8_lossy(&with),
                String::from_utf8_lossy(&without)
            );
            // And the same under an explicit `--metric cpu` (the default).
            let explicit = Selection {
                metric: Metric::Cpu,
                ..sel.clone()
            };
            assert!(with == render(&b.bytes, &explicit, f), "{f:?}");
        }
    }
    // The off-CPU metrics really see something else.
    assert_ne!(
        render(&b.bytes, &metric(Metric::Wall), Format::Folded),
        render(&b.bytes, &Selection::default(), Format::Folded)
    );
}

#[test]
fn totals_are_the_periods_the_metric_counts() {
    let b = built();
    let off = off_periods(&b);
    let cpu = b.samples.len() as u64;
    for (m, want) in [
        (Metric::Cpu, cpu),
        (Metric::OffCpu, off),
        (Metric::Wall, cpu + off),
    ] {
        let sel = metric(m);
        let s = scan(&b.bytes, &sel, false);
        let slice = Slice::new(&s, &sel).expect("slice");
        assert_eq!(slice.total, want, "{m}");
        assert_eq!(s.samples, want, "{m}");
        // Whatever the metric, info's counters see every off-CPU sample.
        let seen: u64 = s.counts.off_cpu_seen.values().map(|v| v.1).sum();
        assert_eq!(seen, off);
    }
}

#[test]
fn a_metric_without_off_cpu_data_is_refused_in_one_line() {
    let b = built();
    for m in [Metric::OffCpu, Metric::Wall] {
        let sel = metric(m);
        let s = scan(&b.cpu_only, &sel, false);
        let e = Slice::new(&s, &sel).expect_err("no off-CPU data");
        assert!(matches!(e, ExportError::NoOffCpu(_)), "{e:?}");
        let msg = e.to_string();
        assert!(
            msg.contains("has no off-CPU data: record with --off-cpu"),
            "{msg}"
        );
        assert!(!msg.contains('\n'));
    }
}

#[test]
fn folded_lines_end_in_state_frames_and_count_periods() {
    let b = built();
    let want = periods_by_state(&b);
    for m in [Metric::OffCpu, Metric::Wall] {
        let out = text(&b.bytes, &metric(m), Format::Folded);
        let mut by_state: BTreeMap<ThreadState, u64> = BTreeMap::new();
        let mut on_cpu = 0;
        for line in out.lines() {
            let (stack, n) = line.rsplit_once(' ').expect("count");
            let n: u64 = n.parse().expect("number");
            let leaf = stack.rsplit(';').next().expect("leaf");
            match ThreadState::ALL
                .into_iter()
                .find(|&s| state_frame(s) == leaf)
            {
                Some(s) => *by_state.entry(s).or_default() += n,
                None => on_cpu += n,
            }
        }
        assert_eq!(by_state, want, "{m}");
        let cpu = if m == Metric::Wall {
            b.samples.len() as u64
        } else {
            0
        };
        assert_eq!(on_cpu, cpu, "{m}");
        // The pipe read waits in its function, under the kernel's schedule.
        assert!(
            out.lines().any(|l| l.contains(&format!(
                "fx_read_pipe;schedule;{}",
                state_frame(ThreadState::Sleeping)
            ))),
            "{m}: {out}"
        );
    }
}

#[test]
fn text_names_the_metric_and_gives_time() {
    let b = built();
    let out = text(&b.bytes, &metric(Metric::OffCpu), Format::Text);
    let head = out.lines().next().expect("header");
    let off = off_periods(&b);
    let by = periods_by_state(&b);
    assert!(
        head.contains(&format!("off-CPU time, {off} periods of ")),
        "{head}"
    );
    let states = format!(
        "(S {}, D {}, R {})",
        by[&ThreadState::Sleeping],
        by[&ThreadState::Uninterruptible],
        by[&ThreadState::Runnable]
    );
    assert!(head.contains(&states), "{head}");
    assert!(head.contains("3 off-CPU records lost"), "{head}");
    assert!(out.lines().nth(1).expect("columns").contains("self s"));
    // The S row: its periods and their seconds.
    let row = out
        .lines()
        .find(|l| l.contains(state_frame(ThreadState::Sleeping)))
        .expect("S row");
    let fields: Vec<&str> = row.split_whitespace().collect();
    let n: u64 = fields[1].parse().expect("self");
    assert_eq!(n, by[&ThreadState::Sleeping]);
    let secs: f64 = fields[2].parse().expect("self s");
    let want = n as f64 * b.period_ns as f64 / 1e9;
    assert!((secs - want).abs() < 0.0006, "{secs} vs {want}");
    let wall = text(&b.bytes, &metric(Metric::Wall), Format::Text);
    let head = wall.lines().next().expect("header");
    assert!(
        head.contains(&format!(
            "wall-clock time, {} periods",
            off + b.samples.len() as u64
        )),
        "{head}"
    );
    assert!(
        head.contains(&format!("(CPU {}, S ", b.samples.len())),
        "{head}"
    );
}

#[test]
fn json_gives_nanoseconds_and_splits_by_state() {
    let b = built();
    let p = b.period_ns;
    let cpu_doc: Value =
        serde_json::from_slice(&render(&b.bytes, &Selection::default(), Format::Json))
            .expect("json");
    for key in ["metric", "period_ns"] {
        assert!(cpu_doc.get(key).is_none(), "a cpu document has no {key}");
    }
    assert!(cpu_doc["totals"].get("samples_ns").is_none());
    let by = periods_by_state(&b);
    for m in [Metric::OffCpu, Metric::Wall] {
        let doc: Value =
            serde_json::from_slice(&render(&b.bytes, &metric(m), Format::Json)).expect("json");
        assert_eq!(doc["metric"], m.name());
        assert_eq!(doc["period_ns"], p);
        let t = &doc["totals"];
        let samples = count(&t["samples"]);
        assert_eq!(count(&t["samples_ns"]), samples * p);
        let split = &t["split"];
        for s in ThreadState::ALL {
            let key = s.letter().to_string();
            assert_eq!(count(&split[&key]), by[&s], "{m} {key}");
            assert_eq!(count(&t["split_ns"][&key]), by[&s] * p);
        }
        let cpu = if m == Metric::Wall {
            b.samples.len() as u64
        } else {
            0
        };
        assert_eq!(count(&split["cpu"]), cpu);
        assert_eq!(count(&split["off_cpu"]), off_periods(&b));
        for f in doc["functions"].as_array().expect("an array") {
            let (s, tot) = (count(&f["self"]), count(&f["total"]));
            assert_eq!(count(&f["self_ns"]), s * p);
            assert_eq!(count(&f["total_ns"]), tot * p);
            let ts = &f["total_split"];
            let parts: u64 = ["cpu", "S", "D", "R"].iter().map(|k| count(&ts[k])).sum();
            assert_eq!(parts, tot, "{m}: {f}");
            if let Some(state) = metric::state_of_frame(
                f["module"].as_str().expect("a string"),
                f["name"].as_str().expect("a string"),
            ) {
                assert_eq!(s, by[&state]);
                assert_eq!(count(&ts[&state.letter().to_string()]), s);
            }
        }
        // Per thread: the thread's own off-CPU periods by state.
        for th in doc["threads"].as_array().expect("an array") {
            let tid = count(&th["tid"]) as u32;
            for s in ThreadState::ALL {
                let want: u64 = b
                    .off_cpu
                    .iter()
                    .filter(|o| o.sample.tid == tid && o.state == s)
                    .map(|o| u64::from(o.periods))
                    .sum();
                let key = s.letter().to_string();
                assert_eq!(count(&th["split"][&key]), want, "{tid} {key}");
            }
            let n = count(&th["samples"]);
            assert_eq!(count(&th["samples_ns"]), n * p);
        }
        let root = &doc["tree"][0];
        assert_eq!(count(&root["total"]), samples);
        assert_eq!(count(&root["total_ns"]), samples * p);
    }
}

#[test]
fn svg_names_the_metric_and_colours_states() {
    let b = built();
    let svg = text(&b.bytes, &metric(Metric::OffCpu), Format::Svg);
    assert!(svg.contains("(off-CPU time)"));
    assert!(svg.contains("periods"));
    // Each state frame is filled with its colour.
    for (s, rgb) in [
        (ThreadState::Sleeping, "rgb(90,140,230)"),
        (ThreadState::Uninterruptible, "rgb(220,50,50)"),
        (ThreadState::Runnable, "rgb(240,160,40)"),
    ] {
        let name = state_frame(s);
        let at = svg
            .find(&format!("<title>{name}"))
            .unwrap_or_else(|| panic!("{name}"));
        let rest = &svg[at..];
        let rect = &rest[..rest.find("</g>").expect("the frame's end")];
        assert!(rect.contains(rgb), "{name}: {rect}");
    }
    // Deterministic, as every other output.
    assert_eq!(svg, text(&b.bytes, &metric(Metric::OffCpu), Format::Svg));
}

#[test]
fn diff_compares_both_sides_under_one_metric() {
    let b = built();
    let other = off_cpu::build(&Config {
        base: hotspot_testkit::synthetic::Config {
            seed: 7,
            ..Config::default().base
        },
        ..Config::default()
    });
    let sel = metric(Metric::OffCpu);
    let (sa, sb) = (scan(&b.bytes, &sel, false), scan(&other.bytes, &sel, false));
    let (a, c) = (
        Slice::new(&sa, &sel).expect("slice"),
        Slice::new(&sb, &sel).expect("slice"),
    );
    let out = export_common::diff_out(DiffFormat::Text, &a, &c, None);
    let head = out.lines().next().expect("a header");
    assert!(head.starts_with("off-CPU time; base: "), "{head}");
    assert!(
        head.contains(&format!("({} periods,", off_periods(&b))),
        "{head}"
    );
    assert!(
        head.contains(&format!("({} periods,", off_periods(&other))),
        "{head}"
    );
    let doc: Value = serde_json::from_str(&export_common::diff_out(DiffFormat::Json, &a, &c, None))
        .expect("json");
    assert_eq!(doc["metric"], "off-cpu");
    assert_eq!(count(&doc["base"]["samples"]), off_periods(&b));
    assert_eq!(
        count(&doc["new"]["samples_ns"]),
        off_periods(&other) * other.period_ns
    );
    let folded = export_common::diff_out(DiffFormat::Folded, &a, &c, None);
    let (mut na, mut nb) = (0, 0);
    for line in folded.lines() {
        let mut f = line.rsplitn(3, ' ');
        nb += f.next().expect("a field").parse::<u64>().expect("a count");
        na += f.next().expect("a field").parse::<u64>().expect("a count");
    }
    assert_eq!((na, nb), (off_periods(&b), off_periods(&other)));
    // A CPU diff of the two is the diff of their CPU-only forms.
    let cpu = Selection::default();
    let (ca, cb) = (scan(&b.bytes, &cpu, false), scan(&other.bytes, &cpu, false));
    let (xa, xb) = (
        scan(&b.cpu_only, &cpu, false),
        scan(&other.cpu_only, &cpu, false),
    );
    let (ca, cb) = (
        Slice::new(&ca, &cpu).expect("slice"),
        Slice::new(&cb, &cpu).expect("slice"),
    );
    let (xa, xb) = (
        Slice::new(&xa, &cpu).expect("slice"),
        Slice::new(&xb, &cpu).expect("slice"),
    );
    for f in [DiffFormat::Text, DiffFormat::Json, DiffFormat::Folded] {
        assert_eq!(
            export_common::diff_out(f, &ca, &cb, None),
            export_common::diff_out(f, &xa, &xb, None)
        );
    }
}

/// The documents of every metric against the schemas `docs/json-schema.md` prints.
#[test]
fn documents_match_the_documented_schemas() {
    let b = built();
    let dir = export_common::tmp("off-cpu-schemas");
    let check = |schema: &str, name: &str, doc: &[u8]| {
        let schema_path = dir.join(format!("{schema}.schema.json"));
        std::fs::write(
            &schema_path,
            export_common::documented_schema(schema).to_string(),
        )
        .expect("write schema");
        let path = dir.join(name);
        std::fs::write(&path, doc).expect("write document");
        export_common::ajv_validate(&schema_path, &path);
    };
    for m in Metric::ALL {
        let sel = metric(m);
        check(
            "hotspot-report",
            &format!("report-{m}.json"),
            &render(&b.bytes, &sel, Format::Json),
        );
        let s = scan(&b.bytes, &sel, false);
        let slice = Slice::new(&s, &sel).expect("slice");
        let diff = export_common::diff_out(DiffFormat::Json, &slice, &slice, None);
        check("hotspot-diff", &format!("diff-{m}.json"), diff.as_bytes());
    }
    for (name, bytes) in [("with", &b.bytes), ("without", &b.cpu_only)] {
        let options = hotspot_replay::export::ScanOptions {
            measure_sizes: true,
            ..Default::default()
        };
        let s = Scan::from_bytes(bytes, options, &mut |_, _| {}).expect("scan");
        let doc = hotspot_replay::info::scan_json(&s);
        check("hotspot-info", &format!("info-{name}.json"), doc.as_bytes());
    }
}
