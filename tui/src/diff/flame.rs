//! The differential flame graph's model: the new capture's call tree (what the widths
//! are) matched node by node against the base's, along the path of functions from the
//! root, functions matched as the diff matches them ([`match_key`]). A frame is *new* where
//! the base has no such path; else *slower* or *faster* by the sign of the change of its
//! self weight (share or time per second, on the diff's scale), where its function's self
//! change is beyond noise in the diff (the same test as `hotspot diff`), and unchanged
//! otherwise. Paths only the base has cannot be drawn at the new capture's widths: they
//! are counted (*gone*), and their functions are in the flat view.

use hotspot_replay::export::diff::{Diff, Scale, match_key};
use hotspot_replay::metric;
use hotspot_replay::model::aggregate::Tree;
use rustc_hash::FxHashMap;

use super::Compare;
use crate::model::Fold;

/// What happened to a frame of the new capture's tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The root ("all").
    Root,
    /// Not beyond noise, or no self weight changed.
    Same,
    Slower,
    Faster,
    /// A path the base does not have.
    New,
}

impl Change {
    /// The glyph a frame's label starts with, so the change reads without colour too.
    pub fn glyph(self) -> &'static str {
        match self {
            Change::Slower => "▲",
            Change::Faster => "▼",
            Change::New => "+",
            Change::Root | Change::Same => "",
        }
    }
}

/// Per node of the new fold's tree, its change and its node in the base's tree.
#[derive(Debug, Clone, Default)]
pub struct Flame {
    pub nodes: Vec<(Change, Option<usize>)>,
    /// Frames (paths) of the base's tree that the new capture does not have.
    pub gone: usize,
}

/// The change of a weight on the diff's scale: share points, or ms per second.
pub fn delta(d: &Diff, base: u64, base_total: u64, new: u64, new_total: u64) -> f64 {
    match d.scale {
        Scale::Share => {
            let share = |n: u64, of: u64| 100.0 * n as f64 / of.max(1) as f64;
            share(new, new_total) - share(base, base_total)
        }
        Scale::Rate => {
            let rate = |n: u64, period: u64, s: f64| {
                if s > 0.0 {
                    metric::ns(n, period) as f64 / 1e6 / s
                } else {
                    0.0
                }
            };
            rate(new, d.new_period_ns, d.new_duration_s)
                - rate(base, d.base_period_ns, d.base_duration_s)
        }
    }
}

/// Matches the new fold's tree (built) against the base's ([`Compare::tree`]).
pub fn compare(fold: &Fold, c: &Compare) -> Flame {
    let (new, base) = (&fold.tree, &c.tree);
    let Some(d) = c.diff.as_ref() else {
        return Flame::default();
    };
    // Each function of either model as a dense id of its match key, once per function
    // rather than once per node.
    let mut ids: FxHashMap<hotspot_replay::export::diff::MatchKey, u32> = FxHashMap::default();
    let mut id_of = |k: &hotspot_replay::names::FunctionKey| {
        let n = ids.len() as u32;
        *ids.entry(match_key(k)).or_insert(n)
    };
    let base_ids: Vec<u32> = c.base.profile.keys().iter().map(&mut id_of).collect();
    let new_ids: Vec<u32> = fold.functions.iter().map(&mut id_of).collect();
    // The base's children by (parent, matched function).
    let mut children: FxHashMap<(usize, u32), usize> = FxHashMap::default();
    for (i, n) in base.nodes.iter().enumerate() {
        if let (Some(p), Some(&k)) = (n.parent, n.func.and_then(|f| base_ids.get(f as usize))) {
            children.insert((p, k), i);
        }
    }
    // Each new function's change in the diff, once per function.
    let beyond: Vec<bool> = fold
        .functions
        .iter()
        .map(|k| c.change(k).is_some_and(|ch| d.marks(ch)[0]))
        .collect();
    let (nt, bt) = (total(new), total(base));
    let mut out = Flame {
        nodes: vec![(Change::Same, None); new.nodes.len()],
        gone: 0,
    };
    let mut matched = vec![false; base.nodes.len()];
    if !out.nodes.is_empty() {
        out.nodes[0] = (Change::Root, Some(0));
        if let Some(m) = matched.first_mut() {
            *m = true;
        }
    }
    // From the root down, so a parent is matched before its children.
    let mut todo: Vec<usize> = new.nodes.first().map_or(Vec::new(), |r| r.children.clone());
    while let Some(i) = todo.pop() {
        let n = &new.nodes[i];
        todo.extend(&n.children);
        let func = n.func.map(|f| f as usize);
        let at = n
            .parent
            .and_then(|p| out.nodes[p].1)
            .zip(func.and_then(|f| new_ids.get(f)))
            .and_then(|(bp, &k)| children.get(&(bp, k)).copied());
        let Some(b) = at else {
            out.nodes[i] = (Change::New, None);
            continue;
        };
        matched[b] = true;
        let beyond = func.and_then(|f| beyond.get(f).copied()).unwrap_or(false);
        let dx = delta(d, base.nodes[b].self_samples, bt, n.self_samples, nt);
        let change = if !beyond || dx == 0.0 {
            Change::Same
        } else if dx > 0.0 {
            Change::Slower
        } else {
            Change::Faster
        };
        out.nodes[i] = (change, Some(b));
    }
    out.gone = base
        .nodes
        .iter()
        .zip(&matched)
        .filter(|(n, m)| !**m && n.total > 0)
        .count();
    out
}

fn total(t: &Tree) -> u64 {
    t.nodes.first().map_or(0, |n| n.total)
}
