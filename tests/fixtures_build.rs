//! The C fixtures in `fixtures/` build, run and have the properties the end-to-end tests
//! rely on: the expected symbols, a GNU build-id, frame-pointer prologues, and the
//! per-fixture specifics (thread names, perf map, inlined subroutine, real recursion,
//! stripped + debug-file split).

mod common;

use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use common::{build_id, fixture, fixture_with, run_tool, stripped_fixture};

/// Short run length for every fixture, in seconds.
const SHORT: f64 = 0.3;

/// The functions each fixture promises (all have their own frame).
fn expected_functions(name: &str) -> &'static [&'static str] {
    match name {
        "split7030" => &[
            "hot_a",
            "hot_b",
            "hot_leaf",
            "cold_a",
            "cold_b",
            "cold_leaf",
        ],
        "phased" => &[
            "phase_one",
            "p1_work",
            "p1_leaf",
            "phase_two",
            "p2_work",
            "p2_leaf",
            "phase_three",
            "p3_work",
            "p3_leaf",
        ],
        "threads" => &[
            "alpha_thread",
            "alpha_work",
            "alpha_leaf",
            "beta_thread",
            "beta_work",
            "beta_leaf",
            "gamma_thread",
            "gamma_work",
            "gamma_leaf",
        ],
        "recurse" => &["recurse_deep", "deep_leaf"],
        "forker" => &["child_burn", "child_leaf", "parent_burn", "parent_leaf"],
        "syscalls" => &["sys_loop", "sys_write_byte"],
        "early" => &["early_burn", "early_leaf"],
        "busy" => &["busy_loop", "busy_leaf"],
        "inlined" => &["outer_fn"],
        "memwork" => &["mem_driver", "mem_fill", "mem_copy"],
        "jit" => &["jit_driver"],
        "throughput" => &["tp_run", "tp_outer", "tp_middle", "tp_leaf"],
        "execer" => &[
            "exec_before_work",
            "exec_before_leaf",
            "exec_after_work",
            "exec_after_leaf",
        ],
        "churn" => &["churn_thread", "churn_work", "churn_leaf"],
        "renamer" => &["rename_worker", "first_name_leaf", "second_name_leaf"],
        "frameless" => &["fl_dispatch", "fl_route"],
        "sighandler" => &[
            "sig_driver",
            "sig_on_alarm",
            "sig_interrupted",
            "sig_handler_leaf",
        ],
        "dlopener" => &["dl_driver"],
        "embedder" => &["emb_native_burn", "emb_native_leaf"],
        "unlinker" => &["unlink_burn", "unlink_leaf"],
        "offcpu" => &[
            "oc_alt_thread",
            "oc_alt_burn",
            "oc_alt_leaf",
            "oc_alt_nap",
            "oc_alt_sleep",
            "oc_pipe_reader",
            "oc_pipe_wait",
            "oc_pipe_read1",
            "oc_pipe_writer",
            "oc_pipe_pace",
            "oc_spin_thread",
            "oc_spin_leaf",
            "oc_disk_thread",
            "oc_disk_sync",
            "oc_disk_fsync",
        ],
        "contend" => &["ct_thread", "ct_spin", "ct_leaf"],
        "deploy" => &[
            "steady_work",
            "steady_leaf",
            "changed_work",
            "changed_leaf",
            "old_work",
            "old_leaf",
            "new_work",
            "new_leaf",
        ],
        "pingpong" => &["pp_ping", "pp_pong", "pp_hop", "pp_wait", "pp_work_leaf"],
        other => panic!("no expectations for fixture {other}"),
    }
}

/// How many leading instructions of each function [`prologues`] keeps.
const PROLOGUE_LEN: usize = 4;

/// First [`PROLOGUE_LEN`] instructions of every function in `bin`, from `objdump -d`.
fn prologues(bin: &Path) -> HashMap<String, Vec<String>> {
    let dis = run_tool(
        Command::new("objdump")
            .args(["-d", "--no-show-raw-insn"])
            .arg(bin),
    );
    let mut out: HashMap<String, Vec<String>> = HashMap::new();
    let mut current: Option<String> = None;
    for line in dis.lines() {
        if let Some(sym) = line.strip_suffix(">:").and_then(|l| l.split_once(" <")) {
            current = Some(sym.1.to_owned());
            out.entry(sym.1.to_owned()).or_default();
        } else if let (Some(f), Some((_, insn))) = (&current, line.split_once(":\t")) {
            let body = out.entry(f.clone()).or_default();
            if body.len() < PROLOGUE_LEN {
                body.push(insn.split_whitespace().collect::<Vec<_>>().join(" "));
            }
        } else if line.trim().is_empty() {
            current = None;
        }
    }
    out
}

