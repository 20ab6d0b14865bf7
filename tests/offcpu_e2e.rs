//! End-to-end tests of `hotspot record --off-cpu` with the real BPF program (issue 16):
//! the fixtures `offcpu` (threads that sleep, block on a pipe, never block, wait for the
//! disk), `contend` (busy threads pinned to one CPU) and `split7030`, recorded and read
//! back with [`Capture`]. Each thread's shares are by construction of its fixture; its
//! totals are checked against the kernel's own accounting: the schedstat the fixtures
//! print (`/proc/self/task/TID/schedstat`, read just before each thread exits) and the
//! `sched_switch` events perf records alongside each recording.
//!
//! They need root (CAP_BPF + CAP_PERFMON); without it they fail with hotspot's own
//! message naming the missing capability, never skip.

mod common;

#[path = "offcpu_e2e/support.rs"]
mod support;

use std::sync::OnceLock;

use hotspot_replay::metric::Metric;

use support::{Recorded, ThreadLine, Usage, assert_close, record, report};

/// The `offcpu` fixture, 3 s, with its disk thread writing under the test's target dir
/// (a real disk: /tmp or /dev/shm may be tmpfs, where fsync does not wait).
fn offcpu() -> &'static Recorded {
    static REC: OnceLock<Recorded> = OnceLock::new();
    REC.get_or_init(|| {
        let dir = support::disk_dir();
        record(
            "offcpu",
            &["--off-cpu"],
            &[&common::fixture_arg("offcpu"), "3", &dir],
        )
    })
}

/// The `contend` fixture: 3 busy threads on one CPU for 3 s.
fn contend() -> &'static Recorded {
    static REC: OnceLock<Recorded> = OnceLock::new();
    REC.get_or_init(|| {
        record(
            "contend",
            &["--off-cpu"],
            &[&common::fixture_arg("contend"), "3", "3"],
        )
    })
}

fn thread<'a>(rec: &'a Recorded, name: &str) -> (&'a ThreadLine, Usage) {
    let line = rec.thread(name);
    (line, Usage::of(&rec.capture, line.tid))
}

#[test]
fn alternating_thread_is_half_off_cpu_in_its_sleep() {
    let rec = offcpu();
    let (_, u) = thread(rec, "oc-alternate");
    // 10 ms of its own CPU time, then a 10 ms nanosleep: the 0.50 ± 0.05.
    let share = u.off_share();
    assert!(
        (0.45..=0.55).contains(&share),
        "oc-alternate off-CPU share {share:.3} ({u})"
    );
    // Its only sleeps are the naps (it never blocks anywhere else; R periods are
    // preemptions inside the burn and D would be a page fault on disk), so the S
    // periods are all in oc_alt_nap: 0.99 leaves room for one stray period.
    let s = u.off_periods_where(|st, stack| st == 'S' && !stack.is_empty());
    let in_nap = u.off_periods_where(|st, stack| st == 'S' && support::has(stack, "oc_alt_nap"));
    assert!(
        s > 0 && in_nap as f64 >= 0.99 * s as f64,
        "oc-alternate: {in_nap} of {s} S periods in oc_alt_nap ({u})"
    );
}

#[test]
fn pipe_reader_is_off_cpu_in_its_read() {
    let rec = offcpu();
    let (_, u) = thread(rec, "oc-piperead");
    let wall = u.wall_periods();
    let in_read = u.off_periods_where(|_, stack| support::has(stack, "oc_pipe_wait"));
    // The figure: at least 95% of its time off the CPU, in the reading function.
    assert!(
        in_read as f64 >= 0.95 * wall as f64,
        "oc-piperead: {in_read} of {wall} periods off-CPU in oc_pipe_wait ({u})"
    );
}

#[test]
fn spinning_thread_is_on_cpu() {
    let rec = offcpu();
    let (_, u) = thread(rec, "oc-spin");
    // The figure: a thread that never blocks is at most 5% off the CPU.
    let share = u.off_share();
    assert!(share <= 0.05, "oc-spin off-CPU share {share:.3} ({u})");
}

