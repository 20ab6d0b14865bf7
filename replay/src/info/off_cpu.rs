//! `info`'s off-CPU part: the off-CPU period, the off-CPU samples by state, what the kernel
//! dropped, and each thread's exact on-CPU, S, D, R and wall time (its `ThreadTimes`).
//! A capture of a format before 1.3 cannot hold off-CPU data, so its `info` says nothing
//! of it (its output is what it always was); a 1.3 capture without it says so.

use std::fmt::Write;

use hotspot_format::{ThreadState, ThreadTimes};
use serde::Serialize;

use super::Facts;
use crate::capture::Capture;
use crate::export::pct;
use crate::export::text::period_text;
use crate::metric::{self, Metric};
use crate::sanitize::display;

/// Threads the text lists (the JSON document lists all).
const SHOWN: usize = 20;

/// The first format version with off-CPU records.
const OFF_CPU_VERSION: (u16, u16) = (1, 3);

/// Whether `info` speaks of off-CPU data at all.
fn applies(c: &Capture) -> bool {
    c.off_cpu.is_some() || c.version >= OFF_CPU_VERSION
}

/// The line a capture without off-CPU data gets.
pub const NONE: &str = "no off-CPU data (recorded without --off-cpu)";

/// The threads' times, most wall time first.
fn by_wall(c: &Capture) -> Vec<&ThreadTimes> {
    let mut v: Vec<&ThreadTimes> = c.thread_times.values().collect();
    v.sort_by(|a, b| b.wall_ns().cmp(&a.wall_ns()).then(a.tid.cmp(&b.tid)));
    v
}

fn thread_name(c: &Capture, tid: u32) -> String {
    display(c.threads.get(&tid).map_or("", |t| t.name()))
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// Appends the off-CPU lines to `info`'s text.
pub(super) fn text(o: &mut String, f: &Facts) {
    let c = f.capture;
    if !applies(c) {
        return;
    }
    let Some(off) = c.off_cpu else {
        let _ = writeln!(o, "off-CPU:    {NONE}");
        return;
    };
    let seen = &f.counts.off_cpu_seen;
    let (samples, periods) = seen.values().fold((0u64, 0u64), |a, b| {
        (a.0.saturating_add(b.0), a.1.saturating_add(b.1))
    });
    let _ = write!(
        o,
        "off-CPU:    period {} ({} ns); {samples} samples standing for {periods} periods \
         ({:.3} s)",
        period_text(off.period_ns),
        off.period_ns,
        metric::secs(periods, c.period_ns(Metric::OffCpu))
    );
    for (i, s) in ThreadState::ALL.into_iter().enumerate() {
        let n = seen.get(&s).map_or(0, |x| x.1);
        let _ = write!(o, "{}{} {n}", if i == 0 { ": " } else { ", " }, s.letter());
    }
    let _ = writeln!(o, "; {} lost", c.lost_off_cpu);
    if c.thread_times.is_empty() {
        let _ = writeln!(o, "thread times: none recorded");
        return;
    }
    let _ = writeln!(
        o,
        "thread times: measured in the kernel, in seconds (wall = CPU + S + D + R; life: \
         first to last accounted instant within the recording)"
    );
    let _ = writeln!(
        o,
        "  {:>7} {:<16} {:>10} {:>10} {:>10} {:>10} {:>10} {:>6} {:>10}",
        "tid", "name", "cpu", "S", "D", "R", "wall", "off%", "life"
    );
    let all = by_wall(c);
    for t in all.iter().take(SHOWN) {
        let _ = writeln!(
            o,
            "  {:>7} {:<16} {:>10.3} {:>10.3} {:>10.3} {:>10.3} {:>10.3} {:>5.1}% {:>10.3}{}",
            t.tid,
            thread_name(c, t.tid),
            secs(t.on_cpu_ns),
            secs(t.sleeping_ns),
            secs(t.uninterruptible_ns),
            secs(t.runnable_ns),
            secs(t.wall_ns()),
            pct(t.total_off_cpu_ns(), t.wall_ns()),
            secs(t.last_ns.saturating_sub(t.first_ns)),
            if t.exited { ", exited" } else { "" }
        );
    }
    if all.len() > SHOWN {
        let _ = writeln!(o, "  … {} more threads", all.len() - SHOWN);
    }
}

#[derive(Serialize)]
pub(super) struct OffCpuJson {
    /// False for a capture recorded without `--off-cpu` (every other field is then empty).
    recorded: bool,
    period_ns: Option<u64>,
    samples: u64,
    periods: u64,
    ns: u64,
    states: Vec<StateJson>,
    lost: u64,
    /// Every thread with kernel-measured times, most wall time first.
    thread_times: Vec<TimesJson>,
}

#[derive(Serialize)]
struct StateJson {
    state: char,
    samples: u64,
    periods: u64,
    ns: u64,
}

#[derive(Serialize)]
struct TimesJson {
    tid: u32,
    pid: u32,
    /// Empty for a thread the capture has no other record of.
    name: String,
    first_ns: u64,
    last_ns: u64,
    exited: bool,
    on_cpu_ns: u64,
    off_cpu_ns: u64,
    sleeping_ns: u64,
    uninterruptible_ns: u64,
    runnable_ns: u64,
    wall_ns: u64,
}

/// The `off_cpu` object of `info`'s JSON; `None` (no field) for a capture of a format
/// before 1.3.
pub(super) fn json(f: &Facts) -> Option<OffCpuJson> {
    let c = f.capture;
    if !applies(c) {
        return None;
    }
    let period = if c.off_cpu.is_some() {
        c.period_ns(Metric::OffCpu)
    } else {
        0
    };
    let seen = &f.counts.off_cpu_seen;
    let states: Vec<StateJson> = ThreadState::ALL
        .into_iter()
        .map(|s| {
            let (samples, periods) = seen.get(&s).copied().unwrap_or_default();
            StateJson {
                state: s.letter(),
                samples,
                periods,
                ns: metric::ns(periods, period),
            }
        })
        .collect();
    let samples = states.iter().fold(0u64, |a, s| a.saturating_add(s.samples));
    let periods = states.iter().fold(0u64, |a, s| a.saturating_add(s.periods));
    Some(OffCpuJson {
        recorded: c.off_cpu.is_some(),
        period_ns: c.off_cpu.map(|o| o.period_ns),
        samples,
        periods,
        ns: metric::ns(periods, period),
        states,
        lost: c.lost_off_cpu,
        thread_times: by_wall(c)
            .into_iter()
            .map(|t| TimesJson {
                tid: t.tid,
                pid: t.pid,
                name: thread_name(c, t.tid),
                first_ns: t.first_ns,
                last_ns: t.last_ns,
                exited: t.exited,
                on_cpu_ns: t.on_cpu_ns,
                off_cpu_ns: t.total_off_cpu_ns(),
                sleeping_ns: t.sleeping_ns,
                uninterruptible_ns: t.uninterruptible_ns,
                runnable_ns: t.runnable_ns,
                wall_ns: t.wall_ns(),
            })
            .collect(),
    })
}
