//! End-to-end tests of how Python frames read (issue 26), with the real BPF program, on
//! every CPython 3.8–3.13 pyenv has installed and Debian's `/usr/bin/python3`; scripts in
//! `tests/python_views_e2e/`:
//! - the line of each sampled Python frame is CPython's own answer: every line of the hot
//!   function is one `dis.findlinestarts` (and, from 3.11, `co_positions()`) gives its
//!   code, spread over the loop's statements, and its caller's line is the line `dis`
//!   gives the one instruction the caller can be at (the call);
//! - off-CPU, a thread blocked reading a pipe shows the Python line of the read; a thread
//!   hashing in a C extension that released the GIL keeps its Python frames above the
//!   extension's native ones;
//! - `info --json` lists the interpreter as walked, and `report --no-interpreter` charges
//!   the interpreter's frames to the Python frames that called them.
//!
//! They need root (CAP_BPF + CAP_PERFMON) and the interpreters; without them they fail
//! naming what is missing, never skip.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hotspot_format::ThreadState;
use hotspot_replay::Capture;
use hotspot_replay::names::FrameName;
use hotspot_replay::profile::{self, Filter};
use hotspot_testkit::e2e::{hotspot, record_cmd, tmp};
use serde_json::Value;

/// The module Python frames are in.
const PYTHON: &str = "[python]";

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/python_views_e2e")
        .join(name)
}

/// The line of `script` that holds `text` (1-based).
fn line_of(name: &str, text: &str) -> u32 {
    let src = std::fs::read_to_string(script(name)).expect("script");
    let at = src
        .lines()
        .position(|l| l.contains(text))
        .unwrap_or_else(|| panic!("{name} has no line with {text:?}"));
    at as u32 + 1
}

/// pyenv's interpreters 3.8–3.13 and Debian's, by name: each must be installed. (As in
/// `tests/python_e2e.rs`: a test target of its own, to keep merges apart.)
fn interpreters() -> Vec<(String, PathBuf)> {
    let root = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pyenv")))
        .expect("PYENV_ROOT or HOME");
    let versions = std::fs::read_dir(root.join("versions"))
        .unwrap_or_else(|e| panic!("{}/versions: {e}: install pyenv's CPythons", root.display()));
    let names: Vec<String> = versions
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    let mut found = Vec::new();
    for minor in 8..=13 {
        let prefix = format!("3.{minor}.");
        let version = names
            .iter()
            .filter(|n| n.starts_with(&prefix))
            .max()
            .unwrap_or_else(|| panic!("no pyenv CPython 3.{minor}: `pyenv install 3.{minor}`"));
        let exe = root
            .join("versions")
            .join(version)
            .join(format!("bin/python3.{minor}"));
        assert!(exe.exists(), "{} is missing", exe.display());
        found.push((version.clone(), exe));
    }
    let debian = PathBuf::from("/usr/bin/python3");
    assert!(debian.exists(), "Debian's /usr/bin/python3 is missing");
    found.push(("debian".to_string(), debian));
    found
}

fn is_python(f: &FrameName) -> bool {
    &*f.module == PYTHON
}

/// The samples of thread `tid`, by stack of names (root first).
fn thread_stacks(c: &Capture, tid: u32) -> BTreeMap<Vec<FrameName>, u64> {
    let filter = Filter {
        tids: Some([tid].into_iter().collect()),
        ..Filter::default()
    };
    profile::fold(c, &filter).stacks
}

fn json_of(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e} (the script did not finish)", path.display()));
    serde_json::from_str(&text).expect("the script's JSON")
}

fn lines(v: &Value) -> Vec<u32> {
    v.as_array()
        .expect("a list of lines")
        .iter()
        .map(|l| l.as_u64().expect("a line") as u32)
        .collect()
}

