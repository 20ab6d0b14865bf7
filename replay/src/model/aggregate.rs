//! Aggregations over the interned model: the flat profile, the call tree and the
//! callers/callees of a function, from the summed weights of the selected samples per
//! stack ([`Selected`]).
//!
//! The rules (every view and report follows them):
//! - flat: self is the weight of the samples whose leaf is the function; total the weight
//!   of the samples with the function anywhere on the stack, recursion counted once; the
//!   hottest line the one with the most self weight, then total, then the first by name;
//!   rows by self, then total, then key;
//! - call tree: frames merged by function along the path from the root; children by
//!   total, then key; a node's line its heaviest, then the first by name;
//! - callers/callees: per sample, the caller of the function's outermost occurrence and
//!   the callee of its innermost, so recursion does not push shares past 100%.
//!
//! Weights flow up the stack table once per aggregation (a row's prefix comes before
//! it), so flat and tree cost a pass over the table, not over each sample's frames.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::{FuncId, Interned, NO_LINE, Profile, StackIdx};
use crate::names::{FrameName, FunctionKey};

/// The selected samples' weights per stack.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selected {
    /// Per stack row, the weight of the samples whose stack ends there (rows added to
    /// the profile later count nothing).
    pub leaf: Vec<u64>,
    /// Rows with weight, in order of first weight.
    pub sampled: Vec<StackIdx>,
    /// The weight of samples whose stack has no frame.
    pub empty: u64,
}

impl Selected {
    /// Adds `weight` to a stack.
    pub fn add(&mut self, stack: Interned, weight: u64) {
        match stack {
            Interned::Empty => self.empty += weight,
            Interned::Stack(s) => {
                let s = s as usize;
                if self.leaf.len() <= s {
                    self.leaf.resize(s + 1, 0);
                }
                if self.leaf[s] == 0 && weight > 0 {
                    self.sampled.push(s as StackIdx);
                }
                self.leaf[s] += weight;
            }
        }
    }

    /// The weight selected (empty stacks included).
    pub fn total(&self) -> u64 {
        self.empty + self.leaf.iter().sum::<u64>()
    }

    fn leaf(&self, s: usize) -> u64 {
        self.leaf.get(s).copied().unwrap_or(0)
    }

    /// Per stack row, the weight at or below it.
    fn inclusive(&self, p: &Profile) -> Vec<u64> {
        let mut w = vec![0u64; p.stacks.len()];
        for &s in &self.sampled {
            w[s as usize] += self.leaf[s as usize];
        }
        for s in (0..p.stacks.len()).rev() {
            if let Some(prefix) = p.stacks[s].prefix
                && w[s] > 0
            {
                w[prefix as usize] += w[s];
            }
        }
        w
    }
}

/// One row of the flat profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlatRow {
    pub key: FunctionKey,
    pub self_samples: u64,
    pub total_samples: u64,
    /// The source line with the most self weight (else total), if known.
    pub hottest: Option<(Arc<str>, u32)>,
}

/// Flat rows, by self, then total, then key.
pub fn flat(p: &Profile, sel: &Selected) -> Vec<FlatRow> {
    let incl = sel.inclusive(p);
    let nf = p.keys.len();
    let (mut self_w, mut total_w) = (vec![0u64; nf], vec![0u64; nf]);
    // Per frame (a function at a line): (self, total).
    let mut at_frame = vec![(0u64, 0u64); p.frames.len()];
    for (s, row) in p.stacks.iter().enumerate() {
        if incl[s] == 0 {
            continue;
        }
        let fr = p.frames[row.frame as usize];
        let f = fr.function as usize;
        let leaf = sel.leaf(s);
        if row.outermost {
            total_w[f] += incl[s];
        }
        self_w[f] += leaf;
        if fr.line != NO_LINE {
            let e = &mut at_frame[row.frame as usize];
            e.0 += leaf;
            e.1 += incl[s];
        }
    }
    let mut hottest: Vec<Option<(u32, (u64, u64))>> = vec![None; nf];
    for (fr, &c) in p.frames.iter().zip(&at_frame) {
        if c.1 == 0 {
            continue;
        }
        let h = &mut hottest[fr.function as usize];
        let better = match *h {
            None => true,
            Some((bl, bc)) => {
                c > bc || (c == bc && p.lines[fr.line as usize] < p.lines[bl as usize])
            }
        };
        if better {
            *h = Some((fr.line, c));
        }
    }
    let mut rows: Vec<FlatRow> = (0..nf)
        .filter(|&f| total_w[f] > 0)
        .map(|f| FlatRow {
            key: p.keys[f].clone(),
            self_samples: self_w[f],
            total_samples: total_w[f],
            hottest: hottest[f].map(|(l, _)| p.lines[l as usize].clone()),
        })
        .collect();
    rows.sort_by(|a, b| {
        b.self_samples
            .cmp(&a.self_samples)
            .then(b.total_samples.cmp(&a.total_samples))
            .then_with(|| a.key.cmp(&b.key))
    });
    rows
}

