//! Wall time per thread, compared: when both captures were recorded with `--off-cpu`,
//! each holds the kernel's exact account of every traced thread's time on the CPU and off
//! it (S, D, R: its `ThreadTimes` records). Threads of two runs have different ids, so
//! they are matched by name, and threads of one name (a pool) are summed, with how many
//! there were. These are measured, not sampled: there is no sampling noise to test, and
//! they cover each whole recording (a time window does not apply; the thread and process
//! filters do). Shown under `--metric off-cpu` and `wall`: under `cpu` a capture's outputs
//! stay those of the capture without its off-CPU records. The headless diff and the views'
//! diff both read this one comparison.

use std::collections::BTreeMap;

use super::super::slice::Slice;
use crate::capture::Capture;
use crate::metric::Metric;

/// The summed times of a capture's threads of one name, in ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadTime {
    /// Threads of that name.
    pub threads: u32,
    pub on_cpu_ns: u64,
    /// Off the CPU: sleeping (S), uninterruptible (D), runnable (R).
    pub off_cpu_ns: [u64; 3],
}

impl ThreadTime {
    /// On and off the CPU together.
    pub fn wall_ns(&self) -> u64 {
        self.off_cpu_ns
            .iter()
            .fold(self.on_cpu_ns, |a, &b| a.saturating_add(b))
    }

    /// Off the CPU, every state.
    pub fn off_ns(&self) -> u64 {
        self.off_cpu_ns
            .iter()
            .fold(0u64, |a, &b| a.saturating_add(b))
    }
}

/// One thread name in both captures (`None`: no thread of that name there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadChange {
    /// The thread name as recorded (sanitise before printing).
    pub name: String,
    pub base: Option<ThreadTime>,
    pub new: Option<ThreadTime>,
}

impl ThreadChange {
    /// Wall time of each side, 0 where absent.
    pub fn walls(&self) -> (u64, u64) {
        (
            self.base.map_or(0, |t| t.wall_ns()),
            self.new.map_or(0, |t| t.wall_ns()),
        )
    }

    /// Growth of the wall time in % of the base; `None` for a thread the base lacked.
    pub fn wall_growth(&self) -> Option<f64> {
        let (b, n) = self.walls();
        (b > 0).then(|| 100.0 * (n as f64 - b as f64) / b as f64)
    }
}

/// The name a thread is matched by (an unnamed one by a placeholder that no thread name
/// can be: names are at most 15 bytes of `comm`).
fn name_of(capture: &Capture, tid: u32) -> String {
    match capture.threads.get(&tid).map(|t| t.name()) {
        Some(n) if !n.is_empty() => n.to_string(),
        _ => "(unnamed threads)".to_string(),
    }
}

fn times((capture, keep): Threads) -> BTreeMap<String, ThreadTime> {
    let mut out: BTreeMap<String, ThreadTime> = BTreeMap::new();
    for t in capture.thread_times.values() {
        if !keep(t.tid) {
            continue;
        }
        let e = out.entry(name_of(capture, t.tid)).or_default();
        e.threads += 1;
        e.on_cpu_ns = e.on_cpu_ns.saturating_add(t.on_cpu_ns);
        for (sum, ns) in
            e.off_cpu_ns
                .iter_mut()
                .zip([t.sleeping_ns, t.uninterruptible_ns, t.runnable_ns])
        {
            *sum = sum.saturating_add(ns);
        }
    }
    out
}

/// Each thread name's time in both captures, the largest change of wall time first (then
/// by name); `None` unless both captures were recorded with off-CPU data and the diff
/// weighs off-CPU or wall time.
pub fn compare(base: &Slice, new: &Slice) -> Option<Vec<ThreadChange>> {
    compare_captures(
        (base.capture, &|tid| base.keeps(tid)),
        (new.capture, &|tid| new.keeps(tid)),
        new.metric(),
    )
}

/// A capture and which of its threads count.
pub type Threads<'a> = (&'a Capture, &'a dyn Fn(u32) -> bool);

/// [`compare`] of two captures' threads that `keep` selects, under `metric`.
pub fn compare_captures(base: Threads, new: Threads, metric: Metric) -> Option<Vec<ThreadChange>> {
    if base.0.off_cpu.is_none() || new.0.off_cpu.is_none() || metric == Metric::Cpu {
        return None;
    }
    let (mut b, n) = (times(base), times(new));
    let mut out: Vec<ThreadChange> = n
        .into_iter()
        .map(|(name, t)| ThreadChange {
            base: b.remove(&name),
            name,
            new: Some(t),
        })
        .collect();
    out.extend(b.into_iter().map(|(name, t)| ThreadChange {
        name,
        base: Some(t),
        new: None,
    }));
    out.sort_by(|x, y| {
        let d = |c: &ThreadChange| {
            let (b, n) = c.walls();
            b.abs_diff(n)
        };
        d(y).cmp(&d(x)).then_with(|| x.name.cmp(&y.name))
    });
    Some(out)
}
