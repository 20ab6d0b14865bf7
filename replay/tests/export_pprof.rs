//! `report --format pprof` read by a real consumer: `go tool pprof -top` (Debian's
//! golang-go) lists the same functions with the same counts as `hotspot report`; and the
//! profile's own fields (sample types, period, mappings with build-ids) are as documented.

mod export_common;

use std::collections::BTreeMap;
use std::io::Read;
use std::process::Command;

use export_common::{run, scan, tmp, with_slice};
use hotspot_replay::export::{ExportOptions, Format, Selection, pprof};

/// `go tool pprof -top` rows: function name → (flat, cum) in samples.
fn pprof_top(
    file: &std::path::Path,
    home: &std::path::Path,
) -> (u64, BTreeMap<String, (u64, u64)>) {
    let out = run(Command::new("go")
        .args([
            "tool",
            "pprof",
            "-top",
            "-sample_index=samples",
            "-symbolize=none",
        ])
        .args(["-nodecount=100000", "-nodefraction=0", "-edgefraction=0"])
        .arg(file)
        .env("HOME", home)
        .env("PPROF_TMPDIR", home));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let total = text
        .lines()
        .find_map(|l| l.split("Total samples = ").nth(1))
        .and_then(|t| t.split_whitespace().next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no total in pprof output:\n{text}"));
    let mut rows = BTreeMap::new();
    let mut in_table = false;
    for line in text.lines() {
        if line.trim_start().starts_with("flat") {
            in_table = true;
            continue;
        }
        if !in_table {
            continue;
        }
        // flat flat% sum% cum cum% name (the name may contain spaces)
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 6 {
            continue;
        }
        let flat: u64 = fields[0].parse().expect("flat");
        let cum: u64 = fields[3].parse().expect("cum");
        rows.insert(fields[5..].join(" "), (flat, cum));
    }
    (total, rows)
}

#[test]
fn go_tool_pprof_agrees_with_the_report() {
    for name in ["split7030.hsp", "phased-report.hsp"] {
        for no_kernel in [false, true] {
            let sel = Selection {
                no_kernel,
                ..Selection::default()
            };
            let dir = tmp(&format!("pprof-{name}-{no_kernel}"));
            let file = dir.join("profile.pb.gz");
            let (total, rows) = with_slice(name, &sel, false, |s| {
                std::fs::write(
                    &file,
                    Format::Pprof
                        .render(s, &ExportOptions::default())
                        .expect("encode"),
                )
                .expect("write");
                (s.total, s.flat())
            });
            let (pprof_total, pprof_rows) = pprof_top(&file, &dir);
            assert_eq!(pprof_total, total, "{name}: total samples");
            // pprof merges functions by name; compare the names that are unique here.
            let mut count: BTreeMap<&str, usize> = BTreeMap::new();
            for r in &rows {
                *count.entry(&*r.key.function).or_default() += 1;
            }
            let mut compared = 0;
            for r in rows.iter().filter(|r| count[&*r.key.function] == 1) {
                let got = pprof_rows.get(&*r.key.function).copied();
                assert_eq!(
                    got,
                    Some((r.self_samples, r.total_samples)),
                    "{name} (no_kernel {no_kernel}): {} flat/cum",
                    r.key.function
                );
                compared += 1;
            }
            assert!(compared >= 8, "{name}: compared only {compared} functions");
            // The top functions by self samples, in order, are the same.
            let ours: Vec<&str> = rows.iter().take(3).map(|r| &*r.key.function).collect();
            let mut theirs: Vec<(&String, &(u64, u64))> = pprof_rows.iter().collect();
            theirs.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            let theirs: Vec<&str> = theirs.iter().take(3).map(|(n, _)| n.as_str()).collect();
            assert_eq!(ours, theirs, "{name}: top 3");
        }
    }
}

#[test]
fn profile_fields_are_as_documented() {
    let sel = Selection::default();
    let s = scan("split7030.hsp", &sel, false);
    let slice = hotspot_replay::export::Slice::new(&s, &sel).expect("slice");
    let gz = Format::Pprof
        .render(&slice, &ExportOptions::default())
        .expect("encode");
    assert_eq!(&gz[..2], &[0x1f, 0x8b], "gzip magic");
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut raw)
        .expect("gunzip");
    let p: pprof::Profile = prost::Message::decode(&raw[..]).expect("decode");
    let st = |i: i64| p.string_table[i as usize].as_str();
    assert_eq!(st(0), "");
    let types: Vec<(&str, &str)> = p
        .sample_type
        .iter()
        .map(|t| (st(t.r#type), st(t.unit)))
        .collect();
    assert_eq!(types, [("samples", "count"), ("cpu", "nanoseconds")]);
    let period_type = p.period_type.as_ref().expect("period type");
    assert_eq!(
        (st(period_type.r#type), st(period_type.unit)),
        ("cpu", "nanoseconds")
    );
    assert_eq!(p.period, 2_004_008, "1e9 / 499 Hz");
    let total: i64 = p.sample.iter().map(|s| s.value[0]).sum();
    assert_eq!(total as u64, slice.total);
    for smp in &p.sample {
        assert_eq!(smp.value[1], smp.value[0] * p.period);
    }
    // The profiled executable comes first, with the build-id the capture recorded.
    let first = &p.mapping[0];
    assert!(
        st(first.filename).ends_with("/split7030"),
        "{}",
        st(first.filename)
    );
    let module = s
        .capture
        .modules
        .values()
        .find(|m| m.path == st(first.filename))
        .expect("module");
    let hex: String = module.build_id.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(st(first.build_id), hex);
    assert_eq!(hex.len(), 40, "sha1 build-id");
    assert!(first.has_functions && first.has_line_numbers);
    // Locations name functions with file:line.
    let f = p
        .function
        .iter()
        .find(|f| st(f.name) == "hot_leaf")
        .expect("hot_leaf");
    assert!(st(f.filename).ends_with("split7030.c"));
    assert!(
        p.location
            .iter()
            .any(|l| l.line.iter().any(|x| x.function_id == f.id && x.line > 0))
    );
}

/// The `File:` line `go tool pprof -top` heads a profile with: the first mapping's file.
fn pprof_file_line(file: &std::path::Path, home: &std::path::Path) -> String {
    let out = run(Command::new("go")
        .args(["tool", "pprof", "-top", "-symbolize=none"])
        .arg(file)
        .env("HOME", home)
        .env("PPROF_TMPDIR", home));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix("File: "))
        .unwrap_or_else(|| panic!("no File: line in pprof output:\n{text}"))
        .to_string()
}

#[test]
fn the_first_mapping_is_the_program_not_the_kernel() {
    // (capture, its main executable)
    let cases = [
        ("split7030.hsp", "split7030"),
        ("python3-threads.hsp", "python3.11"),
    ];
    for (name, program) in cases {
        // As recorded, and as if every process had ended before the recorder read its
        // executable (the profile must then find the program from the samples).
        for forget_exes in [false, true] {
            let sel = Selection::default();
            let mut s = scan(name, &sel, false);
            if forget_exes {
                for p in s.capture.processes.values_mut() {
                    p.exe.clear();
                }
            }
            let slice = hotspot_replay::export::Slice::new(&s, &sel).expect("slice");
            let p = pprof::profile(&slice);
            let first = p.mapping.first().expect("a mapping");
            let file = &p.string_table[first.filename as usize];
            assert!(
                !file.contains("kernel") && !file.starts_with('['),
                "{name} (exes forgotten: {forget_exes}): first mapping {file}"
            );
            assert!(
                file.ends_with(&format!("/{program}")),
                "{name} (exes forgotten: {forget_exes}): first mapping {file}, not {program}"
            );
            let dir = tmp(&format!("pprof-file-{name}-{forget_exes}"));
            let out = dir.join("profile.pb.gz");
            std::fs::write(
                &out,
                Format::Pprof
                    .render(&slice, &ExportOptions::default())
                    .expect("encode"),
            )
            .expect("write");
            assert_eq!(pprof_file_line(&out, &dir), program, "{name}");
        }
    }
}