/// One node of the call tree: a function reached by one path from the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeNode {
    /// The function (an index into [`Profile::keys`]); `None` for the root.
    pub func: Option<FuncId>,
    pub parent: Option<usize>,
    /// Heaviest first (then by key), so the heaviest branch is leftmost.
    pub children: Vec<usize>,
    pub total: u64,
    pub self_samples: u64,
    /// The heaviest source line (an index into [`Profile::lines`]).
    pub line: Option<u32>,
    /// Every source line seen at this node with its weight, heaviest first (then by
    /// name); `line` is the first.
    pub lines: Vec<(u32, u64)>,
}

/// The call tree: node 0 is the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    pub nodes: Vec<TreeNode>,
}

impl Default for Tree {
    fn default() -> Tree {
        Tree {
            nodes: vec![node(None, None)],
        }
    }
}

fn node(func: Option<FuncId>, parent: Option<usize>) -> TreeNode {
    TreeNode {
        func,
        parent,
        children: Vec::new(),
        total: 0,
        self_samples: 0,
        line: None,
        lines: Vec::new(),
    }
}

impl Tree {
    /// Depth of a node (root is 0).
    pub fn depth(&self, mut id: usize) -> usize {
        let mut d = 0;
        while let Some(p) = self.nodes.get(id).and_then(|n| n.parent) {
            d += 1;
            id = p;
        }
        d
    }

    /// Node ids from the root (exclusive) down to `id` (inclusive).
    pub fn path(&self, mut id: usize) -> Vec<usize> {
        let mut out = Vec::new();
        while let Some(p) = self.nodes.get(id).and_then(|n| n.parent) {
            out.push(id);
            id = p;
        }
        out.reverse();
        out
    }
}

/// The call tree of the selection.
pub fn tree(p: &Profile, sel: &Selected) -> Tree {
    let incl = sel.inclusive(p);
    let mut t = Tree::default();
    t.nodes[0].total = sel.total();
    t.nodes[0].self_samples = sel.empty;
    let mut node_of = vec![0u32; p.stacks.len()];
    let mut index: FxHashMap<(u32, FuncId), u32> = FxHashMap::default();
    let mut lines: Vec<(u32, u32, u64)> = Vec::new();
    for (s, row) in p.stacks.iter().enumerate() {
        if incl[s] == 0 {
            continue;
        }
        let parent = row.prefix.map_or(0, |q| node_of[q as usize]);
        let fr = p.frames[row.frame as usize];
        let nodes = &mut t.nodes;
        let n = *index.entry((parent, fr.function)).or_insert_with(|| {
            nodes.push(node(Some(fr.function), Some(parent as usize)));
            let id = nodes.len() - 1;
            nodes[parent as usize].children.push(id);
            id as u32
        });
        node_of[s] = n;
        let nd = &mut t.nodes[n as usize];
        nd.total += incl[s];
        nd.self_samples += sel.leaf(s);
        if fr.line != NO_LINE {
            lines.push((n, fr.line, incl[s]));
        }
    }
    lines.sort_unstable_by_key(|&(n, l, _)| (n, l));
    let mut i = 0;
    while i < lines.len() {
        let n = lines[i].0;
        let mut per: Vec<(u32, u64)> = Vec::new();
        while i < lines.len() && lines[i].0 == n {
            match per.last_mut() {
                Some(last) if last.0 == lines[i].1 => last.1 += lines[i].2,
                _ => per.push((lines[i].1, lines[i].2)),
            }
            i += 1;
        }
        per.sort_by(|a, b| {
            b.1.cmp(&a.1)
                .then_with(|| p.lines[a.0 as usize].cmp(&p.lines[b.0 as usize]))
        });
        let nd = &mut t.nodes[n as usize];
        nd.line = per.first().map(|&(l, _)| l);
        nd.lines = per;
    }
    // Rank functions by key once, so sorting children compares integers.
    let rank = key_rank(p);
    let order: Vec<(u64, u32)> = t
        .nodes
        .iter()
        .map(|n| (n.total, n.func.map_or(0, |f| rank[f as usize])))
        .collect();
    for n in &mut t.nodes {
        n.children.sort_by(|&a, &b| {
            order[b]
                .0
                .cmp(&order[a].0)
                .then(order[a].1.cmp(&order[b].1))
        });
    }
    t
}

