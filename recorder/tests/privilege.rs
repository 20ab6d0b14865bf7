//! Dropping privileges reaches every thread of the process, including threads blocked in
//! a system call, which go on working afterwards. Its own test binary (own process): the
//! drop cannot be undone. Needs root; without it the test fails saying so.

use std::sync::mpsc;
use std::time::Duration;

use hotspot_recorder::privilege::{self, CAP_BPF, CAP_SYS_ADMIN, CAP_SYS_PTRACE};

/// A field of /proc/self/task/TID/status as a number (hex for the Cap* lines).
fn status_field(tid: i32, field: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/status"))
        .unwrap_or_else(|e| panic!("reading the status of thread {tid}: {e}"));
    let value = text
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .unwrap_or_else(|| panic!("no {field} in the status of thread {tid}"))
        .trim();
    if field.starts_with("Cap") {
        u64::from_str_radix(value, 16).expect("hex capability mask")
    } else {
        value.parse().expect("number")
    }
}

fn tid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

#[test]
fn every_thread_drops_to_the_kept_set_and_keeps_working() {
    let me = tid();
    let before = status_field(me, "CapEff");
    assert!(
        before & (1 << CAP_SYS_ADMIN) != 0,
        "this test needs root (CAP_SYS_ADMIN effective); CapEff is {before:016x}"
    );
    // One thread blocked in a channel receive, one sleeping, one spinning.
    let (to_blocked, blocked_rx) = mpsc::channel::<()>();
    let (reply_tx, reply) = mpsc::channel::<i32>();
    let (tids_tx, tids) = mpsc::channel::<i32>();
    let blocked = {
        let reply_tx = reply_tx.clone();
        let tids_tx = tids_tx.clone();
        std::thread::spawn(move || {
            tids_tx.send(tid()).expect("send");
            blocked_rx.recv().expect("woken after the drop");
            reply_tx.send(tid()).expect("reply");
        })
    };
    let sleeper = {
        let reply_tx = reply_tx.clone();
        let tids_tx = tids_tx.clone();
        std::thread::spawn(move || {
            tids_tx.send(tid()).expect("send");
            std::thread::sleep(Duration::from_millis(800));
            reply_tx.send(tid()).expect("reply");
        })
    };
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let spinner = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            tids_tx.send(tid()).expect("send");
            let mut x = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
            reply_tx.send(tid()).expect("reply");
        })
    };
    let mut threads: Vec<i32> = (0..3).map(|_| tids.recv().expect("tid")).collect();
    std::thread::sleep(Duration::from_millis(100));

    // Map operations "need" CAP_BPF here, so it must be kept.
    let dropped = privilege::drop_after_attach(|| false).expect("drops");
    assert!(dropped.threads >= 4, "{dropped:?}");
    assert_ne!(
        dropped.kept & (1 << CAP_BPF),
        0,
        "the probe said CAP_BPF is needed"
    );
    assert_ne!(dropped.kept & (1 << CAP_SYS_PTRACE), 0);
    assert_eq!(dropped.kept & (1 << CAP_SYS_ADMIN), 0);
    threads.push(me);
    for &t in &threads {
        assert_eq!(status_field(t, "CapEff"), dropped.kept, "thread {t} CapEff");
        assert_eq!(status_field(t, "CapPrm"), dropped.kept, "thread {t} CapPrm");
        assert_eq!(status_field(t, "CapInh"), 0, "thread {t} CapInh");
        assert_eq!(status_field(t, "CapBnd"), 0, "thread {t} CapBnd");
        assert_eq!(status_field(t, "NoNewPrivs"), 1, "thread {t} NoNewPrivs");
    }
    // The interrupted threads carry on.
    to_blocked.send(()).expect("wake");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut answered: Vec<i32> = (0..3)
        .map(|_| {
            reply
                .recv_timeout(Duration::from_secs(5))
                .expect("thread answers")
        })
        .collect();
    answered.sort_unstable();
    threads.pop();
    threads.sort_unstable();
    assert_eq!(answered, threads);
    for h in [blocked, sleeper, spinner] {
        h.join().expect("thread ends normally");
    }
    // A thread started afterwards inherits the dropped sets.
    let late = std::thread::spawn(|| status_field(tid(), "CapEff"))
        .join()
        .expect("join");
    assert_eq!(late, dropped.kept);
}
