//! The user's filters as given on the command line (`--from`, `--to`, `--tid`, `--thread`,
//! `--pid`, `--no-kernel`, `--no-interpreter`), before they are checked against a capture.

use std::fmt::Write;

use super::scan::ScanOptions;
use crate::metric::Metric;
use crate::time::TimeSpec;

/// Which samples a report covers. Threads given by `--tid` and `--thread` add up; `--pid`
/// then keeps only those of the given processes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    pub from: Option<TimeSpec>,
    pub to: Option<TimeSpec>,
    pub tids: Vec<u32>,
    /// Thread names, matched exactly against every name a thread had.
    pub threads: Vec<String>,
    pub pids: Vec<u32>,
    pub no_kernel: bool,
    /// Leave out the interpreter's own frames where Python frames stand for what they ran.
    pub no_interpreter: bool,
    /// What the report weighs (`--metric`).
    pub metric: Metric,
}

impl Selection {
    /// What [`Scan`](super::scan::Scan) needs to know while reading.
    pub fn scan_options(&self, keep_order: bool) -> ScanOptions {
        ScanOptions {
            from: self.from,
            to: self.to,
            keep_order,
            measure_sizes: false,
            metric: self.metric,
        }
    }

    /// True when every sample the metric counts is kept (the metric is no filter: each
    /// output names it where it names what it counts).
    pub fn is_everything(&self) -> bool {
        *self
            == Selection {
                metric: self.metric,
                ..Selection::default()
            }
    }

    /// The filters in words, for report headers (`"from 1.000 s, thread worker"`); names
    /// are sanitised. The metric is not among them (see [`Selection::is_everything`]).
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        if let Some(f) = self.from {
            parts.push(format!("from {f}"));
        }
        if let Some(t) = self.to {
            parts.push(format!("to {t}"));
        }
        if !self.tids.is_empty() {
            parts.push(format!("tid {}", join(&self.tids)));
        }
        if !self.threads.is_empty() {
            let names: Vec<String> = self
                .threads
                .iter()
                .map(|n| format!("'{}'", crate::sanitize::display(n)))
                .collect();
            parts.push(format!("thread {}", names.join(", ")));
        }
        if !self.pids.is_empty() {
            parts.push(format!("pid {}", join(&self.pids)));
        }
        if self.no_kernel {
            parts.push("no kernel frames".to_string());
        }
        if self.no_interpreter {
            parts.push("no interpreter frames".to_string());
        }
        parts.join(", ")
    }
}

fn join(v: &[u32]) -> String {
    let mut s = String::new();
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        let _ = write!(s, "{x}");
    }
    s
}
