//! End-to-end tests of CFI unwinding (`--call-graph dwarf`, the default) with the real BPF
//! program on real processes: programs built without frame pointers, a frameless leaf, a
//! signal handler, Debian's python3, CPython 3.12's perf trampolines, stacks deeper than
//! the copy. Root is needed (CAP_BPF + CAP_PERFMON); without it they fail, never skip.

mod common;

use std::path::{Path, PathBuf};

use hotspot_replay::Capture;
use hotspot_replay::profile::{self, Filter};

use hotspot_testkit::e2e::{hotspot, record_cmd, run_ok, tmp};

/// `hotspot record [extra] -o OUT -- argv` and the capture it wrote.
fn record(out: &Path, extra: &[&str], argv: &[&str]) -> Capture {
    record_cmd(out, extra, argv)
}

/// Stacks as function names, root first, with their sample counts.
type Stacks = Vec<(Vec<String>, u64)>;

fn stacks(c: &Capture) -> Stacks {
    profile::fold(c, &Filter::default())
        .stacks
        .into_iter()
        .map(|(k, n)| (k.into_iter().map(|f| f.function.to_string()).collect(), n))
        .collect()
}

fn total(s: &Stacks) -> u64 {
    s.iter().map(|(_, n)| n).sum()
}

/// Samples whose stack satisfies `pred`.
fn count(s: &Stacks, pred: impl Fn(&[String]) -> bool) -> u64 {
    s.iter().filter(|(f, _)| pred(f)).map(|(_, n)| n).sum()
}

fn rooted_at(f: &[String], root: &str) -> bool {
    f.first().is_some_and(|r| r == root)
}

/// `chain` (root to leaf) appears as consecutive frames.
fn has_chain(f: &[String], chain: &[&str]) -> bool {
    f.windows(chain.len())
        .any(|w| w.iter().zip(chain).all(|(a, b)| a == b))
}

fn leaf_is(f: &[String], leaf: &str) -> bool {
    f.last().is_some_and(|l| l == leaf)
}

/// The stacks whose leaf is `leaf`, for failure messages.
fn show(s: &Stacks, leaf: &str) -> String {
    let mut v: Vec<String> = s
        .iter()
        .filter(|(f, _)| leaf_is(f, leaf))
        .take(8)
        .map(|(f, n)| format!("{n:>5} {}", f.join(";")))
        .collect();
    if v.is_empty() {
        v = s
            .iter()
            .take(8)
            .map(|(f, n)| format!("{n:>5} {}", f.join(";")))
            .collect();
    }
    v.join("\n")
}

fn share(part: u64, whole: u64) -> f64 {
    part as f64 / whole.max(1) as f64
}

fn plain(name: &str) -> String {
    common::plain_fixture(name).to_string_lossy().into_owned()
}

#[test]
fn plain_o2_split_has_its_whole_chains_and_shares() {
    let d = tmp();
    let c = record(&d.path().join("s.hsp"), &[], &[&plain("split7030"), "3"]);
    let s = stacks(&c);
    let all = total(&s);
    assert!(all > 400, "too few samples: {all}");
    let rooted = count(&s, |f| rooted_at(f, "_start"));
    assert!(
        share(rooted, all) >= 0.99,
        "{rooted} of {all} samples reach _start:\n{}",
        show(&s, "hot_leaf")
    );
    let hot = count(&s, |f| leaf_is(f, "hot_leaf"));
    let cold = count(&s, |f| leaf_is(f, "cold_leaf"));
    let hot_chain = count(&s, |f| {
        leaf_is(f, "hot_leaf") && has_chain(f, &["main", "hot_a", "hot_b", "hot_leaf"])
    });
    let cold_chain = count(&s, |f| {
        leaf_is(f, "cold_leaf") && has_chain(f, &["main", "cold_a", "cold_b", "cold_leaf"])
    });
    // Exact: every sample in a leaf carries that leaf's whole chain.
    assert_eq!(
        hot_chain,
        hot,
        "hot_leaf samples without their chain:\n{}",
        show(&s, "hot_leaf")
    );
    assert_eq!(
        cold_chain,
        cold,
        "cold_leaf samples without their chain:\n{}",
        show(&s, "cold_leaf")
    );
    let split = share(hot, hot + cold);
    assert!(
        (0.62..=0.78).contains(&split),
        "hot share {split:.3} ({hot} / {cold})"
    );
}

