//! How complete a capture's user stacks are: which stacks end in a marker frame (the
//! recorder's note of why it stopped short), tallied per process for `info`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use hotspot_format::{StackId, UnwindMethod};
use serde::Serialize;

use crate::capture::Capture;
use crate::metric::Class;
use crate::names::UNKNOWN;

/// The reason a stack stopped short, if its root-most frame is a marker.
pub fn marker_reason(capture: &Capture, stack: StackId) -> Option<Arc<str>> {
    let markers = capture.unwinding.as_ref()?.markers?;
    let root = *capture.stacks.get(&stack)?.last()?;
    let frame = capture.frames.get(&root)?;
    if frame.module != markers {
        return None;
    }
    Some(
        capture
            .symbols
            .get(&root)
            .and_then(|s| capture.shared_string(s.function))
            .unwrap_or_else(|| UNKNOWN.into()),
    )
}

/// The completeness of one process's stacks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProcessStacks {
    pub pid: u32,
    pub name: String,
    pub samples: u64,
    /// Samples whose stack did not end in a marker.
    pub complete: u64,
    /// Why the others stopped short, most samples first, then by name.
    pub reasons: Vec<Reason>,
}

/// One marker and the samples whose stack it ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reason {
    pub reason: String,
    pub samples: u64,
}

/// What `info` says about unwinding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Completeness {
    /// `cfi` or `frame-pointers`.
    pub method: &'static str,
    pub stack_cap: u32,
    /// Whether stacks say when they stop short: only CFI-unwound captures do, so for
    /// frame-pointer captures `complete` counts every sample and means nothing.
    pub checked: bool,
    /// Busiest process first, then by pid.
    pub processes: Vec<ProcessStacks>,
}

/// One process's counts while tallying.
#[derive(Default)]
struct Tally {
    samples: u64,
    complete: u64,
    reasons: BTreeMap<Arc<str>, u64>,
}

/// Tallies `samples` ((tid, stack, class) → periods) per process.
pub fn completeness(
    capture: &Capture,
    samples: &BTreeMap<(u32, StackId, Class), u64>,
) -> Completeness {
    let (method, stack_cap, checked) = match capture.unwinding {
        Some(u) if u.method == UnwindMethod::Cfi => ("cfi", u.stack_cap, u.markers.is_some()),
        Some(u) => ("frame-pointers", u.stack_cap, false),
        None => ("frame-pointers", 0, false),
    };
    let mut reasons_of: HashMap<StackId, Option<Arc<str>>> = HashMap::new();
    let mut per: BTreeMap<u32, Tally> = BTreeMap::new();
    for (&(tid, stack, _), &n) in samples {
        let pid = capture.threads.get(&tid).map_or(0, |t| t.pid);
        let reason = reasons_of
            .entry(stack)
            .or_insert_with(|| marker_reason(capture, stack));
        let entry = per.entry(pid).or_default();
        entry.samples += n;
        match reason {
            None => entry.complete += n,
            Some(r) => *entry.reasons.entry(r.clone()).or_default() += n,
        }
    }
    let mut processes: Vec<ProcessStacks> = per
        .into_iter()
        .map(
            |(
                pid,
                Tally {
                    samples,
                    complete,
                    reasons,
                },
            )| {
                let mut reasons: Vec<Reason> = reasons
                    .into_iter()
                    .map(|(r, samples)| Reason {
                        reason: r.to_string(),
                        samples,
                    })
                    .collect();
                reasons.sort_by(|a, b| {
                    b.samples
                        .cmp(&a.samples)
                        .then_with(|| a.reason.cmp(&b.reason))
                });
                ProcessStacks {
                    pid,
                    name: capture
                        .processes
                        .get(&pid)
                        .map(|p| p.name.clone())
                        .unwrap_or_default(),
                    samples,
                    complete,
                    reasons,
                }
            },
        )
        .collect();
    processes.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.pid.cmp(&b.pid)));
    Completeness {
        method,
        stack_cap,
        checked,
        processes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::ThreadInfo;
    use hotspot_format::{Frame, FrameAddr, Module, ModuleKind, Process, Symbol, Unwinding};

    fn capture(method: UnwindMethod) -> Capture {
        let mut c = Capture::default();
        c.unwinding = Some(Unwinding {
            method,
            stack_cap: 4096,
            markers: Some(9),
        });
        for (id, kind, path) in [
            (1, ModuleKind::Elf, "/bin/a"),
            (9, ModuleKind::Elf, "[unwind]"),
        ] {
            c.modules.insert(
                id,
                Module {
                    id,
                    kind,
                    path: path.into(),
                    build_id: Vec::new(),
                },
            );
        }
        for (id, module) in [(0, 1), (1, 1), (2, 9)] {
            c.frames.insert(
                id,
                Frame {
                    id,
                    module,
                    addr: FrameAddr::FileOffset(u64::from(id)),
                },
            );
        }
        let reason = c.intern("[truncated: stack larger than --stack-cap]");
        c.symbols.insert(
            2,
            Symbol {
                frame: 2,
                function: reason,
                ..Symbol::default()
            },
        );
        c.stacks.insert(0, vec![0, 1]);
        c.stacks.insert(1, vec![0, 1, 2]);
        c.threads.insert(
            7,
            ThreadInfo {
                tid: 7,
                pid: 5,
                names: vec![(0, "t".into())],
            },
        );
        c.processes.insert(
            5,
            Process {
                pid: 5,
                name: "a".into(),
                ..Process::default()
            },
        );
        c
    }

    #[test]
    fn stacks_ending_in_a_marker_are_counted_with_their_reason() {
        let c = capture(UnwindMethod::Cfi);
        assert_eq!(marker_reason(&c, 0), None);
        assert_eq!(
            marker_reason(&c, 1).as_deref(),
            Some("[truncated: stack larger than --stack-cap]")
        );
        let samples = BTreeMap::from([((7, 0, Class::OnCpu), 30), ((7, 1, Class::OnCpu), 10)]);
        let got = completeness(&c, &samples);
        assert!(got.checked);
        assert_eq!(got.method, "cfi");
        assert_eq!(
            got.processes,
            vec![ProcessStacks {
                pid: 5,
                name: "a".into(),
                samples: 40,
                complete: 30,
                reasons: vec![Reason {
                    reason: "[truncated: stack larger than --stack-cap]".into(),
                    samples: 10
                }],
            }]
        );
    }

    #[test]
    fn frame_pointer_captures_are_not_checked() {
        let mut c = capture(UnwindMethod::FramePointers);
        assert!(!completeness(&c, &BTreeMap::new()).checked);
        c.unwinding = None;
        let got = completeness(&c, &BTreeMap::from([((7, 1, Class::OnCpu), 3)]));
        assert_eq!((got.method, got.checked), ("frame-pointers", false));
        // Without the record there are no markers: a frame of "[unwind]" is just a frame.
        assert_eq!(got.processes[0].complete, 3);
    }
}
