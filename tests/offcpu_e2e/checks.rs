//! The off-CPU end-to-end checks, each on one recording of a fixture (see
//! `fixtures/offcpu.c`, `fixtures/contend.c`): run by `tests/offcpu_e2e.rs` on this
//! machine's kernel and by `tests/kernel_matrix.rs` on what `tools/kernel-matrix`
//! recorded in each kernel's VM, with the same tolerances.

use hotspot_replay::metric::Metric;

use super::support::{Recorded, ThreadLine, Usage, assert_close, has, tick_count_sd};

fn thread<'a>(rec: &'a Recorded, name: &str) -> (&'a ThreadLine, Usage) {
    let line = rec.thread(name);
    (line, Usage::of(&rec.capture, line.tid))
}

/// Of an `offcpu` recording: `oc-alternate` (10 ms of CPU, 10 ms of nanosleep) is half
/// off the CPU, its sleeps in `oc_alt_nap`.
pub fn alternating_thread_is_half_off_cpu_in_its_sleep(rec: &Recorded) {
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
    let in_nap = u.off_periods_where(|st, stack| st == 'S' && has(stack, "oc_alt_nap"));
    assert!(
        s > 0 && in_nap as f64 >= 0.99 * s as f64,
        "oc-alternate: {in_nap} of {s} S periods in oc_alt_nap ({u})"
    );
}

/// Of an `offcpu` recording: `oc-piperead` is off the CPU in `oc_pipe_wait` nearly all
/// its life.
pub fn pipe_reader_is_off_cpu_in_its_read(rec: &Recorded) {
    let (_, u) = thread(rec, "oc-piperead");
    // Its life from its first run: a new thread's wait for that (R in schedule_tail,
    // before any of its code) is microseconds on the host, but was 220 ms of 3 s under
    // TCG on 6.1 in CI's kernel matrix at 2bce62e (110 of 1496 periods).
    let first_run = u.off_periods_where(|st, stack| st == 'R' && has(stack, "schedule_tail"));
    let wall = u.wall_periods() - first_run;
    let in_read = u.off_periods_where(|_, stack| has(stack, "oc_pipe_wait"));
    // The figure: at least 95% of its time off the CPU, in the reading function.
    assert!(
        in_read as f64 >= 0.95 * wall as f64,
        "oc-piperead: {in_read} of {wall} periods off-CPU in oc_pipe_wait ({u})"
    );
}

/// Of an `offcpu` recording: `oc-spin`, which never blocks, is on the CPU.
pub fn spinning_thread_is_on_cpu(rec: &Recorded) {
    let (_, u) = thread(rec, "oc-spin");
    // The figure: a thread that never blocks is at most 5% off the CPU.
    let share = u.off_share();
    assert!(share <= 0.05, "oc-spin off-CPU share {share:.3} ({u})");
}

/// Of an `offcpu` recording: `oc-disk` waits for the disk in D, in `oc_disk_sync`.
pub fn disk_writer_waits_in_d_state_in_its_fsync(rec: &Recorded) {
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
    let in_sync = u.off_periods_where(|st, stack| st == 'D' && has(stack, "oc_disk_sync"));
    // Every D wait of this thread is inside oc_disk_sync (pwrite or fsync).
    assert!(
        d > 0 && in_sync as f64 >= 0.95 * d as f64,
        "oc-disk: {in_sync} of {d} D periods in oc_disk_sync ({u})"
    );
}