#[test]
fn plain_o2_threads_reach_clone3() {
    // glibc 2.34+ starts threads with clone3 (its symbol is `__clone3`).
    let clone3 = |f: &[String]| rooted_at(f, "__clone3") || rooted_at(f, "clone3");
    let d = tmp();
    let c = record(&d.path().join("t.hsp"), &[], &[&plain("threads"), "2"]);
    let s = stacks(&c);
    for (thread, work, leaf) in [
        ("alpha_thread", "alpha_work", "alpha_leaf"),
        ("beta_thread", "beta_work", "beta_leaf"),
        ("gamma_thread", "gamma_work", "gamma_leaf"),
    ] {
        let n = count(&s, |f| leaf_is(f, leaf));
        assert!(n > 50, "{leaf}: only {n} samples");
        let whole = count(&s, |f| {
            leaf_is(f, leaf) && clone3(f) && has_chain(f, &["start_thread", thread, work, leaf])
        });
        assert!(
            share(whole, n) >= 0.99,
            "{whole} of {n} {leaf} samples are clone3;start_thread;{thread};{work};{leaf}:\n{}",
            show(&s, leaf)
        );
    }
}

#[test]
fn plain_o2_200_frame_recursion_is_complete() {
    let d = tmp();
    let c = record(
        &d.path().join("r.hsp"),
        &[],
        &[&plain("recurse"), "2", "200"],
    );
    let s = stacks(&c);
    let n = count(&s, |f| leaf_is(f, "deep_leaf"));
    assert!(n > 200, "only {n} deep_leaf samples");
    // recurse_deep(200) … recurse_deep(1) are on the stack; recurse_deep(0) tail-calls
    // deep_leaf in a plain -O2 build (sibling calls allowed), so its frame is gone.
    let whole = count(&s, |f| {
        leaf_is(f, "deep_leaf")
            && rooted_at(f, "_start")
            && has_chain(f, &["main", "recurse_deep"])
            && f.iter().filter(|x| *x == "recurse_deep").count() >= 200
    });
    assert!(
        share(whole, n) >= 0.99,
        "{whole} of {n} deep_leaf samples have 200 recurse_deep frames down to _start:\n{}",
        show(&s, "deep_leaf")
    );
}

#[test]
fn a_frameless_leaf_keeps_its_caller() {
    let bin = common::fixture("frameless");
    let bin = bin.to_string_lossy();
    let d = tmp();
    let chain = ["main", "fl_dispatch", "fl_route", "fl_leaf"];
    let c = record(&d.path().join("f.hsp"), &[], &[&bin, "2"]);
    let s = stacks(&c);
    let n = count(&s, |f| leaf_is(f, "fl_leaf"));
    assert!(n > 200, "only {n} fl_leaf samples");
    let whole = count(&s, |f| leaf_is(f, "fl_leaf") && has_chain(f, &chain));
    assert_eq!(
        whole,
        n,
        "fl_leaf samples without fl_route:\n{}",
        show(&s, "fl_leaf")
    );
    // The frame-pointer walk is what loses it: the test would see a missing caller.
    let fp = record(
        &d.path().join("fp.hsp"),
        &["--call-graph", "fp"],
        &[&bin, "1"],
    );
    let s = stacks(&fp);
    let lost = count(&s, |f| {
        leaf_is(f, "fl_leaf") && has_chain(f, &["fl_dispatch", "fl_leaf"])
    });
    assert!(
        lost > 0,
        "--call-graph fp kept fl_route after all:\n{}",
        show(&s, "fl_leaf")
    );
}

#[test]
fn time_in_a_signal_handler_unwinds_to_the_interrupted_code_and_main() {
    let d = tmp();
    let c = record(&d.path().join("g.hsp"), &[], &[&plain("sighandler"), "3"]);
    let s = stacks(&c);
    let n = count(&s, |f| leaf_is(f, "sig_handler_leaf"));
    assert!(
        n > 50,
        "only {n} samples in the handler:\n{}",
        show(&s, "sig_interrupted")
    );
    let through = count(&s, |f| {
        leaf_is(f, "sig_handler_leaf")
            && rooted_at(f, "_start")
            && has_chain(f, &["main", "sig_driver", "sig_interrupted"])
            && has_chain(f, &["sig_on_alarm", "sig_handler_leaf"])
    });
    assert!(
        share(through, n) >= 0.95,
        "{through} of {n} handler samples go through the signal frame to main and _start:\n{}",
        show(&s, "sig_handler_leaf")
    );
}

/// A CPU-bound Python loop for `python` to run for `secs`.
fn python_loop(secs: f64) -> String {
    format!(
        "import time\n\
         def leaf(n):\n    s = 0\n    for i in range(n):\n        s += i * i\n    return s\n\
         def middle(n):\n    return leaf(n) + 1\n\
         def outer(end):\n    while time.monotonic() < end:\n        middle(20000)\n\
         outer(time.monotonic() + {secs})\n"
    )
}