/// Per function, its place in key order.
pub fn key_rank(p: &Profile) -> Vec<u32> {
    let mut by_key: Vec<u32> = (0..p.keys.len() as u32).collect();
    by_key.sort_by(|&a, &b| p.keys[a as usize].cmp(&p.keys[b as usize]));
    let mut rank = vec![0u32; by_key.len()];
    for (r, &f) in by_key.iter().enumerate() {
        rank[f as usize] = r as u32;
    }
    rank
}

/// Callers and callees of one function, across every place it appears.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Neighbours {
    /// Weight of the samples with the function on the stack (recursion counted once).
    pub total: u64,
    pub self_samples: u64,
    /// (caller, weight through that caller), heaviest first.
    pub callers: Vec<(FunctionKey, u64)>,
    /// (callee, weight through that callee), heaviest first.
    pub callees: Vec<(FunctionKey, u64)>,
}

/// The caller of a function called from the root.
pub fn root_key() -> FunctionKey {
    FrameName::placeholder("[root]").key()
}

/// Who calls `target` and what it calls, with the weight that flows through each edge.
pub fn neighbours(p: &Profile, sel: &Selected, target: &FunctionKey) -> Neighbours {
    let mut out = Neighbours::default();
    let Some(t) = p.function_id(target) else {
        return out;
    };
    const ROOT: u32 = u32::MAX;
    let mut callers: FxHashMap<u32, u64> = FxHashMap::default();
    let mut callees: FxHashMap<u32, u64> = FxHashMap::default();
    let func = |s: StackIdx| p.frames[p.stacks[s as usize].frame as usize].function;
    for &leaf in &sel.sampled {
        let n = sel.leaf[leaf as usize];
        // From the leaf up: the first occurrence met is the innermost, the last the
        // outermost.
        let (mut below, mut callee, mut caller) = (None, None, None);
        let mut at = Some(leaf);
        while let Some(s) = at {
            let f = func(s);
            let prefix = p.stacks[s as usize].prefix;
            if f == t {
                if caller.is_none() {
                    callee = below;
                }
                caller = Some(prefix.map_or(ROOT, func));
            }
            below = Some(f);
            at = prefix;
        }
        let Some(caller) = caller else { continue };
        out.total += n;
        if func(leaf) == t {
            out.self_samples += n;
        }
        *callers.entry(caller).or_default() += n;
        if let Some(c) = callee {
            *callees.entry(c).or_default() += n;
        }
    }
    let key = |f: u32| {
        if f == ROOT {
            root_key()
        } else {
            p.keys[f as usize].clone()
        }
    };
    let sorted = |m: FxHashMap<u32, u64>| {
        let mut v: Vec<(FunctionKey, u64)> = m.into_iter().map(|(f, n)| (key(f), n)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        v
    };
    out.callers = sorted(callers);
    out.callees = sorted(callees);
    out
}
