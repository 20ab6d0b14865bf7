//! The views' selection as the input of every export and of the diff: the weights the
//! views' buckets hold for a query, per thread, capture stack and class, over the views'
//! own profile model ([`Slice::from_model`]). What a format writes from it is what it
//! writes from a file scan of the same selection (`tests/export_from_views.rs`), so a
//! diff in the terminal or a report of what the views show needs no second reader.

use std::collections::BTreeSet;

use hotspot_replay::export::Selection;
use hotspot_replay::export::slice::{Extent, Slice, Weights};
use hotspot_replay::time::TimeSpec;

use super::{Data, Query};

/// The samples `q` selects as a [`Slice`]: its time range (whole buckets, as every view
/// counts them), the threads it does not exclude, its metric and `--no-kernel`.
pub fn slice<'a>(data: &'a mut Data, q: &Query) -> Slice<'a> {
    data.intern_stacks();
    of_interned(data, q)
}

/// [`slice()`] of each query, over one model (a diff takes two).
pub fn slices<'a>(data: &'a mut Data, queries: &[&Query]) -> Vec<Slice<'a>> {
    data.intern_stacks();
    let data: &'a Data = data;
    queries.iter().map(|q| of_interned(data, q)).collect()
}

/// [`slice()`] once every sampled stack is interned.
fn of_interned<'a>(data: &'a Data, q: &Query) -> Slice<'a> {
    let counted = data.counted(q.metric);
    let counts = |stack: u32| {
        counted
            .as_ref()
            .is_none_or(|k| k.get(stack as usize).copied().unwrap_or(true))
    };
    let mut weights = Weights::new();
    let mut capture_total = 0u64;
    for (_, cells) in data.buckets.range(0, u64::MAX) {
        for c in cells.iter().filter(|c| counts(c.stack)) {
            capture_total += c.count;
        }
    }
    let mut included: BTreeSet<u32> = BTreeSet::new();
    for t in &data.threads {
        if !q.excluded.contains(&t.tid) {
            included.insert(t.tid);
        }
    }
    for (_, cells) in data.buckets.range(q.from_ns, q.to_ns) {
        for c in cells.iter().filter(|c| counts(c.stack)) {
            let (Some(thread), Some(&stack), Some(&class)) = (
                data.threads.get(c.thread as usize),
                data.stack_ids.get(c.stack as usize),
                data.stack_class.get(c.stack as usize),
            ) else {
                continue;
            };
            if included.contains(&thread.tid) {
                *weights.entry((thread.tid, stack, class)).or_default() += c.count;
            }
        }
    }
    let clock = data.clock();
    let start = clock.map_or(0, |c| c.start_mono_ns);
    let offset = |ns: u64| TimeSpec::Offset(ns.saturating_sub(start));
    let some_excluded = included.len() < data.threads.len();
    let selection = Selection {
        from: clock.map(|_| offset(q.from_ns)),
        to: clock.map(|_| offset(q.to_ns)),
        tids: if some_excluded {
            included.into_iter().collect()
        } else {
            Vec::new()
        },
        threads: Vec::new(),
        pids: Vec::new(),
        no_kernel: q.no_kernel,
        no_interpreter: q.no_interpreter,
        metric: q.metric,
    };
    let extent = Extent {
        capture_total,
        ..window(data, q)
    };
    Slice::from_model(&data.capture, &data.profile, weights, selection, extent)
}

/// Where `q`'s window sits in the capture (its weight in the whole capture left at 0):
/// what a [`slice()`] of it says, and what its duration is of.
pub fn window(data: &Data, q: &Query) -> Extent {
    Extent {
        clock: data.clock(),
        from_ns: Some(q.from_ns),
        to_ns: Some(q.to_ns),
        // The first and last sample of any class: the buckets keep no span per class.
        // It bounds the window only where the window runs past it (the whole capture).
        span: data.buckets.span(),
        window_span: None,
        capture_total: 0,
    }
}