#[test]
fn debian_python3_stacks_reach_start() {
    let python = Path::new("/usr/bin/python3");
    assert!(
        python.exists(),
        "Debian's /usr/bin/python3 is not installed"
    );
    let d = tmp();
    let c = record(
        &d.path().join("p.hsp"),
        &[],
        &[&python.to_string_lossy(), "-c", &python_loop(3.0)],
    );
    let s = stacks(&c);
    let all = total(&s);
    assert!(all > 400, "too few samples: {all}");
    let rooted = count(&s, |f| rooted_at(f, "_start"));
    assert!(
        share(rooted, all) >= 0.99,
        "{rooted} of {all} python3 samples reach _start:\n{}",
        show(&s, "_PyEval_EvalFrameDefault")
    );
}

/// pyenv's CPython 3.12 (installed on these machines, see README).
fn python312() -> PathBuf {
    let root = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pyenv")))
        .unwrap_or_else(|| PathBuf::from("/root/.pyenv"));
    let versions = root.join("versions");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&versions)
        .unwrap_or_else(|e| panic!("no pyenv versions in {}: {e}", versions.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("3.12"))
        })
        .map(|p| p.join("bin/python3.12"))
        .filter(|p| p.exists())
        .collect();
    found.sort();
    found
        .pop()
        .unwrap_or_else(|| panic!("no CPython 3.12 under {}", versions.display()))
}

#[test]
fn cpython_312_perf_trampolines_give_python_frames_on_rooted_stacks() {
    let python = python312();
    let d = tmp();
    let c = record(
        &d.path().join("x.hsp"),
        &[],
        &[
            &python.to_string_lossy(),
            "-X",
            "perf",
            "-c",
            &python_loop(3.0),
        ],
    );
    let s = stacks(&c);
    let all = total(&s);
    assert!(all > 400, "too few samples: {all}");
    let with_py = count(&s, |f| f.iter().any(|x| x.starts_with("py::")));
    let rooted = count(&s, |f| rooted_at(f, "_start"));
    let both = count(&s, |f| {
        rooted_at(f, "_start") && f.iter().any(|x| x.starts_with("py::middle"))
    });
    let shown = show(&s, "_PyEval_EvalFrameDefault");
    assert!(
        share(with_py, all) >= 0.95,
        "{with_py} of {all} carry py:: frames:\n{shown}"
    );
    assert!(
        share(rooted, all) >= 0.95,
        "{rooted} of {all} reach _start:\n{shown}"
    );
    assert!(
        share(both, all) >= 0.90,
        "{both} of {all} are rooted and show py::middle:\n{shown}"
    );
}

#[test]
fn a_stack_deeper_than_the_cap_ends_in_its_reason_or_goes_on_by_frame_pointers() {
    let d = tmp();
    // Without frame pointers past the copy: the marker says why the stack is short.
    let c = record(
        &d.path().join("cut.hsp"),
        &["--stack-cap", "2048"],
        &[&plain("recurse"), "2", "200"],
    );
    let s = stacks(&c);
    let n = count(&s, |f| leaf_is(f, "deep_leaf"));
    assert!(n > 200, "only {n} deep_leaf samples");
    let cut = count(&s, |f| {
        leaf_is(f, "deep_leaf") && rooted_at(f, "[truncated: stack larger than --stack-cap]")
    });
    assert!(
        share(cut, n) >= 0.99,
        "{cut} of {n} end in the truncation marker:\n{}",
        show(&s, "deep_leaf")
    );
    let info = run_ok(hotspot().arg("info").arg(d.path().join("cut.hsp")));
    let text = String::from_utf8_lossy(&info.stdout);
    assert!(
        text.contains("[truncated: stack larger than --stack-cap]")
            && text.contains("of stacks complete"),
        "info does not report the truncation:\n{text}"
    );

    // With frame pointers past the copy: the kernel's chain completes it.
    let fp_built = common::fixture("recurse");
    let c = record(
        &d.path().join("splice.hsp"),
        &["--stack-cap", "2048"],
        &[&fp_built.to_string_lossy(), "2", "100"],
    );
    let s = stacks(&c);
    let n = count(&s, |f| leaf_is(f, "deep_leaf"));
    assert!(n > 200, "only {n} deep_leaf samples");
    let spliced = count(&s, |f| {
        leaf_is(f, "deep_leaf")
            && f.iter().any(|x| x == "main")
            && f.iter().filter(|x| *x == "recurse_deep").count() == 101
            && !f.iter().any(|x| x.starts_with("[truncated"))
    });
    assert!(
        share(spliced, n) >= 0.99,
        "{spliced} of {n} have all 101 frames and main, spliced from frame pointers:\n{}",
        show(&s, "deep_leaf")
    );
}
