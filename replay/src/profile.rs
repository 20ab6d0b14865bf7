//! A capture's samples as stacks of names (`BTreeMap<Vec<FrameName>, u64>`), read off the
//! interned model ([`crate::model`]): for tests and tools that want to look at stacks by
//! name (the end-to-end tests). The reports and views aggregate on the model itself.

use std::collections::{BTreeMap, HashMap};

use hotspot_format::StackId;

use crate::capture::Capture;
use crate::model::{Hide, Interned, Profile};
use crate::names::FrameName;

pub use crate::export::slice::Filter;

/// Samples per distinct stack of names (root first).
#[derive(Debug, Default)]
pub struct Folded {
    pub stacks: BTreeMap<Vec<FrameName>, u64>,
    pub total: u64,
    /// Samples whose stack id the capture does not define (a lost block).
    pub unknown_stacks: u64,
}

/// The names of each capture stack, interned once.
#[derive(Debug, Default)]
pub struct StackNames {
    profile: Profile,
    cache: HashMap<StackId, Option<Vec<FrameName>>>,
}

impl StackNames {
    /// Logical frames of a stack, root first; `None` if the capture does not define it.
    pub fn get(&mut self, capture: &Capture, id: StackId) -> Option<&Vec<FrameName>> {
        let profile = &mut self.profile;
        self.cache
            .entry(id)
            .or_insert_with(|| {
                let s = profile.stack_of(capture, id, Hide::NOTHING)?;
                Some(names(profile, s))
            })
            .as_ref()
    }
}

fn names(profile: &Profile, s: Interned) -> Vec<FrameName> {
    let mut frames = Vec::new();
    profile.path(s, &mut frames);
    frames.iter().map(|&f| profile.frame_name(f)).collect()
}

/// The samples of `capture` that pass `filter`, by stacks of names.
pub fn fold(capture: &Capture, filter: &Filter) -> Folded {
    let mut per_stack: BTreeMap<StackId, u64> = BTreeMap::new();
    let pid_of = |tid: u32| capture.threads.get(&tid).map(|t| t.pid);
    for s in &capture.samples {
        if filter.from_ns.is_some_and(|f| s.time_ns < f)
            || filter.to_ns.is_some_and(|t| s.time_ns > t)
            || filter.tids.as_ref().is_some_and(|t| !t.contains(&s.tid))
        {
            continue;
        }
        if let Some(pids) = &filter.pids
            && !pid_of(s.tid).is_some_and(|p| pids.contains(&p))
        {
            continue;
        }
        *per_stack.entry(s.stack).or_default() += crate::capture::SAMPLE_WEIGHT;
    }
    let mut profile = Profile::default();
    let mut out = Folded::default();
    for (id, n) in per_stack {
        out.total += n;
        match profile.stack_of(capture, id, filter.hide()) {
            Some(s) => *out.stacks.entry(names(&profile, s)).or_default() += n,
            None => out.unknown_stacks += n,
        }
    }
    out
}
