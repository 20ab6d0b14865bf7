//! The stream's model: the dominant stack (the heaviest path from the root) of each
//! time bucket of the selection.

use std::collections::HashMap;

use super::timeline::Dominant;
use super::{Data, Query};
use hotspot_replay::model::Hide;
use hotspot_replay::names::FrameName;

/// The heaviest path through the stacks counted in `dom` (which is reset): from the
/// root down, the function with the most samples among the stacks that agree so far. So
/// two threads, or one phase split over many leaves, still give a stable answer.
/// Returns a stack holding that path (the most sampled one) and the path's length.
fn heaviest(dom: &mut Dominant, data: &Data, hide: Hide) -> Option<(u32, usize)> {
    let cands: Vec<(u32, u64)> = dom
        .touched
        .iter()
        .map(|&v| (v, dom.counts[v as usize]))
        .collect();
    for &v in &dom.touched {
        dom.counts[v as usize] = 0;
    }
    dom.touched.clear();
    let mut frames = Vec::new();
    let seqs: Vec<Vec<u32>> = cands
        .iter()
        .map(|&(id, _)| match data.interned(id, hide) {
            Some(s) => {
                data.profile.path(s, &mut frames);
                frames
                    .iter()
                    .map(|&f| data.profile.frames[f as usize].function)
                    .collect()
            }
            None => Vec::new(),
        })
        .collect();
    let mut alive: Vec<usize> = (0..cands.len()).collect();
    let mut depth = 0;
    loop {
        let mut weights: Vec<(u32, u64)> = Vec::new();
        for &i in &alive {
            if let Some(&f) = seqs[i].get(depth) {
                match weights.iter_mut().find(|(g, _)| *g == f) {
                    Some((_, w)) => *w += cands[i].1,
                    None => weights.push((f, cands[i].1)),
                }
            }
        }
        let Some(&(f, _)) = weights
            .iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
        else {
            break;
        };
        alive.retain(|&i| seqs[i].get(depth) == Some(&f));
        depth += 1;
    }
    alive
        .iter()
        .max_by(|&&a, &&b| {
            cands[a]
                .1
                .cmp(&cands[b].1)
                .then(cands[b].0.cmp(&cands[a].0))
        })
        .map(|&i| (cands[i].0, depth))
}

/// The stream: the dominant stack (heaviest path) of each time bucket of the selection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stream {
    /// Per column, an index into `stacks` (None: no samples).
    pub columns: Vec<Option<u32>>,
    /// Distinct dominant stacks, root first.
    pub stacks: Vec<Vec<FrameName>>,
    /// Time buckets the columns show (fewer than columns when samples are sparse).
    pub buckets: usize,
}

/// Samples a stream bucket should hold at least, on average.
const SAMPLES_PER_BUCKET: usize = 8;

/// Dominant stack per bucket of `q`'s time range, over `width` columns.
pub fn stream(data: &mut Data, q: &Query, width: usize) -> Stream {
    let mut out = Stream {
        columns: vec![None; width],
        stacks: Vec::new(),
        buckets: 0,
    };
    if width == 0 || q.to_ns < q.from_ns {
        return out;
    }
    data.intern_stacks();
    let mask = q.mask(data);
    let dense = data.stack_ids.len();
    let mut dom = Dominant::new(dense);
    let selected = data.buckets.count(q.from_ns, q.to_ns) as usize;
    // A bucket needs a few samples for "dominant" to mean something: with few samples,
    // fewer (wider) buckets, each drawn over several columns. Never finer than the
    // model's own buckets, which would draw false gaps.
    let buckets = (selected / SAMPLES_PER_BUCKET)
        .min(data.buckets.spanned(q.from_ns, q.to_ns))
        .clamp(1, width);
    let span = u128::from(q.to_ns - q.from_ns) + 1;
    let bucket_of = |t: u64| {
        let off = u128::from(t.clamp(q.from_ns, q.to_ns) - q.from_ns);
        ((off * buckets as u128 / span) as usize).min(buckets - 1)
    };
    out.buckets = buckets;
    let counted = data.counted(q.metric);
    let mut picks: Vec<Option<(u32, usize)>> = vec![None; buckets];
    let mut col: Option<usize> = None;
    for (at, cells) in data.buckets.range(q.from_ns, q.to_ns) {
        let c = bucket_of(at);
        if col != Some(c) {
            if let Some(p) = col {
                picks[p] = heaviest(&mut dom, data, q.hide());
            }
            col = Some(c);
        }
        for cell in cells {
            let counts = counted
                .as_ref()
                .is_none_or(|k| k.get(cell.stack as usize).copied().unwrap_or(true));
            if counts && !mask[cell.thread as usize] {
                dom.add(cell.stack, cell.count);
            }
        }
    }
    if let Some(p) = col {
        picks[p] = heaviest(&mut dom, data, q.hide());
    }
    let mut index: HashMap<(u32, usize), Option<u32>> = HashMap::new();
    for c in 0..width {
        let Some((id, depth)) = picks[c * buckets / width] else {
            continue;
        };
        let slot = match index.get(&(id, depth)) {
            Some(&s) => s,
            None => {
                let s = data.stack_names(id, q.hide()).map(|mut names| {
                    names.truncate(depth);
                    out.stacks.push(names);
                    (out.stacks.len() - 1) as u32
                });
                index.insert((id, depth), s);
                s
            }
        };
        out.columns[c] = slot;
    }
    out
}
