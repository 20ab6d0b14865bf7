//! The threads view's lanes: per thread, the whole capture over a row of columns, with
//! the time the thread ran and the time it was off the CPU, by state, in each column.
//!
//! An off-CPU sample is taken when its wait ends, and stands for `periods` periods of
//! blocked time, so it covers about `[t − periods·period, t]`: each (thread, class) sum
//! of a model bucket is painted back from the bucket's end over that much time. A
//! thread's waits are disjoint, so the sum of the waits that ended in one bucket is that
//! bucket (less the time it ran) plus the part of the first wait before it: painting the
//! sum back from the bucket's end puts the blocked time where it was, up to a bucket.

use super::Data;
use hotspot_replay::metric::{self, Class, Metric};

/// Time per column, in ns: on a CPU, then off it as S, D and R.
pub type Column = [u64; 4];

/// Per dense thread, its lane of columns over `start..end`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lanes {
    pub start: u64,
    pub end: u64,
    pub rows: Vec<Vec<Column>>,
}

impl Lanes {
    /// The time one column stands for, in ns.
    pub fn column_ns(&self, width: usize) -> u64 {
        ((self.end - self.start) / width.max(1) as u64).max(1)
    }
}

/// Index into a [`Column`] of a class.
fn slot(class: Class) -> usize {
    match class {
        Class::OnCpu => 0,
        Class::OffCpu(s) => 1 + super::state_index(s),
    }
}

/// The lanes of every thread over `width` columns.
pub fn lanes(data: &Data, width: usize) -> Lanes {
    let Some((start, end)) = data.span() else {
        return Lanes::default();
    };
    let n = data.threads.len();
    let mut out = Lanes {
        start,
        end,
        rows: vec![vec![[0; 4]; width]; n],
    };
    if width == 0 {
        return out;
    }
    // A lane shows time on and off the CPU: the wall metric's period.
    let period = data.capture.period_ns(Metric::Wall).max(1);
    let bucket_ns = data.buckets.width();
    let span = u128::from(end - start).max(1);
    // Column boundaries are exact fractions of the span, as on the timeline.
    let edge = |c: usize| start + (span * c as u128 / width as u128) as u64;
    let column = |t: u64| {
        let off = u128::from(t.clamp(start, end) - start);
        ((off * width as u128 / span) as usize).min(width - 1)
    };
    // Per (thread, class), the ns that ended in the bucket at hand.
    let mut sums: Vec<Column> = vec![[0; 4]; n];
    let mut touched: Vec<u32> = Vec::new();
    for (at, cells) in data.buckets.range(0, u64::MAX) {
        for c in cells {
            let Some(&class) = data.stack_class.get(c.stack as usize) else {
                continue;
            };
            let Some(row) = sums.get_mut(c.thread as usize) else {
                continue;
            };
            if row.iter().all(|&v| v == 0) {
                touched.push(c.thread);
            }
            row[slot(class)] = row[slot(class)].saturating_add(metric::ns(c.count, period));
        }
        let t1 = at.saturating_add(bucket_ns).min(end);
        for &th in &touched {
            let row = &mut sums[th as usize];
            for (k, ns) in row.iter_mut().enumerate() {
                if *ns == 0 {
                    continue;
                }
                let t0 = t1.saturating_sub(*ns).max(start);
                let lane = &mut out.rows[th as usize];
                let (c0, c1) = (column(t0), column(t1));
                for (col, cell) in lane.iter_mut().enumerate().take(c1 + 1).skip(c0) {
                    let (a, b) = (edge(col).max(t0), edge(col + 1).min(t1));
                    if b > a {
                        cell[k] += b - a;
                    }
                }
                *ns = 0;
            }
        }
        touched.clear();
    }
    out
}
