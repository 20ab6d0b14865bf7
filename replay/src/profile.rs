//! Folding samples into stacks of names: the aggregation every view and report starts from.

use std::collections::{BTreeMap, HashMap, HashSet};

use hotspot_format::StackId;

use crate::capture::Capture;
use crate::names::{self, FrameName};

/// Which samples count.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Monotonic ns bounds, inclusive.
    pub from_ns: Option<u64>,
    pub to_ns: Option<u64>,
    pub tids: Option<HashSet<u32>>,
    pub pids: Option<HashSet<u32>>,
    /// Drop kernel frames (a sample taken in the kernel counts for its user caller).
    pub no_kernel: bool,
}

/// Samples per distinct stack of names (root first).
#[derive(Debug, Default)]
pub struct Folded {
    pub stacks: BTreeMap<Vec<FrameName>, u64>,
    pub total: u64,
    /// Samples whose stack id the capture does not define (a lost block).
    pub unknown_stacks: u64,
}

/// Expands each stack id once.
#[derive(Debug, Default)]
pub struct StackNames {
    cache: HashMap<StackId, Option<Vec<FrameName>>>,
}

impl StackNames {
    /// Logical frames of a stack, root first; `None` if the capture does not define it.
    pub fn get(&mut self, capture: &Capture, id: StackId) -> Option<&Vec<FrameName>> {
        self.cache
            .entry(id)
            .or_insert_with(|| {
                let frames = capture.stacks.get(&id)?;
                let mut out = Vec::with_capacity(frames.len());
                for &f in frames {
                    if out.len() >= names::MAX_LOGICAL_FRAMES {
                        break;
                    }
                    names::expand(capture, f, &mut out);
                }
                // Leaf first so far: what is cut is nearest the root.
                out.truncate(names::MAX_LOGICAL_FRAMES);
                out.reverse();
                Some(out)
            })
            .as_ref()
    }
}

/// Folds the samples that pass `filter`.
pub fn fold(capture: &Capture, filter: &Filter) -> Folded {
    let mut per_stack: HashMap<StackId, u64> = HashMap::new();
    let pid_of = |tid: u32| capture.threads.get(&tid).map(|t| t.pid);
    for s in &capture.samples {
        if filter.from_ns.is_some_and(|f| s.time_ns < f)
            || filter.to_ns.is_some_and(|t| s.time_ns > t)
        {
            continue;
        }
        if filter.tids.as_ref().is_some_and(|t| !t.contains(&s.tid)) {
            continue;
        }
        if let Some(pids) = &filter.pids
            && !pid_of(s.tid).is_some_and(|p| pids.contains(&p))
        {
            continue;
        }
        *per_stack.entry(s.stack).or_default() += 1;
    }
    let mut names = StackNames::default();
    let mut out = Folded::default();
    for (id, n) in per_stack {
        out.total += n;
        let Some(frames) = names.get(capture, id) else {
            out.unknown_stacks += n;
            continue;
        };
        let key: Vec<FrameName> = if filter.no_kernel {
            frames.iter().filter(|f| !f.kernel).cloned().collect()
        } else {
            frames.clone()
        };
        *out.stacks.entry(key).or_default() += n;
    }
    out
}
