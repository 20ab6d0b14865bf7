//! Targets that make recording hard, with the real BPF program: a target that execs,
//! thousands of short-lived threads, threads renamed while they work. They need root;
//! without it they fail with hotspot's own message, never skip.

mod common;

use common::fixture_arg as fixture;

use std::collections::{BTreeMap, HashMap, HashSet};

use hotspot_replay::Capture;
use hotspot_replay::profile;
use hotspot_testkit::e2e::flush_log::*;
use hotspot_testkit::e2e::{hotspot, run_ok, serial, tmp};

/// Folded stacks of the samples of `tid` whose time passes `keep`, as leaf -> count.
fn leaves(c: &Capture, tid: u32, keep: impl Fn(u64) -> bool) -> BTreeMap<String, u64> {
    let mut by_stack: HashMap<u32, u64> = HashMap::new();
    for s in c.samples.iter().filter(|s| s.tid == tid && keep(s.time_ns)) {
        *by_stack.entry(s.stack).or_default() += 1;
    }
    let mut names = profile::StackNames::default();
    let mut out = BTreeMap::new();
    for (stack, n) in by_stack {
        let leaf = names
            .get(c, stack)
            .and_then(|f| f.iter().rfind(|f| !f.kind.is_kernel()))
            .map_or("?".to_string(), |f| f.function.to_string());
        *out.entry(leaf).or_default() += n;
    }
    out
}

fn share(leaves: &BTreeMap<String, u64>, leaf: &str) -> (u64, f64) {
    let total: u64 = leaves.values().sum();
    let n = leaves.get(leaf).copied().unwrap_or(0);
    (n, n as f64 / total.max(1) as f64)
}

/// `prefix=<n>` from a fixture's stderr.
fn logged_number(stderr: &str, prefix: &str) -> u64 {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {prefix} in {stderr}"))
}

/// `prefix=<seconds>` from a fixture's stderr.
fn logged_seconds(stderr: &str, prefix: &str) -> f64 {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {prefix} in {stderr}"))
}

#[test]
fn a_target_that_execs_keeps_both_names_and_both_images() {
    let d = tmp();
    let out = d.path().join("exec.hsp");
    let busy = fixture("busy");
    let _g = serial();
    let res = run_ok(hotspot().arg("record").arg("-o").arg(&out).args([
        "--",
        &fixture("execer"),
        "1.5",
        &busy,
        "1.5",
    ]));
    let stderr = String::from_utf8_lossy(&res.stderr);
    let exec_ns = logged_number(&stderr, "execer: exec_ns=");
    let c = Capture::open(&out).expect("opens");
    let pid = c.session.as_ref().expect("session").targets[0];
    let names: Vec<&str> = c.threads[&pid]
        .names
        .iter()
        .map(|(_, n)| n.as_str())
        .collect();
    assert_eq!(
        names,
        ["execer", "busy"],
        "the main thread's names in order"
    );
    let p = &c.processes[&pid];
    assert_eq!(p.name, "busy", "the process is known by its new image");
    assert!(p.exe.ends_with("/busy"), "{}", p.exe);
    // Each half is named from its own image. Each half runs 1.5 s of wall time, so how
    // many samples it gets depends on the CPU the machine left it: the programs report
    // their CPU time (the process's clock runs on across the exec), and each half must
    // have at least 80% of one sample per period of it (a VM's cpu_clock misses stolen
    // time: 7% measured), and at least 50 for its share to mean something.
    let cpu_before = logged_seconds(&stderr, "execer: cpu_s=");
    let cpu_after = logged_seconds(&stderr, "busy: cpu_s=") - cpu_before;
    let period_s = c.period_ns(hotspot_replay::metric::Metric::Cpu) as f64 * 1e-9;
    let enough = |cpu_s: f64| (0.8 * cpu_s / period_s).max(50.0);
    let before = leaves(&c, pid, |t| t < exec_ns);
    let after = leaves(&c, pid, |t| t > exec_ns);
    let (n, s) = share(&before, "exec_before_leaf");
    assert!(
        n as f64 >= enough(cpu_before) && s >= 0.9,
        "before the exec ({cpu_before:.3} s of CPU): {before:?}"
    );
    let (n, s) = share(&after, "busy_leaf");
    assert!(
        n as f64 >= enough(cpu_after) && s >= 0.9,
        "after the exec ({cpu_after:.3} s of CPU): {after:?}"
    );
    assert!(!after.contains_key("exec_before_leaf"), "{after:?}");
    let modules: HashSet<&str> = c.modules.values().map(|m| m.path.as_str()).collect();
    assert!(
        modules.iter().any(|m| m.ends_with("/execer"))
            && modules.iter().any(|m| m.ends_with("/busy")),
        "{modules:?}"
    );
}

