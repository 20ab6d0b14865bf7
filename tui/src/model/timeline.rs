//! The time strip's model: the whole capture over a terminal's width of columns, each
//! with its samples and its dominant leaf function and thread.

use std::collections::BTreeSet;

use super::{Data, Query};
use hotspot_replay::metric::Metric;
use hotspot_replay::model::{Hide, Interned};
use hotspot_replay::names::FunctionKey;

/// One column of the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Bucket {
    pub samples: u64,
    /// Index into [`Timeline::functions`] of the leaf function seen most.
    pub function: Option<u32>,
    /// Dense index of the thread seen most.
    pub thread: Option<u32>,
}

/// The whole capture as samples per time bucket.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timeline {
    pub start: u64,
    pub end: u64,
    pub buckets: Vec<Bucket>,
    pub functions: Vec<FunctionKey>,
}

impl Timeline {
    /// Bucket holding `t` (clamped).
    pub fn column(&self, t: u64) -> usize {
        let n = self.buckets.len().max(1) as u128;
        let span = u128::from(self.end - self.start).max(1);
        let off = u128::from(t.clamp(self.start, self.end) - self.start);
        ((off * n / span) as usize).min(self.buckets.len().saturating_sub(1))
    }

    /// Time at the left edge of column `c`.
    pub fn time_at(&self, c: usize) -> u64 {
        let n = self.buckets.len().max(1) as u128;
        let span = u128::from(self.end - self.start);
        self.start + (span * c as u128 / n) as u64
    }
}

/// Most frequent value among `items` through a reusable counter.
pub(super) struct Dominant {
    pub(super) counts: Vec<u64>,
    pub(super) touched: Vec<u32>,
}

impl Dominant {
    pub(super) fn new(n: usize) -> Dominant {
        Dominant {
            counts: vec![0; n],
            touched: Vec::new(),
        }
    }

    pub(super) fn add(&mut self, v: u32, n: u64) {
        let Some(c) = self.counts.get_mut(v as usize) else {
            return;
        };
        if *c == 0 {
            self.touched.push(v);
        }
        *c += n;
    }

    /// The most frequent value (ties: the smallest), and resets.
    fn take(&mut self) -> Option<u32> {
        let mut best: Option<(u32, u64)> = None;
        for &v in &self.touched {
            let c = self.counts[v as usize];
            if best.is_none_or(|(bv, bc)| c > bc || (c == bc && v < bv)) {
                best = Some((v, c));
            }
            self.counts[v as usize] = 0;
        }
        self.touched.clear();
        best.map(|(v, _)| v)
    }
}

/// The capture over `width` buckets (threads `excluded` left out), weighed by `metric`.
pub fn timeline(
    data: &mut Data,
    excluded: &BTreeSet<u32>,
    hide: Hide,
    metric: Metric,
    width: usize,
) -> Timeline {
    let Some((start, end)) = data.span() else {
        return Timeline::default();
    };
    let q = Query {
        excluded: excluded.clone(),
        ..Query::default()
    };
    let mask = q.mask(data);
    let n_threads = data.threads.len();
    data.intern_stacks();
    let functions = data.profile.keys().to_vec();
    let n_stacks = data.stack_ids.len();
    let of_stack: Vec<u32> = (0..n_stacks as u32)
        .map(|id| match data.interned(id, hide) {
            Some(Interned::Stack(s)) => data.profile.leaf_function(s),
            _ => u32::MAX,
        })
        .collect();
    let mut t = Timeline {
        start,
        end,
        buckets: vec![Bucket::default(); width],
        functions,
    };
    if width == 0 {
        return t;
    }
    let counted = data.counted(metric);
    let mut by_fn = Dominant::new(t.functions.len());
    let mut by_thread = Dominant::new(n_threads);
    let mut col: Option<usize> = None;
    let width_ns = data.buckets.width();
    for (at, cells) in data.buckets.range(0, u64::MAX) {
        // A model bucket wider than a column (a capture with many stacks per bucket, see
        // `buckets::CELLS_PER_PAIR`) is spread evenly over the columns it covers, so it
        // draws as a plateau, not as a spike beside false gaps.
        let c0 = t.column(at);
        let c1 = t.column(at.saturating_add(width_ns - 1)).max(c0);
        let n = (c1 - c0 + 1) as u64;
        for c in c0..=c1 {
            if col != Some(c) {
                if let Some(p) = col {
                    t.buckets[p].function = by_fn.take();
                    t.buckets[p].thread = by_thread.take();
                }
                col = Some(c);
            }
            let k = (c - c0) as u64;
            for cell in cells {
                if mask[cell.thread as usize]
                    || counted
                        .as_ref()
                        .is_some_and(|k| !k.get(cell.stack as usize).copied().unwrap_or(true))
                {
                    continue;
                }
                let share = cell.count / n + u64::from(k < cell.count % n);
                if share == 0 {
                    continue;
                }
                t.buckets[c].samples += share;
                if let Some(&f) = of_stack.get(cell.stack as usize) {
                    by_fn.add(f, share);
                }
                by_thread.add(cell.thread, share);
            }
        }
    }
    if let Some(p) = col {
        t.buckets[p].function = by_fn.take();
        t.buckets[p].thread = by_thread.take();
    }
    t
}
