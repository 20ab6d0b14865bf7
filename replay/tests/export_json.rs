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

/// A capture of a Python process (format 1.5): `main → <module> → Worker.run →
/// _PyEval_Vector` (libpython, the walked interpreter's image) and `main → Py_RunMain`, a
/// walked interpreter with its counts and one that was not walked.
fn python_capture() -> Vec<u8> {
    use hotspot_format::{
        Frame, FrameAddr, InterpreterModule, InterpreterProcess, InterpreterRole,
        InterpreterStatus, Language, Module, ModuleKind, Process, Record, Sample, SessionHeader,
        SourceLoc, Stack, Symbol, Thread, Writer,
    };
    const START: u64 = 1_000_000_000;
    let session = SessionHeader {
        host: "vm".into(),
        freq_hz: 100,
        targets: vec![40],
        start_mono_ns: START,
        ..SessionHeader::default()
    };
    let mut w = Writer::new(Vec::new(), session).expect("writer");
    let mut push = |r: Record| w.push(r).expect("push");
    for (id, path) in [
        (0, "/usr/bin/python3.11"),
        (1, "/usr/lib/libpython3.11.so.1.0"),
        (2, "[python]"),
    ] {
        push(Record::Module(Module {
            id,
            kind: ModuleKind::Elf,
            path: path.into(),
            build_id: vec![],
        }));
    }
    push(Record::InterpreterModule(InterpreterModule {
        module: 2,
        language: Language::Python,
        role: InterpreterRole::Frames,
    }));
    for (pid, path, status, merged) in [
        (
            40,
            "/usr/lib/libpython3.11.so.1.0",
            InterpreterStatus::Walked,
            9,
        ),
        (
            41,
            "/opt/python3.14t",
            InterpreterStatus::Unsupported {
                reason: "free-threaded build".into(),
            },
            0,
        ),
    ] {
        push(Record::InterpreterProcess(InterpreterProcess {
            pid,
            start_ns: START,
            language: Language::Python,
            path: path.into(),
            version: "3.11".into(),
            status,
            samples: merged + 1,
            merged,
            without_frames: 1,
            ..InterpreterProcess::default()
        }));
    }
    let names = [
        "main",
        "Py_RunMain",
        "_PyEval_Vector",
        "<module>",
        "Worker.run",
        "/srv/app.py",
    ];
    for (i, n) in names.iter().enumerate() {
        push(Record::String {
            id: 1 + i as u32,
            text: (*n).into(),
        });
    }
    // (frame, module, string, line)
    for (id, module, string, line) in [
        (0, 0, 1, 0),
        (1, 1, 2, 0),
        (2, 1, 3, 0),
        (3, 2, 4, 3),
        (4, 2, 5, 12),
    ] {
        push(Record::Frame(Frame {
            id,
            module,
            addr: FrameAddr::FileOffset(u64::from(id)),
        }));
        push(Record::Symbol(Symbol {
            frame: id,
            function: string,
            loc: SourceLoc {
                file: (module == 2).then_some(6),
                line,
            },
            ..Symbol::default()
        }));
    }
    push(Record::Stack(Stack {
        id: 0,
        frames: vec![2, 4, 3, 1, 0],
    }));
    push(Record::Stack(Stack {
        id: 1,
        frames: vec![1, 0],
    }));
    push(Record::Process(Process {
        pid: 40,
        name: "python3.11".into(),
        start_ns: START,
        ..Process::default()
    }));
    push(Record::Thread(Thread {
        tid: 40,
        pid: 40,
        name: "python3.11".into(),
        time_ns: START,
    }));
    for i in 0..10 {
        w.push_sample(Sample {
            time_ns: START + i * 10_000_000,
            tid: 40,
            cpu: 0,
            stack: u32::from(i == 9),
        })
        .expect("sample");
    }
    w.finish(0, START + 100_000_000, 0).expect("finish")
}

/// A Python capture's documents hold to their schemas: `info --json`'s interpreters (each
/// process, walked or not, and how its frames fared), the report's and the diff's `kind`
/// (`python`, `interpreter`) and `no_interpreter`; and `--no-interpreter` charges the
/// interpreter's leaf frame under `Worker.run` to it.
#[test]
fn python_documents_match_their_schemas() {
    use hotspot_replay::export::ScanOptions;
    let bytes = python_capture();
    let scan = |selection: &Selection, sizes: bool| {
        let options = ScanOptions {
            measure_sizes: sizes,
            ..selection.scan_options(false)
        };
        hotspot_replay::export::Scan::from_bytes(&bytes, options, &mut |_, _| {}).expect("scan")
    };
    let info = hotspot_replay::info::scan_json(&scan(&Selection::default(), true));
    let doc: Value = serde_json::from_str(&info).expect("info json");
    let interpreters = doc["interpreters"].as_array().expect("interpreters");
    assert_eq!(interpreters.len(), 2, "{info}");
    let walked = &interpreters[0];
    assert_eq!(walked["pid"], 40);
    assert_eq!(walked["name"], "python3.11");
    assert_eq!(walked["status"], "walked");
    assert_eq!(walked["reason"], Value::Null);
    assert_eq!(walked["path"], "/usr/lib/libpython3.11.so.1.0");
    assert_eq!(
        (walked["samples"].as_u64(), walked["merged"].as_u64()),
        (Some(10), Some(9))
    );
    assert_eq!(interpreters[1]["status"], "unsupported");
    assert_eq!(interpreters[1]["reason"], "free-threaded build");
    validate("python_info_schema", "hotspot-info", &[("info.json", info)]);

    let mut reports = Vec::new();
    for no_interpreter in [false, true] {
        let selection = Selection {
            no_interpreter,
            ..Selection::default()
        };
        let s = scan(&selection, false);
        let slice = Slice::new(&s, &selection).expect("slice");
        let report = out(Format::Json, &slice, None);
        let doc: Value = serde_json::from_str(&report).expect("report json");
        let function = |name: &str| {
            doc["functions"]
                .as_array()
                .expect("functions")
                .iter()
                .find(|f| f["name"] == name)
                .cloned()
        };
        let run = function("Worker.run").expect("Worker.run");
        assert_eq!(run["kind"], "python");
        assert_eq!(run["module"], "[python]");
        assert_eq!(run["file"], "/srv/app.py");
        assert_eq!(run["line"], 12);
        // Its nine samples, which ran in the interpreter's frame above it unless hidden.
        assert_eq!(run["self"], if no_interpreter { 9 } else { 0 });
        assert_eq!(function("_PyEval_Vector").is_none(), no_interpreter);
        if let Some(eval) = function("_PyEval_Vector") {
            assert_eq!(eval["kind"], "interpreter");
        }
        // The interpreter starting, with no Python frame on its stack, stays.
        assert_eq!(function("Py_RunMain").expect("Py_RunMain")["self"], 1);
        assert_eq!(doc["selection"]["no_interpreter"], no_interpreter);
        let diff = diff_out(DiffFormat::Json, &slice, &slice, None);
        reports.push((format!("report-{no_interpreter}.json"), report, diff));
    }
    let docs: Vec<(&str, String)> = reports
        .iter()
        .map(|(n, r, _)| (n.as_str(), r.clone()))
        .collect();
    validate("python_report_schema", "hotspot-report", &docs);
    let diffs: Vec<(&str, String)> = reports
        .iter()
        .map(|(n, _, d)| (n.as_str(), d.clone()))
        .collect();
    validate("python_diff_schema", "hotspot-diff", &diffs);
}
