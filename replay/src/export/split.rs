//! A weight split by the kind of time it is: on the CPU, or off it in state S, D or R.
//! What the outputs give next to a total under `--metric off-cpu` and `wall` (in periods,
//! and in ns by the capture's one rule, [`Capture::period_ns`](crate::Capture::period_ns)).

use std::collections::{BTreeMap, HashMap, HashSet};

use hotspot_format::{StackId, ThreadState};
use serde::Serialize;

use super::slice::Slice;
use crate::metric::{Class, ns};
use crate::names::FunctionKey;

/// Periods by kind of time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Split {
    pub cpu: u64,
    /// Off the CPU, in [`ThreadState::ALL`] order (S, D, R).
    pub off: [u64; 3],
}

fn index(state: ThreadState) -> usize {
    match state {
        ThreadState::Sleeping => 0,
        ThreadState::Uninterruptible => 1,
        ThreadState::Runnable => 2,
    }
}

impl Split {
    pub fn add(&mut self, class: Class, periods: u64) {
        let slot = match class {
            Class::OnCpu => &mut self.cpu,
            Class::OffCpu(s) => &mut self.off[index(s)],
        };
        *slot = slot.saturating_add(periods);
    }

    /// Periods off the CPU in `state`.
    pub fn state(&self, state: ThreadState) -> u64 {
        self.off[index(state)]
    }

    /// Periods off the CPU, every state.
    pub fn off_cpu(&self) -> u64 {
        self.off.iter().fold(0, |a, &b| a.saturating_add(b))
    }

    /// Periods on and off the CPU.
    pub fn wall(&self) -> u64 {
        self.cpu.saturating_add(self.off_cpu())
    }

    /// The split as JSON gives it, in periods.
    pub fn json(&self) -> SplitJson {
        self.scaled(1)
    }

    /// The split as JSON gives it, in ns.
    pub fn json_ns(&self, period_ns: u64) -> SplitJson {
        self.scaled(period_ns)
    }

    fn scaled(&self, by: u64) -> SplitJson {
        SplitJson {
            cpu: ns(self.cpu, by),
            off_cpu: ns(self.off_cpu(), by),
            sleeping: ns(self.off[0], by),
            uninterruptible: ns(self.off[1], by),
            runnable: ns(self.off[2], by),
        }
    }
}

/// A [`Split`] in the JSON documents: `cpu`, `off_cpu` and the states by their letters.
#[derive(Debug, Serialize)]
pub struct SplitJson {
    pub cpu: u64,
    pub off_cpu: u64,
    #[serde(rename = "S")]
    pub sleeping: u64,
    #[serde(rename = "D")]
    pub uninterruptible: u64,
    #[serde(rename = "R")]
    pub runnable: u64,
}

/// The selected periods split, all threads together.
pub fn total(slice: &Slice) -> Split {
    let mut t = Split::default();
    for (_, _, class, n) in slice.tally() {
        t.add(class, n);
    }
    t
}

/// The selected periods split, per thread.
pub fn by_thread(slice: &Slice) -> BTreeMap<u32, Split> {
    let mut out: BTreeMap<u32, Split> = BTreeMap::new();
    for (tid, _, class, n) in slice.tally() {
        out.entry(tid).or_default().add(class, n);
    }
    out
}

/// Each function's total (inclusive) periods split: a stack counts once for every
/// function on it, however often it recurs, as the flat profile's totals count.
pub fn by_function(slice: &Slice) -> HashMap<FunctionKey, Split> {
    let mut per_stack: BTreeMap<(StackId, Class), u64> = BTreeMap::new();
    for (_, stack, class, n) in slice.tally() {
        let e = per_stack.entry((stack, class)).or_default();
        *e = e.saturating_add(n);
    }
    let mut out: HashMap<FunctionKey, Split> = HashMap::new();
    let mut seen: HashSet<FunctionKey> = HashSet::new();
    for ((stack, class), n) in per_stack {
        let Some(names) = slice.names(stack, class) else {
            continue;
        };
        seen.clear();
        for f in names {
            let key = f.key();
            if seen.insert(key.clone()) {
                out.entry(key).or_default().add(class, n);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_saturate_and_states_keep_their_slots() {
        let mut s = Split::default();
        s.add(Class::OnCpu, 2);
        s.add(Class::OffCpu(ThreadState::Uninterruptible), u64::MAX);
        s.add(Class::OffCpu(ThreadState::Runnable), 5);
        assert_eq!(s.state(ThreadState::Sleeping), 0);
        assert_eq!(s.state(ThreadState::Uninterruptible), u64::MAX);
        assert_eq!(s.off_cpu(), u64::MAX);
        assert_eq!(s.wall(), u64::MAX);
        let j = s.json_ns(3);
        assert_eq!((j.cpu, j.runnable, j.off_cpu), (6, 15, u64::MAX));
    }
}
