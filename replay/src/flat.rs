//! The flat profile: one row per function with self and total (inclusive) samples.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use crate::profile::Folded;

pub use crate::names::FunctionKey;

/// Per source line of a function: (self, total) samples.
type LineCounts = BTreeMap<(Arc<str>, u32), (u64, u64)>;

pub use crate::model::aggregate::FlatRow;

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
                kernel: f.kernel,
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