fn check_static_properties(name: &str, bin: &Path) {
    let notes = run_tool(Command::new("readelf").arg("-n").arg(bin));
    assert!(
        notes.contains("Build ID"),
        "{name}: no GNU build-id note:\n{notes}"
    );

    let pro = prologues(bin);
    for f in expected_functions(name).iter().chain(&["main"]) {
        let insns = pro
            .get(*f)
            .unwrap_or_else(|| panic!("{name}: no function {f} in the binary"));
        // GCC may schedule an unrelated instruction between the two.
        assert!(
            insns.first().is_some_and(|i| i == "push %rbp")
                && insns.iter().any(|i| i == "mov %rsp,%rbp"),
            "{name}: {f} does not start with a frame-pointer prologue: {insns:?}"
        );
    }
}

/// Runs `bin args...` to completion with captured output; checks it exits 0 within a
/// sane time of `secs`.
fn run_ok(name: &str, bin: &Path, args: &[&str], secs: f64) -> Output {
    let start = Instant::now();
    let out = Command::new(bin)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", bin.display()));
    let took = start.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "{name} {args:?} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        took >= secs * 0.9 && took < secs + 10.0,
        "{name} {args:?} ran {took:.3}s, expected about {secs}s"
    );
    out
}

fn build_run(name: &str, args: &[&str], secs: f64) -> Output {
    let bin = fixture(name);
    check_static_properties(name, &bin);
    run_ok(name, &bin, args, secs)
}

const SHORT_ARG: &str = "0.3";

#[test]
fn split7030() {
    let out = build_run("split7030", &[SHORT_ARG], SHORT);
    assert!(out.stdout.is_empty());
}

#[test]
fn phased() {
    // 0.1 s per phase.
    let out = build_run("phased", &["0.1"], 0.3);
    assert!(out.stdout.is_empty(), "phased printed to stdout");
    let err = String::from_utf8_lossy(&out.stderr);
    for mark in [
        "phase_one start_ns=",
        "phase_two start_ns=",
        "phase_three start_ns=",
        "end_ns=",
    ] {
        assert!(err.contains(mark), "phased stderr lacks {mark:?}:\n{err}");
    }
}

#[test]
fn threads_are_named() {
    let bin = fixture("threads");
    check_static_properties("threads", &bin);
    let mut child = Command::new(&bin)
        .arg("1")
        .stdout(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("running {}: {e}", bin.display()));
    let want = ["hs-alpha", "hs-beta", "hs-gamma"];
    let deadline = Instant::now() + Duration::from_millis(800);
    let mut seen: Vec<String> = Vec::new();
    while Instant::now() < deadline {
        seen = fs::read_dir(format!("/proc/{}/task", child.id()))
            .map(|tasks| {
                tasks
                    .filter_map(|t| t.ok())
                    .filter_map(|t| fs::read_to_string(t.path().join("comm")).ok())
                    .map(|c| c.trim_end().to_owned())
                    .collect()
            })
            .unwrap_or_default();
        if want.iter().all(|w| seen.iter().any(|s| s == w)) {
            break;
        }
        sleep(Duration::from_millis(20));
    }
    let status = child.wait().expect("waiting for threads fixture");
    assert!(status.success(), "threads exited with {status}");
    for w in want {
        assert!(
            seen.iter().any(|s| s == w),
            "thread {w} not seen; comms: {seen:?}"
        );
    }
}

#[test]
fn recurse_really_recurses() {
    let bin = fixture("recurse");
    check_static_properties("recurse", &bin);
    let dis = run_tool(
        Command::new("objdump")
            .args(["-d", "--no-show-raw-insn", "--disassemble=recurse_deep"])
            .arg(&bin),
    );
    assert!(
        dis.lines()
            .any(|l| l.contains("call") && l.contains("<recurse_deep>")),
        "recurse_deep does not call itself:\n{dis}"
    );
    run_ok("recurse", &bin, &[SHORT_ARG], SHORT);
    run_ok("recurse", &bin, &[SHORT_ARG, "10"], SHORT);
}

#[test]
fn forker() {
    let out = build_run("forker", &[SHORT_ARG], SHORT);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.matches("forker: child pid=").count(),
        2,
        "stderr:\n{err}"
    );
}

