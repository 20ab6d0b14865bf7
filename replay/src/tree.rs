//! The call tree (root first, frames merged by function): what flame graphs, the
//! callers/callees view and the JSON report's tree are drawn from.

use std::collections::HashMap;
use std::sync::Arc;

use crate::names::{FrameName, FunctionKey};
use crate::profile::Folded;

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

pub use crate::model::aggregate::Neighbours;

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
                    kernel: false,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(name: &str) -> FrameName {
        FrameName {
            function: name.into(),
            module: "m".into(),
            file: Some("a.c".into()),
            line: 1,
            kernel: false,
        }
    }

    fn folded(stacks: &[(&[&str], u64)]) -> Folded {
        let mut f = Folded::default();
        for (s, n) in stacks {
            f.stacks.insert(s.iter().map(|x| frame(x)).collect(), *n);
            f.total += n;
        }
        f
    }

    #[test]
    fn tree_merges_by_function_and_orders_hottest_first() {
        let f = folded(&[
            (&["main", "a", "leaf"], 3),
            (&["main", "b", "leaf"], 5),
            (&["main", "a"], 1),
        ]);
        let t = CallTree::build(&f);
        assert_eq!(t.root().total, 9);
        let main = t.root().children[0];
        assert_eq!(t.nodes[main].total, 9);
        let kids: Vec<_> = t.nodes[main]
            .children
            .iter()
            .map(|&c| {
                (
                    t.nodes[c].key.clone().map(|k| k.function),
                    t.nodes[c].total,
                    t.nodes[c].self_samples,
                )
            })
            .collect();
        assert_eq!(
            kids,
            vec![(Some("b".into()), 5, 0), (Some("a".into()), 4, 1)]
        );
        let leaf = t.nodes[t.nodes[main].children[0]].children[0];
        assert_eq!(t.depth(leaf), 3);
        assert_eq!(t.path(leaf).len(), 3);
    }

    #[test]
    fn neighbours_count_recursion_once() {
        let f = folded(&[
            (&["main", "r", "r", "r", "leaf"], 4),
            (&["main", "x", "r"], 2),
        ]);
        let k = key_of(&frame("r"));
        let n = neighbours(&f, &k);
        assert_eq!(n.total, 6);
        assert_eq!(n.self_samples, 2);
        let callers: Vec<_> = n.callers.iter().map(|(k, c)| (&*k.function, *c)).collect();
        assert_eq!(callers, vec![("main", 4), ("x", 2)]);
        let callees: Vec<_> = n.callees.iter().map(|(k, c)| (&*k.function, *c)).collect();
        assert_eq!(callees, vec![("leaf", 4)]);
    }
}
