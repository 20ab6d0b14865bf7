//! `report --format pprof` and `speedscope` under `--metric off-cpu|wall`: pprof's four
//! sample types with every sample carrying all four values and off-CPU samples ending in
//! their state's location (read back, and by `go tool pprof`), speedscope's weights in
//! nanoseconds (and its schema, with ajv).

mod export_common;
mod off_cpu_common;

use std::collections::BTreeMap;
use std::io::Read;

use hotspot_format::ThreadState;
use hotspot_replay::export::{Format, pprof};
use hotspot_replay::metric::{Metric, OFF_CPU_MODULE, state_frame};
use off_cpu_common::*;
use serde_json::Value;

fn decode_pprof(bytes: &[u8]) -> pprof::Profile {
    let mut raw = Vec::new();
    flate2_decode(bytes, &mut raw);
    prost::Message::decode(raw.as_slice()).expect("profile")
}

fn flate2_decode(bytes: &[u8], out: &mut Vec<u8>) {
    let mut gz = flate2::read::GzDecoder::new(bytes);
    gz.read_to_end(out).expect("gunzip");
}

#[test]
fn pprof_samples_carry_four_values_and_state_leaves() {
    let b = built();
    let p = b.period_ns as i64;
    let by = periods_by_state(&b);
    for m in [Metric::OffCpu, Metric::Wall] {
        let prof = decode_pprof(&render(&b.bytes, &metric(m), Format::Pprof));
        let s = |i: i64| prof.string_table[i as usize].as_str();
        let types: Vec<(&str, &str)> = prof
            .sample_type
            .iter()
            .map(|t| (s(t.r#type), s(t.unit)))
            .collect();
        assert_eq!(
            types,
            [
                ("samples", "count"),
                ("cpu", "nanoseconds"),
                ("off_cpu", "nanoseconds"),
                ("wall", "nanoseconds")
            ]
        );
        let preferred = if m == Metric::Wall { "wall" } else { "off_cpu" };
        assert_eq!(s(prof.default_sample_type), preferred);
        assert_eq!(prof.period, p);
        let function_of = |loc: u64| {
            let l = &prof.location[loc as usize - 1];
            let f = &prof.function[l.line[0].function_id as usize - 1];
            (s(f.name).to_string(), s(f.filename).to_string())
        };
        let mut off_by_state: BTreeMap<String, i64> = BTreeMap::new();
        let mut cpu_ns = 0;
        for sample in &prof.sample {
            let v = &sample.value;
            assert_eq!(v.len(), 4);
            assert_eq!(v[3], v[0] * p, "wall = periods × period");
            assert_eq!(v[1] + v[2], v[3], "cpu + off-CPU = wall");
            cpu_ns += v[1];
            let state = sample
                .label
                .iter()
                .find(|l| s(l.key) == "state")
                .map(|l| s(l.str).to_string());
            let (leaf, module) = function_of(sample.location_id[0]);
            match state {
                Some(letter) => {
                    assert_eq!(v[1], 0);
                    let st = ThreadState::ALL
                        .into_iter()
                        .find(|x| x.letter().to_string() == letter)
                        .expect("a state letter");
                    assert_eq!(leaf, state_frame(st));
                    assert_eq!(module, OFF_CPU_MODULE);
                    *off_by_state.entry(letter).or_default() += v[2];
                }
                None => {
                    assert_eq!(v[2], 0);
                    assert!(!leaf.starts_with("[off-CPU"));
                }
            }
        }
        let want: BTreeMap<String, i64> = by
            .iter()
            .map(|(s, n)| (s.letter().to_string(), *n as i64 * p))
            .collect();
        assert_eq!(off_by_state, want, "{m}");
        let want_cpu = if m == Metric::Wall {
            b.samples.len() as i64 * p
        } else {
            0
        };
        assert_eq!(cpu_ns, want_cpu);
    }
}

/// `go tool pprof` (Debian's golang-go, which `.ci/run` installs) reads the four sample
/// types, and its totals per type are ours.
#[test]
fn go_tool_pprof_reads_every_sample_type() {
    let b = built();
    let dir = export_common::tmp("off-cpu-pprof");
    let file = dir.join("wall.pb.gz");
    std::fs::write(
        &file,
        render(&b.bytes, &metric(Metric::Wall), Format::Pprof),
    )
    .expect("write the profile");
    let p = b.period_ns;
    let off = off_periods(&b);
    let cpu = b.samples.len() as u64;
    for (index, want_ns) in [
        ("cpu", cpu * p),
        ("off_cpu", off * p),
        ("wall", (cpu + off) * p),
    ] {
        let out = export_common::run(
            std::process::Command::new("go")
                .args(["tool", "pprof", "-raw"])
                .arg(format!("-sample_index={index}"))
                .arg(&file)
                .env("HOME", &dir)
                .env("PPROF_TMPDIR", &dir),
        );
        let raw = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            raw.contains("samples/count cpu/nanoseconds off_cpu/nanoseconds wall/nanoseconds"),
            "{raw}"
        );
        // -raw lists each sample as "values: location ids"; sum the chosen column.
        let column = ["samples", "cpu", "off_cpu", "wall"]
            .iter()
            .position(|c| *c == index)
            .expect("a sample type");
        let mut total = 0u64;
        let mut in_samples = false;
        for line in raw.lines() {
            if line.starts_with("Samples:") {
                in_samples = true;
                continue;
            }
            if line.starts_with("Locations") {
                break;
            }
            if !in_samples {
                continue;
            }
            if let Some((values, _)) = line.split_once(':') {
                let v: Vec<u64> = values
                    .split_whitespace()
                    .filter_map(|x| x.parse().ok())
                    .collect();
                if v.len() == 4 {
                    total += v[column];
                }
            }
        }
        assert_eq!(total, want_ns, "{index}");
    }
}

#[test]
fn speedscope_weights_are_nanoseconds() {
    let b = built();
    let p = b.period_ns;
    for (m, periods) in [
        (Metric::OffCpu, off_periods(&b)),
        (Metric::Wall, off_periods(&b) + b.samples.len() as u64),
    ] {
        let bytes = render(&b.bytes, &metric(m), Format::Speedscope);
        let dir = export_common::tmp(&format!("off-cpu-speedscope-{m}"));
        let path = dir.join("profile.speedscope.json");
        std::fs::write(&path, &bytes).expect("write");
        export_common::ajv_validate(
            &export_common::npm_modules().join("speedscope/dist/release/file-format-schema.json"),
            &path,
        );
        let doc: Value = serde_json::from_slice(&bytes).expect("json");
        assert!(
            doc["name"]
                .as_str()
                .expect("present")
                .ends_with(&format!("({} time)", m.label()))
        );
        let frames = doc["shared"]["frames"].as_array().expect("an array");
        let mut sum = 0;
        let mut state_weight = 0;
        for prof in doc["profiles"].as_array().expect("an array") {
            assert_eq!(prof["unit"], "nanoseconds");
            let weights: Vec<u64> = prof["weights"]
                .as_array()
                .expect("present")
                .iter()
                .map(count)
                .collect();
            assert_eq!(count(&prof["endValue"]), weights.iter().sum::<u64>());
            for (w, stack) in weights
                .iter()
                .zip(prof["samples"].as_array().expect("an array"))
            {
                assert_eq!(w % p, 0, "a weight is whole periods");
                let leaf = stack
                    .as_array()
                    .expect("an array")
                    .last()
                    .and_then(Value::as_u64)
                    .expect("a leaf index");
                let name = frames[leaf as usize]["name"].as_str().expect("a string");
                if name.starts_with("[off-CPU: ") {
                    state_weight += w;
                }
            }
            sum += weights.iter().sum::<u64>();
        }
        assert_eq!(sum, periods * p, "{m}");
        assert_eq!(state_weight, off_periods(&b) * p, "{m}");
    }
}