#[test]
fn syscalls() {
    build_run("syscalls", &[SHORT_ARG], SHORT);
}

#[test]
fn early() {
    build_run("early", &["0.5"], 0.5);
}

#[test]
fn busy() {
    build_run("busy", &[SHORT_ARG], SHORT);
}

#[test]
fn throughput_reports_its_rate() {
    let bin = fixture("throughput");
    check_static_properties("throughput", &bin);
    let out = common::run_tool(Command::new(&bin).arg("0.3"));
    let rate: f64 = out
        .split_whitespace()
        .find_map(|w| w.strip_prefix("units_per_s="))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no units_per_s in {out:?}"));
    assert!(rate > 0.0, "{out}");
}

#[test]
fn inlined_has_inline_debug_info() {
    let bin = fixture("inlined");
    check_static_properties("inlined", &bin);
    let dis = run_tool(
        Command::new("objdump")
            .args([
                "-d",
                "-l",
                "--inlines",
                "--no-show-raw-insn",
                "--disassemble=outer_fn",
            ])
            .arg(&bin),
    );
    assert!(
        dis.contains("inl_helper"),
        "no inlined inl_helper inside outer_fn:\n{dis}"
    );
    let syms = run_tool(Command::new("nm").arg(&bin));
    assert!(
        !syms.lines().any(|l| l.ends_with(" inl_helper")),
        "inl_helper has an out-of-line copy"
    );
    run_ok("inlined", &bin, &[SHORT_ARG], SHORT);
}

#[test]
fn memwork() {
    build_run("memwork", &[SHORT_ARG], SHORT);
}

#[test]
fn jit_writes_and_removes_perf_map() {
    let bin = fixture("jit");
    check_static_properties("jit", &bin);
    let name = "\x1b[31mevil\x07 name";
    let mut child = Command::new(&bin)
        .args(["1", name])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("running {}: {e}", bin.display()));
    let map = format!("/tmp/perf-{}.map", child.id());
    let deadline = Instant::now() + Duration::from_millis(800);
    let mut text = Vec::new();
    while Instant::now() < deadline {
        text = fs::read(&map).unwrap_or_default();
        if text.ends_with(b"\n") {
            break;
        }
        sleep(Duration::from_millis(20));
    }
    let status = child.wait().expect("waiting for jit fixture");
    assert!(status.success(), "jit exited with {status}");
    let line = String::from_utf8(text).expect("perf map is UTF-8 here");
    let mut parts = line.trim_end_matches('\n').splitn(3, ' ');
    let start = parts.next().and_then(|s| u64::from_str_radix(s, 16).ok());
    let size = parts.next().and_then(|s| u64::from_str_radix(s, 16).ok());
    assert!(start.is_some_and(|s| s > 0), "bad start in {line:?}");
    assert!(size.is_some_and(|s| s > 0), "bad size in {line:?}");
    assert_eq!(
        parts.next(),
        Some(name),
        "name not written verbatim: {line:?}"
    );
    assert!(!Path::new(&map).exists(), "{map} left behind");
}

#[test]
fn stripped_fixture_keeps_build_id_and_debug_file() {
    let plain = fixture("split7030");
    let (stripped, debug) = stripped_fixture("split7030");
    let id = build_id(&plain).expect("plain fixture has a build-id");
    assert_eq!(
        build_id(&stripped).as_deref(),
        Some(id.as_str()),
        "stripped build-id"
    );
    assert_eq!(
        build_id(&debug).as_deref(),
        Some(id.as_str()),
        "debug file build-id"
    );

    let sections = run_tool(Command::new("readelf").args(["-S", "-W"]).arg(&stripped));
    assert!(!sections.contains(".symtab"), "stripped binary has .symtab");
    assert!(
        !sections.contains(".debug_info"),
        "stripped binary has DWARF"
    );
    assert!(
        sections.contains(".gnu_debuglink"),
        "stripped binary lacks .gnu_debuglink"
    );
    let link = run_tool(
        Command::new("readelf")
            .args(["--string-dump=.gnu_debuglink"])
            .arg(&stripped),
    );
    assert!(link.contains("split7030.debug"), "debuglink: {link}");

    let debug_syms = run_tool(Command::new("nm").arg(&debug));
    for f in expected_functions("split7030") {
        assert!(
            debug_syms.lines().any(|l| l.ends_with(&format!(" {f}"))),
            "debug file lacks symbol {f}"
        );
    }
    let debug_sections = run_tool(Command::new("readelf").args(["-S", "-W"]).arg(&debug));
    assert!(
        debug_sections.contains(".debug_info"),
        "debug file lacks DWARF"
    );

    let (head, rest) = id.split_at(2);
    let in_tree = common::stripped_fixture_debug_root("split7030")
        .join(".build-id")
        .join(head)
        .join(format!("{rest}.debug"));
    assert!(in_tree.is_file(), "{} missing", in_tree.display());

    run_ok("split7030 (stripped)", &stripped, &[SHORT_ARG], SHORT);
}