/// Of a `contend` recording: its three busy threads on one CPU wait runnable (R) two
/// thirds of their lives, in `ct_spin`.
pub fn pinned_threads_wait_runnable(rec: &Recorded) {
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
        let spin = u.off_periods_where(|st, stack| st == 'R' && has(stack, "ct_spin"));
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

/// Of an `offcpu` or `contend` recording: each thread's wall time from samples is its
/// exact times' total, and that total its lifetime.
pub fn wall_is_cpu_plus_off_cpu_and_the_lifetime(rec: &Recorded) {
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
        // recording's steal is allowed on top, as for schedstat below.
        // The CPU part is also a count of timer ticks, with the count's own error on
        // top of the 2% (four standard errors, see `tick_count_sd`): oc-disk runs
        // ~400 ms in ~16,000 bursts, ~200 ticks at 499 Hz, whose count varies by ~14
        // ticks (28 ms) from run to run; the 2% alone (60 ms) failed one run in ~10
        // (CI at 57387da: 2.936 s against 3.001 s). The count was as short in perf's
        // cpu-clock samples of the same runs (perf -a -F 999 beside the test, 4 runs:
        // 437/363/353/380 ms, hotspot 439/367/381/405 ms, ThreadTimes 442/375/404/411
        // ms): a tick that comes due while the kernel switches a thread out (interrupts
        // off) is taken by the next thread, so it is not hotspot's to correct.
        let ticks = t.on_cpu_ns as f64 / period;
        let runs = line.nvcsw + line.nivcsw + 1;
        assert_close(
            u.wall_periods() as f64 * period,
            exact,
            0.02,
            period + rec.steal_ns as f64 + 4.0 * tick_count_sd(ticks, runs) * period,
            &format!(
                "{} {}: wall from samples vs ThreadTimes ({ticks:.0} ticks on the CPU \
                 in {runs} runs)",
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
        // The lifetime the fixture saw (CLOCK_MONOTONIC at the thread's last line; it
        // exits microseconds later), from its creation: between the creator's clock read
        // before pthread_create and the thread's own first line. Those two are
        // microseconds apart on the host, 71 ms once in tools/kernel-matrix (6.1 under
        // TCG: two vCPUs taking turns on one host thread, beside a busy recorder).
        assert!(
            line.start_ns <= line.started_ns && line.started_ns <= line.end_ns,
            "{} {}: the fixture's times are out of order: {line:?}",
            rec.prog,
            line.name
        );
        let lifetime = (t.last_ns - t.first_ns) as f64;
        let (shortest, longest) = (
            (line.end_ns - line.started_ns) as f64,
            (line.end_ns - line.start_ns) as f64,
        );
        assert!(
            lifetime >= shortest * 0.98 && lifetime <= longest * 1.02,
            "{} {}: lifetime {lifetime} ns, the thread's own {shortest}-{longest} ns \
             (from its first line, from its creator's pthread_create; 2% allowed)",
            rec.prog,
            line.name
        );
    }
}

/// How far apart the kernel's schedstat and the switch programs may put a thread's
/// switches (see `cpu_and_run_queue_match_schedstat`): what the machine the recording ran
/// on was measured to need.
#[derive(Debug, Clone, Copy)]
pub struct SwitchClocks {
    /// Per voluntary switch: how much of the run before a wake-up's switch in schedstat
    /// may give the woken thread (the skipped clock update below).
    pub per_wakeup_ns: u64,
    /// The longest the clock may jump between two reads a few hundred instructions apart:
    /// 0 on hardware and under KVM, where both vCPUs run at once; under qemu's
    /// single-threaded emulation (tools/kernel-matrix) the vCPUs take turns, and a turn of
    /// the other vCPU can fall between any two instructions of this one.
    pub turn_ns: u64,
}

/// Of an `offcpu` or `contend` recording: each thread's on-CPU and R times agree with the
/// kernel's schedstat.
///
/// The two are the same intervals measured at different points of the same switches.
/// The switch programs read the clock at the `sched_switch` tracepoint; schedstat takes
/// the run queue's clock, read at the top of `__schedule` (run time ends there, and a
/// preempted thread's run-queue wait starts) and kept through `pick_next_task` (where the
/// next thread's run time and the end of its wait are taken), a few hundred instructions
/// earlier. Two effects put them further apart:
///
/// - a wake-up that preempts the CPU's current task (the idle task, often) skips the next
///   clock update (`rq_clock_skip_update` in `wakeup_preempt`), so the woken thread's run
///   time starts at the wake-up rather than at its switch in: `per_wakeup_ns` per
///   voluntary switch (microseconds on this machine's kernel);
/// - under qemu's single-threaded emulation the two vCPUs take turns, and the guest's
///   clock counts both vCPUs' instructions: when the other vCPU's turn falls between the
///   run queue's clock read and the tracepoint, the two readings of that one switch are a
///   whole turn apart, and the turn lands on one side of the switch in schedstat and on
///   the other in the switch programs' totals. Measured in the 6.1 VM with ftrace
///   (`sched_stat_wait`, the run-queue wait by the same clock as schedstat's, beside
///   `sched_switch`), over oc-alternate's 153 preemptions in 6 recordings: 54 differed
///   by 0.1-2.0 ms, either way, most others by under 3 µs; in one switch the clock
///   jumped 1.7 ms between `pick_next_task` and the tracepoint (usually 1-2 µs apart). A
///   turn ends at the next timer deadline of either vCPU at the latest, and each vCPU's
///   CPU-clock sampling timer fires every period: no difference exceeded one period
///   (the largest, 2.002 ms, against 2.004). Each end of each wait may so be off by up
///   to `turn_ns`, either way: the check allows three standard deviations of that many
///   ±`turn_ns` steps, 3·`turn_ns`·√(ends). Over 150 thread recordings (30 recordings
///   of `offcpu`, 24 in the 6.1 VM, 6 in the 6.12 one) the largest difference used 31%
///   of what this allows (on-CPU vs run time) and 20% (R vs wait); without the turns,
///   9 of them, in 8 of the 30 recordings, failed.
pub fn cpu_and_run_queue_match_schedstat(rec: &Recorded, clocks: SwitchClocks) {
    // 3·turn·√ends: see above.
    let turns = |ends: u64| 3.0 * clocks.turn_ns as f64 * (ends as f64).sqrt();
    for line in &rec.threads {
        let t = rec.times(line.tid);
        // The thread read its schedstat just before exiting; what it ran after that
        // (formatting one line, exiting) is microseconds: 0.5 ms absolute slack
        // covers it for threads that hardly run (the pipe threads: ~0.1-0.2 ms).
        // schedstat's run time leaves out steal time (PARAVIRT_TIME_ACCOUNTING: the
        // VM's CPU was running something else), which a clock read at each switch
        // cannot tell apart: the steal of the whole recording is allowed on top
        // (measured: a spinner's run + wait fell 1.7% short of its lifetime here).
        // Every wait, voluntary or not, has two ends, each of which may straddle a turn.
        let switches = line.nvcsw + line.nivcsw;
        assert_close(
            t.on_cpu_ns as f64,
            line.run_ns as f64,
            0.02,
            500_000.0
                + rec.steal_ns as f64
                + (line.nvcsw * clocks.per_wakeup_ns) as f64
                + turns(2 * switches),
            &format!(
                "{} {}: on-CPU vs schedstat run time ({t:?}; schedstat wait {} ns, {} \
                 voluntary and {} involuntary switches)",
                rec.prog, line.name, line.wait_ns, line.nvcsw, line.nivcsw
            ),
        );
        // schedstat's wait also holds the run-queue delay after each wake-up, which
        // the contract counts in the state the thread left in (S or D): R can only
        // be below it, but for turns at either end of each preemption's wait and at
        // the end of a new thread's wait for its first run.
        let allowed = 1.02 * line.wait_ns as f64 + 500_000.0 + turns(2 * line.nivcsw + 1);
        assert!(
            t.runnable_ns as f64 <= allowed,
            "{} {}: R {} ns above schedstat wait {} ns (allowed {allowed:.0}; {t:?}; \
             schedstat run {} ns; {} preemptions; samples: {})",
            rec.prog,
            line.name,
            t.runnable_ns,
            line.wait_ns,
            line.run_ns,
            line.nivcsw,
            Usage::of(&rec.capture, line.tid)
        );
    }
}

/// Of an `offcpu` or `contend` recording: the capture defines off-CPU data at 499 Hz and
/// lost nothing.
pub fn nothing_lost_and_off_cpu_defined(rec: &Recorded) {
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