#[test]
fn disk_writer_waits_in_d_state_in_its_fsync() {
    let rec = offcpu();
    let (line, u) = thread(rec, "oc-disk");
    let times = rec.times(line.tid);
    let life = times.last_ns - times.first_ns;
    // Each loop is a 4 KiB pwrite and an fsync that waits for the disk in io_schedule
    // (D), and the thread uses ~1% of its time on the CPU (schedstat: 30-40 ms of 3 s
    // here). libbpf-tools' `offcputime --state 2` measured 2.98 s of its 3.0 s in D on
    // this VM (ext4 on virtio; the run-queue wait after each wake-up counts in the
    // state it left in). A quarter is far below that, and far above the zero of a
    // recorder that misreads D as S.
    let d_share = times.uninterruptible_ns as f64 / life as f64;
    assert!(
        d_share >= 0.25,
        "oc-disk: D {d_share:.3} of its lifetime ({times:?})"
    );
    let d = u.off_periods_where(|st, _| st == 'D');
    let in_sync = u.off_periods_where(|st, stack| st == 'D' && support::has(stack, "oc_disk_sync"));
    // Every D wait of this thread is inside oc_disk_sync (pwrite or fsync).
    assert!(
        d > 0 && in_sync as f64 >= 0.95 * d as f64,
        "oc-disk: {in_sync} of {d} D periods in oc_disk_sync ({u})"
    );
}

#[test]
fn pinned_threads_wait_runnable() {
    let rec = contend();
    for i in 0..3 {
        let name = format!("ct-{i}");
        let (line, u) = thread(rec, &name);
        let times = rec.times(line.tid);
        let life = (times.last_ns - times.first_ns) as f64;
        // Three equal busy threads on one CPU: each runs 1/3 and waits runnable 2/3 of
        // its life; other work on that CPU only lengthens the wait. 0.5 is below 2/3 by
        // more than the start-up skew (threads start up to ~10 ms apart, measured).
        let r_share = times.runnable_ns as f64 / life;
        assert!(
            r_share >= 0.5,
            "{name}: R {r_share:.3} of its lifetime ({times:?})"
        );
        let r = u.off_periods_where(|st, _| st == 'R');
        let r_ns = r * rec.capture.period_ns(Metric::OffCpu);
        assert_close(
            r_ns as f64,
            times.runnable_ns as f64,
            0.02,
            rec.capture.period_ns(Metric::OffCpu) as f64,
            &format!("{name}: R from samples vs ThreadTimes"),
        );
        let spin = u.off_periods_where(|st, stack| st == 'R' && support::has(stack, "ct_spin"));
        assert!(
            spin as f64 >= 0.95 * r as f64,
            "{name}: {spin} of {r} R periods in ct_spin ({u})"
        );
        // They never sleep: the kernel's run-queue wait is their R time.
        assert_close(
            times.runnable_ns as f64,
            line.wait_ns as f64,
            0.02,
            0.0,
            &format!("{name}: R vs schedstat wait"),
        );
    }
    let on: u64 = (0..3)
        .map(|i| rec.times(rec.thread(&format!("ct-{i}")).tid).on_cpu_ns)
        .sum();
    let life = rec.times(rec.thread("ct-0").tid);
    let life = life.last_ns - life.first_ns;
    assert!(
        on as f64 <= 1.02 * life as f64,
        "three threads on one CPU ran {on} ns in {life} ns"
    );
}

#[test]
fn wall_is_cpu_plus_off_cpu_and_the_lifetime() {
    for rec in [offcpu(), contend()] {
        assert!(
            !rec.capture.thread_times.is_empty(),
            "{}: no ThreadTimes",
            rec.prog
        );
        for line in &rec.threads {
            let u = Usage::of(&rec.capture, line.tid);
            let t = rec.times(line.tid);
            let period = rec.capture.period_ns(Metric::OffCpu) as f64;
            let exact = (t.on_cpu_ns + t.sleeping_ns + t.uninterruptible_ns + t.runnable_ns) as f64;
            // The 2%: CPU + off-CPU from the samples against the kernel's totals
            // (one period of slack: the off-CPU residual below a period is not emitted).
            // The CPU samples come from the VM's cpu_clock timer, which does not fire
            // while the hypervisor runs something else on the vCPU; a clock read at each
            // switch counts that stolen time as on the CPU (measured: a spinner's 1407
            // samples, 2.820 s, against 2.998 s on the CPU by ThreadTimes and 2.766 s by
            // schedstat, with 430 ms of steal on the 2 vCPUs during the recording): the
            // recording's steal is allowed on top.
            assert_close(
                u.wall_periods() as f64 * period,
                exact,
                0.02,
                period + rec.steal_ns as f64,
                &format!(
                    "{} {}: wall from samples vs ThreadTimes",
                    rec.prog, line.name
                ),
            );
            assert_close(
                exact,
                (t.last_ns - t.first_ns) as f64,
                0.02,
                0.0,
                &format!(
                    "{} {}: ThreadTimes total vs its lifetime",
                    rec.prog, line.name
                ),
            );
            // The lifetime the thread saw itself (CLOCK_MONOTONIC at its start and at
            // its last line; it exits microseconds later).
            assert_close(
                (t.last_ns - t.first_ns) as f64,
                (line.end_ns - line.start_ns) as f64,
                0.02,
                0.0,
                &format!("{} {}: lifetime vs the thread's own", rec.prog, line.name),
            );
        }
    }
}

