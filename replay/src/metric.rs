//! What a profile weighs: time on the CPU, time off it, or both (wall-clock). The one rule
//! every view and export reads to turn a sample into a weight.
//!
//! A CPU sample stands for one period (1/freq); an off-CPU sample for the `periods` of
//! blocked time it was emitted for (SPEC.md §6.1). So the three metrics share one unit,
//! and per thread wall = CPU + off-CPU.

use std::fmt;
use std::str::FromStr;

use hotspot_format::ThreadState;

/// What kind of time a sample stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Class {
    /// A timer tick that found the thread running.
    OnCpu,
    /// Time the thread spent off the CPU, by why.
    OffCpu(ThreadState),
}

/// Which samples a profile counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Metric {
    /// On-CPU samples only: what every capture has, and the default.
    #[default]
    Cpu,
    /// Off-CPU samples only: where threads waited.
    OffCpu,
    /// Both: where the threads' time went, running or not.
    Wall,
}

impl Metric {
    /// Every metric, in the order the views cycle through them.
    pub const ALL: [Metric; 3] = [Metric::Cpu, Metric::OffCpu, Metric::Wall];

    /// The periods a sample of `class` standing for `periods` periods counts for under
    /// this metric: 0 when the metric does not count it.
    pub fn periods(self, class: Class, periods: u64) -> u64 {
        match (self, class) {
            (Metric::Cpu, Class::OnCpu)
            | (Metric::OffCpu, Class::OffCpu(_))
            | (Metric::Wall, _) => periods,
            _ => 0,
        }
    }

    /// Whether this metric counts samples of `class`.
    pub fn counts(self, class: Class) -> bool {
        self.periods(class, 1) > 0
    }

    /// The name on the command line (`--metric`).
    pub fn name(self) -> &'static str {
        match self {
            Metric::Cpu => "cpu",
            Metric::OffCpu => "off-cpu",
            Metric::Wall => "wall",
        }
    }

    /// The name in prose and titles.
    pub fn label(self) -> &'static str {
        match self {
            Metric::Cpu => "CPU",
            Metric::OffCpu => "off-CPU",
            Metric::Wall => "wall-clock",
        }
    }

    /// The metric after this one, for a toggle.
    pub fn next(self) -> Metric {
        match self {
            Metric::Cpu => Metric::OffCpu,
            Metric::OffCpu => Metric::Wall,
            Metric::Wall => Metric::Cpu,
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A `--metric` value that is not one of the three.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown metric '{0}': expected cpu, off-cpu or wall")]
pub struct UnknownMetric(pub String);

impl FromStr for Metric {
    type Err = UnknownMetric;

    fn from_str(s: &str) -> Result<Metric, UnknownMetric> {
        Metric::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| UnknownMetric(crate::sanitize::display(s)))
    }
}

/// `periods` × `period_ns` (the capture's [`Capture::period_ns`](crate::Capture::period_ns)
/// under the metric), saturating: a hostile period must not wrap.
pub fn ns(periods: u64, period_ns: u64) -> u64 {
    periods.saturating_mul(period_ns)
}

/// Seconds of `periods` of `period_ns` each (for text).
pub fn secs(periods: u64, period_ns: u64) -> f64 {
    periods as f64 * period_ns as f64 / 1e9
}

/// The module of the frame an off-CPU stack ends in (see [`state_frame`]).
pub const OFF_CPU_MODULE: &str = "[off-cpu]";

/// The function name of the synthetic leaf frame that every off-CPU stack gets in the
/// model: so the flame graph, the flat profile, the tree and every export split blocked
/// time by why, with no rule of their own.
pub fn state_frame(state: ThreadState) -> &'static str {
    match state {
        ThreadState::Sleeping => "[off-CPU: S sleeping]",
        ThreadState::Uninterruptible => "[off-CPU: D uninterruptible]",
        ThreadState::Runnable => "[off-CPU: R runnable, waiting for a CPU]",
    }
}

/// The state a [`state_frame`] name stands for: how a reader of an output, where a frame's
/// kind is not written, tells the state frames apart (the model goes by the frame's
/// [`FrameKind`](crate::kind::FrameKind), never by its name).
pub fn state_of_frame(module: &str, function: &str) -> Option<ThreadState> {
    if module != OFF_CPU_MODULE {
        return None;
    }
    ThreadState::ALL
        .into_iter()
        .find(|&s| state_frame(s) == function)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_metric_counts_its_own_samples() {
        let off = Class::OffCpu(ThreadState::Uninterruptible);
        assert_eq!(Metric::Cpu.periods(Class::OnCpu, 1), 1);
        assert_eq!(Metric::Cpu.periods(off, 7), 0);
        assert_eq!(Metric::OffCpu.periods(Class::OnCpu, 1), 0);
        assert_eq!(Metric::OffCpu.periods(off, 7), 7);
        assert_eq!(Metric::Wall.periods(Class::OnCpu, 1), 1);
        assert_eq!(Metric::Wall.periods(off, 7), 7);
    }

    #[test]
    fn names_parse_back_and_others_are_refused() {
        for m in Metric::ALL {
            assert_eq!(m.name().parse::<Metric>(), Ok(m));
        }
        assert_eq!(
            "offcpu".parse::<Metric>().map_err(|e| e.to_string()),
            Err("unknown metric 'offcpu': expected cpu, off-cpu or wall".to_string())
        );
        for s in ThreadState::ALL {
            assert_eq!(state_of_frame(OFF_CPU_MODULE, state_frame(s)), Some(s));
            assert_eq!(state_of_frame("libc.so.6", state_frame(s)), None);
        }
    }
}