/// `hotspot ARGS` as JSON.
fn hotspot_json(args: &[&str]) -> Value {
    let out = hotspot().args(args).output().expect("hotspot runs");
    assert!(
        out.status.success(),
        "hotspot {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[test]
fn python_lines_are_cpythons_own_answer_on_every_interpreter() {
    let d = tmp();
    let body = line_of("lines.py", "for i in range(n):")..=line_of("lines.py", "total = total %");
    let statements = [
        line_of("lines.py", "total += i * i % 7"),
        line_of("lines.py", "total ^= (i << 3)"),
        line_of("lines.py", "total = total %"),
    ];
    for (version, exe) in interpreters() {
        let cap = d.path().join(format!("{version}.hsp"));
        let table_path = d.path().join(format!("{version}.json"));
        let c = record_cmd(
            &cap,
            &[],
            &[
                &exe.display().to_string(),
                &script("lines.py").display().to_string(),
                &table_path.display().to_string(),
            ],
        );
        let table = json_of(&table_path);
        let starts = lines(&table["line_starts"]);
        let positions = (!table["positions"].is_null()).then(|| lines(&table["positions"]));
        let call_line = table["call_line"].as_u64().expect("call_line") as u32;
        let tid = table["tid"].as_u64().expect("tid") as u32;
        let first_line = table["first_line"].as_u64().expect("first_line") as u32;
        let (mut in_hot, mut callers, mut at_entry) = (0u64, 0u64, 0u64);
        let mut per_line: BTreeMap<u32, u64> = BTreeMap::new();
        for (stack, n) in thread_stacks(&c, tid) {
            let py: Vec<&FrameName> = stack.iter().filter(|f| is_python(f)).collect();
            let Some(leaf) = py.last() else { continue };
            if &*leaf.function != "hot" {
                continue;
            }
            in_hot += n;
            *per_line.entry(leaf.line).or_default() += n;
            // A frame sampled before its first instruction ran (`f_lasti` -1 on 3.8-3.10,
            // where no line start is the `def` line): CPython's own answer for it, by
            // PyCode_Addr2Line and `frame.f_lineno`, is co_firstlineno.
            if leaf.line == first_line && !starts.contains(&leaf.line) {
                at_entry += n;
                continue;
            }
            assert!(
                starts.contains(&leaf.line),
                "{version}: hot() at line {} ({n} samples), which dis.findlinestarts does not \
                 give its code: {starts:?}",
                leaf.line
            );
            if let Some(p) = &positions {
                assert!(
                    p.contains(&leaf.line),
                    "{version}: hot() at line {}, not a line of co_positions(): {p:?}",
                    leaf.line
                );
            }
            let caller = py[py.len().saturating_sub(2)];
            if py.len() >= 2 && &*caller.function == "main" {
                callers += n;
                assert_eq!(
                    caller.line, call_line,
                    "{version}: main() calling hot() is at its CALL instruction's line"
                );
            }
        }
        assert!(in_hot >= 200, "{version}: only {in_hot} samples in hot()");
        assert!(
            at_entry as f64 <= 0.02 * in_hot as f64,
            "{version}: {at_entry} of {in_hot} samples of hot() before its first instruction"
        );
        assert!(
            callers as f64 >= 0.95 * in_hot as f64,
            "{version}: {callers} of {in_hot} samples of hot() under main()"
        );
        let in_body: u64 = per_line
            .iter()
            .filter(|(l, _)| body.contains(l))
            .map(|(_, n)| n)
            .sum();
        assert!(
            in_body as f64 >= 0.95 * in_hot as f64,
            "{version}: {in_body} of {in_hot} samples of hot() in its loop: {per_line:?}"
        );
        for l in statements {
            let n = per_line.get(&l).copied().unwrap_or(0);
            assert!(
                n as f64 >= 0.05 * in_hot as f64,
                "{version}: line {l} of the loop has {n} of {in_hot} samples: {per_line:?}"
            );
        }

        // The same capture through the binary: info --json lists the interpreter, walked;
        // --no-interpreter moves time from the interpreter's frames to the Python ones.
        let cap = cap.display().to_string();
        let info = hotspot_json(&["info", &cap, "--json"]);
        let walked = info["interpreters"]
            .as_array()
            .unwrap_or_else(|| panic!("{version}: info --json lists no interpreters"))
            .iter()
            .find(|p| p["status"] == "walked" && p["merged"].as_u64() > Some(0))
            .cloned();
        assert!(walked.is_some(), "{version}: {}", info["interpreters"]);
        let tid = tid.to_string();
        let of_kind = |doc: &Value, kind: &str| -> u64 {
            doc["functions"]
                .as_array()
                .expect("functions")
                .iter()
                .filter(|f| f["kind"] == kind)
                .map(|f| f["self"].as_u64().expect("self"))
                .sum()
        };
        let shown = hotspot_json(&["report", &cap, "--format", "json", "--tid", &tid]);
        let hidden = hotspot_json(&[
            "report",
            &cap,
            "--format",
            "json",
            "--tid",
            &tid,
            "--no-interpreter",
        ]);
        assert!(of_kind(&shown, "python") > 0, "{version}: no python kind");
        let all_self = |doc: &Value| -> u64 {
            doc["functions"]
                .as_array()
                .expect("functions")
                .iter()
                .map(|f| f["self"].as_u64().expect("self"))
                .sum()
        };
        assert_eq!(
            all_self(&hidden),
            all_self(&shown),
            "{version}: the hidden frames' time went to other frames, none lost"
        );
        assert!(
            of_kind(&hidden, "interpreter") <= of_kind(&shown, "interpreter"),
            "{version}: --no-interpreter left more time in the interpreter's frames"
        );
        assert!(
            of_kind(&hidden, "python") >= of_kind(&shown, "python"),
            "{version}: --no-interpreter moved no time to Python frames"
        );
        assert_eq!(
            hidden["totals"]["samples"], shown["totals"]["samples"],
            "{version}: no sample lost"
        );
        assert_eq!(hidden["selection"]["no_interpreter"], true);
    }
}

#[test]
fn a_blocked_reader_and_a_hasher_without_the_gil_keep_their_python_lines() {
    let d = tmp();
    let read_line = line_of("blocked.py", "os.read(r, 1)");
    let hash_line = line_of("blocked.py", "hashlib.sha256(data)");
    for (version, exe) in interpreters() {
        let cap = d.path().join(format!("{version}.hsp"));
        let tids_path = d.path().join(format!("{version}.json"));
        let c = record_cmd(
            &cap,
            &["--off-cpu"],
            &[
                &exe.display().to_string(),
                &script("blocked.py").display().to_string(),
                &tids_path.display().to_string(),
            ],
        );
        let tids = json_of(&tids_path);
        let tid = |name: &str| tids[name].as_u64().expect("tid") as u32;

        // The reader, off the CPU in S: reader() at its os.read line, native frames (the
        // interpreter's read, libc, the kernel) above it.
        let mut names = profile::StackNames::default();
        let (mut asleep, mut at_read) = (0u64, 0u64);
        for o in &c.off_cpu_samples {
            if o.sample.tid != tid("reader") || o.state != ThreadState::Sleeping {
                continue;
            }
            let Some(s) = names.get(&c, o.sample.stack) else {
                continue;
            };
            asleep += u64::from(o.periods);
            if let Some(at) = s.iter().rposition(is_python)
                && &*s[at].function == "reader"
                && s[at].line == read_line
                && s[at + 1..].iter().any(|f| !is_python(f))
            {
                at_read += u64::from(o.periods);
            }
        }
        assert!(
            asleep > 100,
            "{version}: the reader slept only {asleep} periods"
        );
        assert!(
            at_read as f64 >= 0.9 * asleep as f64,
            "{version}: {at_read} of {asleep} periods asleep under reader() at line {read_line}"
        );

        // The hasher, on the CPU in the C extension with the GIL released: hasher() at its
        // hashing line, the extension's native frames above it.
        let (mut samples, mut at_hash, mut in_c) = (0u64, 0u64, 0u64);
        for (stack, n) in thread_stacks(&c, tid("hasher")) {
            samples += n;
            let Some(at) = stack.iter().rposition(is_python) else {
                continue;
            };
            if &*stack[at].function == "hasher" && stack[at].line == hash_line {
                at_hash += n;
                if stack[at + 1..].iter().any(|f| !is_python(f)) {
                    in_c += n;
                }
            }
        }
        assert!(
            samples >= 50,
            "{version}: only {samples} samples of the hasher"
        );
        assert!(
            at_hash as f64 >= 0.9 * samples as f64,
            "{version}: {at_hash} of {samples} hasher samples under hasher() at line {hash_line}"
        );
        assert!(
            in_c as f64 >= 0.8 * samples as f64,
            "{version}: {in_c} of {samples} hasher samples in native code under hasher()"
        );
    }
}