#[test]
fn cpu_lies_within_the_kernels_accounts_and_run_queue_fits_schedstat() {
    for rec in [offcpu(), contend()] {
        for line in &rec.threads {
            let t = rec.times(line.tid);
            // The kernel keeps two accounts of a thread's time on a CPU, and on these
            // VMs they disagree: the sched_switch events (perf recorded them in the same
            // run) and schedstat's run time (se.sum_exec_runtime). The fsync writer,
            // which keeps waking an idle vCPU, ran 305 ms between its switches and was
            // charged 408 ms (17k switches in 3 s; perf sched timehist against
            // sched_stat_runtime). And some switches fire no event at all (a spinner's
            // switch back in after `tokio-rt-worker` is missing from perf's record too),
            // which the recorder splits by sum_exec_runtime and perf cannot. So on-CPU
            // must lie between the two accounts, with 2% and 0.5 ms of slack on each side
            // (a thread's exit is accounted at sched_process_exit, a little before its
            // last switch out) and the recording's steal (schedstat leaves it out).
            let switches = rec.switch_run(line.tid) as f64;
            let schedstat = line.run_ns as f64;
            let slack = 500_000.0 + rec.steal_ns as f64;
            let (low, high) = (switches.min(schedstat), switches.max(schedstat));
            let on_cpu = t.on_cpu_ns as f64;
            assert!(
                on_cpu >= 0.98 * low - slack && on_cpu <= 1.02 * high + slack,
                "{} {}: on-CPU {} ns outside the kernel's accounts: {} ns by its switch \
                 events, {} ns by schedstat ({t:?}; schedstat wait {} ns, steal {} ns)",
                rec.prog,
                line.name,
                t.on_cpu_ns,
                switches,
                line.run_ns,
                line.wait_ns,
                rec.steal_ns
            );
            // schedstat's wait also holds the run-queue delay after each wake-up, which
            // the contract counts in the state the thread left in (S or D): R can only
            // be below it.
            assert!(
                t.runnable_ns as f64 <= 1.02 * line.wait_ns as f64 + 500_000.0,
                "{} {}: R {} ns above schedstat wait {} ns ({t:?}; schedstat run {} ns; \
                 samples: {})",
                rec.prog,
                line.name,
                t.runnable_ns,
                line.wait_ns,
                line.run_ns,
                Usage::of(&rec.capture, line.tid)
            );
        }
    }
}

#[test]
fn nothing_lost_and_off_cpu_defined() {
    for rec in [offcpu(), contend()] {
        let c = &rec.capture;
        assert!(c.off_cpu.is_some(), "{}: no OffCpu definition", rec.prog);
        assert_eq!(
            c.period_ns(Metric::OffCpu),
            1_000_000_000 / 499,
            "{}",
            rec.prog
        );
        assert_eq!(c.lost_off_cpu, 0, "{}: lost off-CPU samples", rec.prog);
        assert_eq!(c.lost, 0, "{}: lost samples", rec.prog);
    }
}

#[test]
fn default_report_is_the_cpu_report() {
    let rec = offcpu();
    for format in ["text", "json", "folded"] {
        let plain = report(&rec.path, &["--format", format]);
        let cpu = report(&rec.path, &["--format", format, "--metric", "cpu"]);
        assert!(
            plain == cpu,
            "report --format {format} differs from --metric cpu"
        );
    }
}

#[test]
fn cpu_report_has_the_shape_of_a_recording_without_off_cpu() {
    let argv = [common::fixture_arg("split7030"), "3".to_owned()];
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let with = record("split7030", &["--off-cpu"], &argv);
    let without = record("split7030", &[], &argv);
    support::same_shape(&with, &without);
}
