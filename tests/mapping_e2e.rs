//! End-to-end tests of the mapping events with the real BPF program on real processes:
//! processes that live for milliseconds, a library loaded at run time by a process that
//! exits at once, a binary deleted while it runs, an exec chain. Their samples are read
//! after the processes are gone, so only the kernel's mapping events can place them.
//! Root is needed (CAP_BPF + CAP_PERFMON); without it they fail, never skip.

mod common;

#[path = "mapping_e2e/leaves.rs"]
mod leaves;

use std::path::Path;

use hotspot_replay::Capture;
use leaves::{Leaf, assert_no_jit, leaves, user};

/// `hotspot record [extra] -o OUT -- argv` and the capture it wrote.
fn record(out: &Path, extra: &[&str], argv: &[&str]) -> Capture {
    hotspot_testkit::e2e::record_cmd(out, extra, argv)
}

#[test]
fn short_programs_run_by_a_shell_loop_are_named() {
    let d = tempfile::tempdir().expect("tempdir");
    let busy = common::fixture("busy");
    let script = format!("for i in $(seq 100); do {} 0.02; done", busy.display());
    let c = record(
        &d.path().join("loop.hsp"),
        &["-F", "999"],
        &["sh", "-c", &script],
    );
    leaves::short_programs_are_named(&c, &busy);
}

#[test]
fn a_library_loaded_by_a_process_that_exits_at_once_is_named() {
    let d = tempfile::tempdir().expect("tempdir");
    let bin = common::fixture("dlopener");
    // Twenty processes that each load libm, call it for 20 ms and exit: most are gone
    // before their samples are read.
    let script = format!("for i in $(seq 20); do {} 0.02; done", bin.display());
    let c = record(
        &d.path().join("dl.hsp"),
        &["-F", "999"],
        &["sh", "-c", &script],
    );
    assert_no_jit(&c);
    let libm: Vec<Leaf> = leaves(&c)
        .into_iter()
        .filter(|l| l.module.contains("libm.so"))
        .collect();
    // About 400 samples in 20 × 20 ms; most of the time is in cos.
    assert!(libm.len() >= 100, "{} samples in libm", libm.len());
    let named = libm.iter().filter(|l| l.function.is_some()).count();
    assert_eq!(named, libm.len(), "unnamed frames in libm: {libm:?}");
}

#[test]
fn a_binary_deleted_while_it_runs_is_marked_and_still_named() {
    let d = tempfile::tempdir().expect("tempdir");
    let copy = d.path().join("unlinker");
    std::fs::copy(common::fixture("unlinker"), &copy).expect("copy");
    let c = record(
        &d.path().join("del.hsp"),
        &[],
        &[copy.to_str().expect("utf-8 path"), "1"],
    );
    assert!(!copy.exists(), "the fixture deleted itself");
    assert_no_jit(&c);
    let mine: Vec<Leaf> = leaves(&c)
        .into_iter()
        .filter(|l| l.process == "unlinker" && user(l))
        .collect();
    assert!(mine.len() >= 200, "{} user samples", mine.len());
    let deleted = format!("{} (deleted)", copy.display());
    let in_it: Vec<&Leaf> = mine.iter().filter(|l| l.module == deleted).collect();
    assert!(
        in_it.len() as f64 >= 0.9 * mine.len() as f64,
        "{} of {} samples under {deleted}; modules: {:?}",
        in_it.len(),
        mine.len(),
        c.modules.values().map(|m| &m.path).collect::<Vec<_>>()
    );
    let leaf = in_it
        .iter()
        .filter(|l| l.function.as_deref() == Some("unlink_leaf"))
        .count();
    assert!(
        leaf as f64 >= 0.9 * in_it.len() as f64,
        "{leaf} of {} named unlink_leaf from the deleted file's symbols",
        in_it.len()
    );
}

#[test]
fn each_image_of_an_exec_chain_keeps_its_own_samples() {
    let d = tempfile::tempdir().expect("tempdir");
    let execer = common::fixture("execer");
    let busy = common::fixture("busy");
    let script = format!(
        "for i in 1 2 3 4 5; do {} 0.05 {} 0.05; done",
        execer.display(),
        busy.display()
    );
    let c = record(
        &d.path().join("exec.hsp"),
        &["-F", "999"],
        &["sh", "-c", &script],
    );
    assert_no_jit(&c);
    let all = leaves(&c);
    let named = |prefix: &str| -> Vec<&Leaf> {
        all.iter()
            .filter(|l| l.function.as_deref().is_some_and(|f| f.starts_with(prefix)))
            .collect()
    };
    let before = named("exec_before_");
    let after = named("busy_");
    // 5 × 50 ms of each at 999 Hz: about 250.
    assert!(
        before.len() >= 100 && after.len() >= 100,
        "{} samples in execer's code, {} in busy's",
        before.len(),
        after.len()
    );
    for (leaves, bin) in [(&before, &execer), (&after, &busy)] {
        let wrong: Vec<_> = leaves
            .iter()
            .filter(|l| Path::new(&l.module) != bin.as_path())
            .collect();
        assert!(wrong.is_empty(), "under another image: {wrong:?}");
    }
    // Unnamed user samples of either image would be misplaced ones.
    let images: Vec<&Leaf> = all
        .iter()
        .filter(|l| user(l) && (l.process == "execer" || l.process == "busy"))
        .collect();
    let unnamed = images.iter().filter(|l| l.function.is_none()).count();
    assert!(
        unnamed as f64 <= 0.05 * images.len() as f64,
        "{unnamed} of {} user samples of the chain unnamed",
        images.len()
    );
}