#[test]
fn variant_builds_separately() {
    let default = fixture("busy");
    let nofp = fixture_with("busy", &["-fomit-frame-pointer"], "nofp");
    assert_ne!(default, nofp);
    assert_eq!(
        nofp.file_name(),
        default.file_name(),
        "variant binary keeps the plain name"
    );
    let pro = prologues(&nofp);
    assert_ne!(
        pro.get("busy_loop").map(|v| v.first().map(String::as_str)),
        Some(Some("push %rbp")),
        "-fomit-frame-pointer variant still has a frame in busy_loop"
    );
    run_ok("busy (nofp)", &nofp, &[SHORT_ARG], SHORT);
}

#[test]
fn execer_execs_itself_without_a_program() {
    // SHORT before the exec and SHORT again after it, through /proc/self/exe.
    let out = build_run("execer", &[SHORT_ARG], 2.0 * SHORT);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("execer: exec_ns="), "{err}");
}

#[test]
fn churn_names_and_counts_its_threads() {
    let out = build_run("churn", &["10", "40", "1"], 0.0);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("churn: threads=40\n"), "{err}");
    let named = err.lines().filter(|l| l.starts_with("churn: tid=")).count();
    assert_eq!(named, 40, "{err}");
    assert!(err.contains(" name=ch-39\n"), "{err}");
}

#[test]
fn renamer_logs_its_rename() {
    let out = build_run("renamer", &[SHORT_ARG], SHORT);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("renamer: renamed_ns="), "{err}");
}

#[test]
fn frameless_leaf_really_has_no_frame() {
    let bin = fixture("frameless");
    check_static_properties("frameless", &bin);
    let pro = prologues(&bin);
    let leaf = pro.get("fl_leaf").expect("fl_leaf in the binary");
    assert!(
        !leaf.iter().any(|i| i == "push %rbp"),
        "fl_leaf sets up a frame after all: {leaf:?}"
    );
    run_ok("frameless", &bin, &[SHORT_ARG], SHORT);
}

#[test]
fn sighandler_handles_its_timer() {
    let out = build_run("sighandler", &[SHORT_ARG], SHORT);
    let err = String::from_utf8_lossy(&out.stderr);
    let handled: u32 = err
        .trim()
        .strip_prefix("sighandler: handled=")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected stderr: {err}"));
    // ITIMER_PROF every 2 ms of CPU (in jiffies): dozens in 0.3 s.
    assert!(handled >= 20, "only {handled} signals handled");
}

#[test]
fn dlopener_calls_into_a_library_it_was_not_linked_with() {
    let bin = fixture("dlopener");
    let needed = run_tool(Command::new("readelf").arg("-d").arg(&bin));
    assert!(!needed.contains("libm.so"), "libm is linked: {needed}");
    let out = build_run("dlopener", &[SHORT_ARG], SHORT);
    let err = String::from_utf8_lossy(&out.stderr);
    let calls: u64 = err
        .trim()
        .strip_prefix("dlopener: calls=")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected stderr: {err}"));
    assert!(calls >= 1000, "only {calls} calls");
}

#[test]
fn embedder_loads_python_late_or_stays_native() {
    let bin = fixture("embedder");
    let needed = run_tool(Command::new("readelf").arg("-d").arg(&bin));
    assert!(
        !needed.contains("libpython"),
        "libpython is linked: {needed}"
    );
    let out = build_run("embedder", &[SHORT_ARG], SHORT);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Debian's libpython, loaded 0.3 s in, then 0.3 s of Python.
    let out = run_ok(
        "embedder",
        &bin,
        &[SHORT_ARG, "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0"],
        0.6,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("embedder: python_ns="), "{err}");
}

