//! The naive string-keyed fold, the oracle the interned model (`hotspot_replay::model`)
//! is checked against: every stack expanded into names, stacks keyed by those names in
//! a `BTreeMap`, flat rows and the call tree built from the keys with plain maps. It was
//! the reports' engine before they read the model.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use hotspot_format::StackId;
use hotspot_replay::Capture;
use hotspot_replay::kind::FrameKind;
use hotspot_replay::model::aggregate::{FlatRow, Neighbours};
use hotspot_replay::names::{self, FrameName, FunctionKey};

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

/// Every sample of `c`, folded by names (kernel frames dropped if asked).
pub fn fold(capture: &Capture, no_kernel: bool) -> Folded {
    let mut per_stack: HashMap<StackId, u64> = HashMap::new();
    for s in &capture.samples {
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
        let key: Vec<FrameName> = if no_kernel {
            frames
                .iter()
                .filter(|f| !f.kind.is_kernel())
                .cloned()
                .collect()
        } else {
            frames.clone()
        };
        *out.stacks.entry(key).or_default() += n;
    }
    out
}

/// Per source line of a function: (self, total) samples.
type LineCounts = BTreeMap<(Arc<str>, u32), (u64, u64)>;

/// Rows sorted by self samples, then total, then name (deterministic).
pub fn flat(folded: &Folded) -> Vec<FlatRow> {
    let mut rows: HashMap<FunctionKey, FlatRow> = HashMap::new();
    let mut lines: HashMap<FunctionKey, LineCounts> = HashMap::new();
    for (stack, &n) in &folded.stacks {
        let mut seen: HashSet<&FunctionKey> = HashSet::new();
        let keys: Vec<FunctionKey> = stack
            .iter()
            .map(|f| FunctionKey {
                function: f.function.clone(),
                module: f.module.clone(),
                kind: f.kind,
            })
            .collect();
        for (i, (k, f)) in keys.iter().zip(stack).enumerate() {
            let leaf = i + 1 == stack.len();
            let row = rows.entry(k.clone()).or_insert_with(|| FlatRow {
                key: k.clone(),
                self_samples: 0,
                total_samples: 0,
                hottest: None,
            });
            // Recursion must not count a sample twice in the total.
            if seen.insert(k) {
                row.total_samples += n;
            }
            if leaf {
                row.self_samples += n;
            }
            if let Some(file) = &f.file {
                let e = lines
                    .entry(k.clone())
                    .or_default()
                    .entry((file.clone(), f.line))
                    .or_default();
                if leaf {
                    e.0 += n;
                }
                e.1 += n;
            }
        }
    }
    let mut out: Vec<FlatRow> = rows
        .into_values()
        .map(|mut r| {
            r.hottest = lines
                .get(&r.key)
                .and_then(|m| {
                    m.iter()
                        .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))
                })
                .map(|(k, _)| k.clone());
            r
        })
        .collect();
    out.sort_by(|a, b| {
        b.self_samples
            .cmp(&a.self_samples)
            .then(b.total_samples.cmp(&a.total_samples))
            .then_with(|| a.key.cmp(&b.key))
    });
    out
}

/// Index of a node in [`CallTree::nodes`]; 0 is the root.
pub type NodeId = usize;

/// One node: a function reached by one path from the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// `None` for the root.
    pub key: Option<FunctionKey>,
    pub parent: Option<NodeId>,
    /// Hottest first (then by name), so the hottest branch is leftmost.
    pub children: Vec<NodeId>,
    /// Samples at or below this node.
    pub total: u64,
    /// Samples whose leaf is this node.
    pub self_samples: u64,
    /// Deepest source location seen for this node, with its sample count, as
    /// (file, line) → samples; the hottest is what a view shows.
    pub lines: Vec<((Arc<str>, u32), u64)>,
}

/// A call tree over a set of folded stacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallTree {
    pub nodes: Vec<Node>,
}

