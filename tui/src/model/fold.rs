//! The fold of a selection: the selected samples' weights per interned stack, and the
//! flat rows, call tree and callers/callees the views show, computed by
//! [`hotspot_replay::model::aggregate`] (the same rules the reports follow).

use std::sync::Arc;

use super::{Data, Query};
use hotspot_replay::model::aggregate::{self, FlatRow, Neighbours, Selected, Tree};
use hotspot_replay::names::FunctionKey;

/// The selected samples folded into everything the views show.
#[derive(Debug, Clone)]
pub struct Fold {
    /// Weight selected, in periods of the query's metric (for a CPU fold, samples).
    pub total: u64,
    /// Weight of samples whose stack the capture does not define (a lost block).
    pub unknown_stacks: u64,
    /// Flat rows, heaviest self first.
    pub flat: Vec<FlatRow>,
    /// Built on first use (see [`ensure_tree`]): the flat view does not need it.
    pub tree: Tree,
    pub tree_built: bool,
    /// Function table the tree's indices refer to.
    pub functions: Vec<FunctionKey>,
    /// Source lines the tree's indices refer to.
    pub lines: Vec<(Arc<str>, u32)>,
    /// Weights per interned stack: what the tree and callers/callees fold.
    pub selected: Selected,
    /// Weight in the time selection per dense thread index (threads filter ignored, so
    /// the thread list shows what including a thread would add).
    pub per_thread: Vec<u64>,
}

impl Fold {
    /// The function of a tree node (`None` for the root).
    pub fn key(&self, node: usize) -> Option<&FunctionKey> {
        let f = self.tree.nodes.get(node)?.func?;
        self.functions.get(f as usize)
    }

    /// The hottest source line of a tree node.
    pub fn line(&self, node: usize) -> Option<&(Arc<str>, u32)> {
        let l = self.tree.nodes.get(node)?.line?;
        self.lines.get(l as usize)
    }
}

/// Folds the samples `q` selects.
pub fn fold(data: &mut Data, q: &Query) -> Fold {
    data.intern_stacks();
    let mask = q.mask(data);
    let mut per_thread = vec![0u64; data.threads.len()];
    let mut counts = vec![0u64; data.stack_ids.len()];
    // Every dense index is in range; anything else would be counted as undefined.
    let mut stray = 0u64;
    let counted = data.counted(q.metric);
    for (_, cells) in data.buckets.range(q.from_ns, q.to_ns) {
        for c in cells {
            if let Some(k) = &counted
                && !k.get(c.stack as usize).copied().unwrap_or(true)
            {
                continue;
            }
            per_thread[c.thread as usize] += c.count;
            if mask[c.thread as usize] {
                continue;
            }
            match counts.get_mut(c.stack as usize) {
                Some(n) => *n += c.count,
                None => stray += c.count,
            }
        }
    }
    let mut selected = Selected::default();
    let (mut total, mut unknown_stacks) = (stray, stray);
    for (id, &n) in counts.iter().enumerate().filter(|(_, n)| **n > 0) {
        total += n;
        match data.interned(id as u32, q.hide()) {
            Some(s) => selected.add(s, n),
            None => unknown_stacks += n,
        }
    }
    let p = &data.profile;
    Fold {
        total,
        unknown_stacks,
        flat: aggregate::flat(p, &selected),
        tree: Tree::default(),
        tree_built: false,
        functions: p.keys().to_vec(),
        lines: p.lines().to_vec(),
        selected,
        per_thread,
    }
}

/// Builds the fold's call tree if it is not built yet.
pub fn ensure_tree(fold: &mut Fold, data: &Data) {
    if fold.tree_built {
        return;
    }
    fold.tree = aggregate::tree(&data.profile, &fold.selected);
    fold.tree_built = true;
}

/// Who calls `target` and what it calls, in the fold's selection.
pub fn neighbours(fold: &Fold, data: &Data, target: &FunctionKey) -> Neighbours {
    aggregate::neighbours(&data.profile, &fold.selected, target)
}