#[test]
fn unlinker_deletes_its_own_executable() {
    let bin = fixture("unlinker");
    check_static_properties("unlinker", &bin);
    let dir = tempfile::tempdir().expect("tempdir");
    let copy = dir.path().join("unlinker");
    fs::copy(&bin, &copy).expect("copy");
    run_ok("unlinker", &copy, &[SHORT_ARG], SHORT);
    assert!(!copy.exists(), "{} is still there", copy.display());
}

#[test]
fn plain_builds_have_no_frame_pointers() {
    let bin = common::plain_fixture("split7030");
    let pro = prologues(&bin);
    // The callers lose their frames; the leaves keep the one FX_FRAME() forces.
    for f in ["main", "hot_a", "hot_b", "cold_a", "cold_b"] {
        let insns = pro.get(f).unwrap_or_else(|| panic!("no {f}"));
        assert!(
            !insns.iter().any(|i| i == "mov %rsp,%rbp"),
            "{f} has a frame-pointer prologue in the plain build: {insns:?}"
        );
    }
    run_ok("split7030", &bin, &[SHORT_ARG], SHORT);
}

#[test]
fn every_fixture_is_listed() {
    let mut on_disk: Vec<String> = fs::read_dir(common::fixtures_dir())
        .expect("fixtures dir")
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".c"))
                .map(str::to_owned)
        })
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = common::ALL_FIXTURES.iter().map(|s| s.to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed, "common::ALL_FIXTURES is out of date");
}

/// `PROG: thread=NAME … run_ns=R wait_ns=W` lines (fixtures/offcpu_thread.h) by name:
/// (start_ns, end_ns, run_ns).
fn thread_lines(stderr: &str, prog: &str) -> HashMap<String, (u64, u64, u64)> {
    let prefix = format!("{prog}: thread=");
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .map(|rest| {
            let mut w = rest.split_whitespace();
            let name = w.next().unwrap_or_default().to_owned();
            let f: HashMap<&str, u64> = w
                .filter_map(|x| x.split_once('='))
                .filter_map(|(k, v)| Some((k, v.parse().ok()?)))
                .collect();
            (name, (f["start_ns"], f["end_ns"], f["run_ns"]))
        })
        .collect()
}

#[test]
fn offcpu_threads_report_their_schedstat() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
    let dir_arg = dir.path().to_string_lossy().into_owned();
    let out = build_run("offcpu", &["0.5", &dir_arg], 0.5);
    let err = String::from_utf8_lossy(&out.stderr);
    let lines = thread_lines(&err, "offcpu");
    for name in [
        "oc-alternate",
        "oc-piperead",
        "oc-pipewrite",
        "oc-spin",
        "oc-disk",
    ] {
        let (start, end, run) = lines
            .get(name)
            .copied()
            .unwrap_or_else(|| panic!("no line for {name}: {err}"));
        assert!(end > start && run <= end - start, "{name}: {err}");
    }
    // The spinner never sleeps, the reader nearly always: their CPU time tells them apart.
    let life = |n: &str| (lines[n].1 - lines[n].0) as f64;
    assert!(
        lines["oc-piperead"].2 as f64 <= 0.05 * life("oc-piperead"),
        "{err}"
    );
    assert!(
        fs::read_dir(dir.path()).expect("dir").next().is_none(),
        "the disk thread left its file"
    );
}

#[test]
fn contend_pins_its_threads_to_one_cpu() {
    let out = build_run("contend", &["0.5", "3"], 0.5);
    let err = String::from_utf8_lossy(&out.stderr);
    let lines = thread_lines(&err, "contend");
    assert_eq!(lines.len(), 3, "{err}");
    let (first, last) = (
        lines.values().map(|l| l.0).min().unwrap_or(0),
        lines.values().map(|l| l.1).max().unwrap_or(0),
    );
    let ran: u64 = lines.values().map(|l| l.2).sum();
    // Three busy threads on one CPU run at most that CPU's time between them.
    assert!(ran as f64 <= 1.02 * (last - first) as f64, "{err}");
}

#[test]
fn pingpong_switches_often_and_reports_it() {
    let bin = fixture("pingpong");
    check_static_properties("pingpong", &bin);
    let out = run_tool(Command::new(&bin).arg("0.5"));
    let rate: f64 = out
        .split_whitespace()
        .find_map(|w| w.strip_prefix("switches_per_s="))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no switches_per_s in {out:?}"));
    // The benchmark needs 100,000 switches/s; measured here ~850,000 unpinned.
    assert!(rate >= 100_000.0, "{out}");
}