#[test]
fn thousands_of_short_lived_threads_are_each_named_and_counted() {
    const THREADS: u64 = 2000;
    let d = tmp();
    let out = d.path().join("churn.hsp");
    let log = d.path().join("churn.log");
    let _g = serial();
    // 3 ms of each thread's own CPU time at 999 Hz is three ticks: a thread can escape
    // sampling only if the scheduler cut its run into pieces that all fall between
    // ticks; even for pieces placed at random that is e^-3 = 5%. So at least 80% of the
    // threads must be in the capture.
    let res = run_ok(
        hotspot()
            .args(["record", "-F", "999", "--flush-log"])
            .arg(&log)
            .arg("-o")
            .arg(&out)
            .args(["--", &fixture("churn"), "60", &THREADS.to_string(), "3"]),
    );
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert_eq!(
        logged_number(&stderr, "churn: threads="),
        THREADS,
        "{stderr}"
    );
    let logged: HashMap<u32, &str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("churn: tid="))
        .filter_map(|l| {
            let (tid, name) = l.split_once(" name=")?;
            Some((tid.parse().ok()?, name))
        })
        .collect();
    assert_eq!(logged.len() as u64, THREADS, "distinct tids logged");
    let c = Capture::open(&out).expect("opens");
    assert!(c.end.is_some() && c.corrupt.is_empty() && c.truncated.is_none());
    let pid = c.session.as_ref().expect("session").targets[0];
    let mut named = 0u64;
    let (mut own_work, mut all_work) = (0u64, 0u64);
    for t in c.threads.values().filter(|t| t.tid != pid) {
        assert_eq!(t.pid, pid, "thread {} in the wrong process", t.tid);
        let want = logged
            .get(&t.tid)
            .unwrap_or_else(|| panic!("thread {} ({:?}) is not one of churn's", t.tid, t.names));
        // Before naming itself a new thread carries its creator's name.
        for (_, n) in &t.names {
            assert!(
                n == want || n == "churn",
                "tid {}: {:?}, expected {want}",
                t.tid,
                t.names
            );
        }
        if t.names.iter().any(|(_, n)| n == want) {
            named += 1;
            let leaves = leaves(&c, t.tid, |_| true);
            own_work += leaves
                .iter()
                .filter(|(l, _)| l.starts_with("churn_"))
                .map(|(_, n)| n)
                .sum::<u64>();
            all_work += leaves.values().sum::<u64>();
        }
    }
    // The threads' samples are their own work (the rest: thread start, naming, logging).
    assert!(
        own_work * 100 >= all_work * 85,
        "{own_work} of {all_work} samples of churn's threads in churn_*"
    );
    assert!(
        named * 100 >= THREADS * 80,
        "{named} of {THREADS} threads in the capture under their own name"
    );
    let flushed = FlushLog::read(&log);
    assert_eq!(flushed.total("malformed"), 0);
    assert_eq!(
        c.lost,
        flushed.total("bpf-lost"),
        "lost samples counted exactly"
    );
    let info = info_text(&out);
    assert!(
        info.contains(&format!("threads:    {}", c.threads.len())),
        "{info}"
    );
    eprintln!(
        "churn: {named} of {THREADS} threads captured under their own names, {} lost, {} threads in the capture",
        c.lost,
        c.threads.len()
    );
}

#[test]
fn a_renamed_thread_keeps_each_name_with_the_work_done_under_it() {
    let d = tmp();
    let out = d.path().join("rename.hsp");
    let _g = serial();
    let res =
        run_ok(
            hotspot()
                .arg("record")
                .arg("-o")
                .arg(&out)
                .args(["--", &fixture("renamer"), "3"]),
        );
    let stderr = String::from_utf8_lossy(&res.stderr);
    let renamed_ns = logged_number(&stderr, "renamer: renamed_ns=");
    let c = Capture::open(&out).expect("opens");
    let t = c
        .threads
        .values()
        .find(|t| t.names.iter().any(|(_, n)| n == "rn-second"))
        .unwrap_or_else(|| panic!("no thread renamed rn-second: {:?}", c.threads));
    let names: Vec<&str> = t
        .names
        .iter()
        .map(|(_, n)| n.as_str())
        .filter(|n| *n != "renamer")
        .collect();
    assert_eq!(names, ["rn-first", "rn-second"], "{:?}", t.names);
    // The name a sample was taken under: the thread's latest name at or before it.
    let name_at = |ns: u64| {
        t.names
            .iter()
            .rev()
            .find(|(since, _)| *since <= ns)
            .map_or("", |(_, n)| n.as_str())
    };
    let first = leaves(&c, t.tid, |ns| name_at(ns) == "rn-first");
    let second = leaves(&c, t.tid, |ns| name_at(ns) == "rn-second");
    let (n1, s1) = share(&first, "first_name_leaf");
    let (n2, s2) = share(&second, "second_name_leaf");
    assert!(s1 >= 0.95, "work under rn-first: {first:?}");
    assert!(s2 >= 0.95, "work under rn-second: {second:?}");
    // Equal halves of wall time: each name has a fair part of the thread's samples.
    let half = n1 as f64 / (n1 + n2) as f64;
    assert!(
        n1 + n2 >= 300 && (0.3..=0.7).contains(&half),
        "rn-first {n1}, rn-second {n2} samples"
    );
    // And the rename is where the fixture says it happened.
    let since = t
        .names
        .iter()
        .find(|(_, n)| n == "rn-second")
        .map(|(s, _)| *s);
    assert!(
        since.is_some_and(|s| s >= renamed_ns),
        "{since:?} vs {renamed_ns}"
    );
    assert!(
        c.samples
            .iter()
            .filter(|s| s.tid == t.tid && s.time_ns < renamed_ns)
            .all(|s| name_at(s.time_ns) != "rn-second")
    );
}