impl CallTree {
    /// Builds the tree of `folded` (whose stacks are root first).
    pub fn build(folded: &Folded) -> CallTree {
        let mut nodes = vec![Node {
            key: None,
            parent: None,
            children: Vec::new(),
            total: 0,
            self_samples: 0,
            lines: Vec::new(),
        }];
        let mut index: HashMap<(NodeId, FunctionKey), NodeId> = HashMap::new();
        let mut lines: HashMap<NodeId, HashMap<(Arc<str>, u32), u64>> = HashMap::new();
        for (stack, &n) in &folded.stacks {
            nodes[0].total += n;
            let mut at = 0;
            for (i, f) in stack.iter().enumerate() {
                let key = key_of(f);
                let next = match index.get(&(at, key.clone())) {
                    Some(&id) => id,
                    None => {
                        let id = nodes.len();
                        nodes.push(Node {
                            key: Some(key.clone()),
                            parent: Some(at),
                            children: Vec::new(),
                            total: 0,
                            self_samples: 0,
                            lines: Vec::new(),
                        });
                        nodes[at].children.push(id);
                        index.insert((at, key), id);
                        id
                    }
                };
                nodes[next].total += n;
                if i + 1 == stack.len() {
                    nodes[next].self_samples += n;
                }
                if let Some(file) = &f.file {
                    *lines
                        .entry(next)
                        .or_default()
                        .entry((file.clone(), f.line))
                        .or_default() += n;
                }
                at = next;
            }
            if stack.is_empty() {
                nodes[0].self_samples += n;
            }
        }
        for (id, m) in lines {
            let mut v: Vec<_> = m.into_iter().collect();
            v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            nodes[id].lines = v;
        }
        let order: Vec<(u64, Option<FunctionKey>)> =
            nodes.iter().map(|n| (n.total, n.key.clone())).collect();
        for n in &mut nodes {
            n.children.sort_by(|&a, &b| {
                order[b]
                    .0
                    .cmp(&order[a].0)
                    .then_with(|| order[a].1.cmp(&order[b].1))
            });
        }
        CallTree { nodes }
    }

    pub fn root(&self) -> &Node {
        &self.nodes[0]
    }

    pub fn get(&self, id: NodeId) -> Option<&Node> {
        self.nodes.get(id)
    }

    /// Depth of a node (root is 0).
    pub fn depth(&self, mut id: NodeId) -> usize {
        let mut d = 0;
        while let Some(p) = self.nodes.get(id).and_then(|n| n.parent) {
            d += 1;
            id = p;
        }
        d
    }

    /// Node ids from the root (exclusive) down to `id` (inclusive).
    pub fn path(&self, mut id: NodeId) -> Vec<NodeId> {
        let mut out = Vec::new();
        while let Some(n) = self.nodes.get(id) {
            if n.parent.is_none() {
                break;
            }
            out.push(id);
            id = n.parent.unwrap_or(0);
        }
        out.reverse();
        out
    }
}

/// The function identity a frame is merged under.
pub fn key_of(f: &FrameName) -> FunctionKey {
    f.key()
}

/// Who calls `target` and what it calls, with the samples that flow through each edge.
pub fn neighbours(folded: &Folded, target: &FunctionKey) -> Neighbours {
    let mut out = Neighbours::default();
    let mut callers: HashMap<FunctionKey, u64> = HashMap::new();
    let mut callees: HashMap<FunctionKey, u64> = HashMap::new();
    for (stack, &n) in &folded.stacks {
        let keys: Vec<FunctionKey> = stack.iter().map(key_of).collect();
        let Some(first) = keys.iter().position(|k| k == target) else {
            continue;
        };
        out.total += n;
        if keys.last() == Some(target) {
            out.self_samples += n;
        }
        // Count each neighbour once per stack, at the outermost occurrence, so
        // recursion does not inflate the shares past 100%.
        if first > 0 {
            *callers.entry(keys[first - 1].clone()).or_default() += n;
        } else {
            *callers
                .entry(FunctionKey {
                    function: "[root]".into(),
                    module: "".into(),
                    kind: FrameKind::Marker,
                })
                .or_default() += n;
        }
        let last = keys.iter().rposition(|k| k == target).unwrap_or(first);
        if let Some(callee) = keys.get(last + 1) {
            *callees.entry(callee.clone()).or_default() += n;
        }
    }
    let sorted = |m: HashMap<FunctionKey, u64>| {
        let mut v: Vec<_> = m.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        v
    };
    out.callers = sorted(callers);
    out.callees = sorted(callees);
    out
}
