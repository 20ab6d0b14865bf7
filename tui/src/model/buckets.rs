//! Samples pre-aggregated by time: a grid of at most [`MAX_BUCKETS`] equal time buckets,
//! each holding one count per (thread, stack) seen in it. This is what the views fold, so
//! memory follows distinct stacks (times the bucket count), not the number of samples.
//!
//! The grid is aligned to absolute multiples of the bucket width (a power of two ns), so
//! widening it merges whole buckets pairwise and extending it never splits one: a sample's
//! bucket is decided by its time alone.
//!
//! Two limits keep memory bounded by distinct stacks: at most [`MAX_BUCKETS`] buckets, and
//! at most [`CELLS_PER_PAIR`] cells per distinct (thread, stack) pair (or [`FLOOR_CELLS`],
//! whichever is more). A capture whose buckets each hold many different stacks gets
//! wider buckets: coarser selection edges rather than memory that grows with samples.

use rustc_hash::FxHashSet;

/// Most buckets kept; when the span outgrows them the width doubles. 4096 buckets put
/// the selection's edges within 1/4096 of the capture, finer than any terminal column.
pub const MAX_BUCKETS: usize = 4096;

/// Cells allowed per distinct (thread, stack) pair before buckets widen.
pub const CELLS_PER_PAIR: usize = 32;

/// Cells always allowed (8 MiB): small captures keep their full resolution.
pub const FLOOR_CELLS: usize = 1 << 19;

/// Samples of one thread with one stack in one bucket: their summed weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cell {
    pub thread: u32,
    pub stack: u32,
    pub count: u64,
}

impl Cell {
    fn key(&self) -> u64 {
        (u64::from(self.thread) << 32) | u64::from(self.stack)
    }
}

/// The grid.
#[derive(Debug, Clone, Default)]
pub struct Buckets {
    /// Start of bucket 0 (a multiple of the width).
    origin: u64,
    /// Width is `1 << shift` ns.
    shift: u32,
    /// The narrowest width the cell budget still allows.
    min_shift: u32,
    /// Cells in all buckets.
    ncells: usize,
    /// Distinct (thread, stack) pairs seen: what the cell budget scales with.
    pairs: FxHashSet<u64>,
    /// Cells of each bucket, sorted by (thread, stack).
    buckets: Vec<Vec<Cell>>,
    samples: u64,
    /// Exact first and last sample times.
    span: Option<(u64, u64)>,
    /// Reused by [`Buckets::extend`].
    scratch: Vec<(u64, u64, u64)>,
}

impl Buckets {
    /// Adds samples given as (time, thread, stack), each weighing 1.
    pub fn extend(&mut self, samples: impl IntoIterator<Item = (u64, u32, u32)>) {
        self.extend_weighted(samples.into_iter().map(|(t, th, st)| (t, th, st, 1)));
    }

    /// Adds samples given as (time, thread, stack, weight): a cell sums its samples'
    /// weights.
    pub fn extend_weighted(&mut self, samples: impl IntoIterator<Item = (u64, u32, u32, u64)>) {
        let mut batch = std::mem::take(&mut self.scratch);
        batch.clear();
        let (mut lo, mut hi) = (u64::MAX, 0u64);
        for (time, thread, stack, weight) in samples {
            lo = lo.min(time);
            hi = hi.max(time);
            batch.push((time, (u64::from(thread) << 32) | u64::from(stack), weight));
        }
        if batch.is_empty() {
            self.scratch = batch;
            return;
        }
        self.samples += batch.len() as u64;
        self.span = Some(match self.span {
            None => (lo, hi),
            Some((a, b)) => (a.min(lo), b.max(hi)),
        });
        self.fit(lo, hi);
        let (origin, shift) = (self.origin, self.shift);
        let mut changes = 0usize;
        let mut prev = u64::MAX;
        for s in &mut batch {
            s.0 = (s.0 - origin) >> shift;
            changes += usize::from(s.0 != prev);
            prev = s.0;
        }
        // Samples arrive nearly in time order, so a batch is a few long runs of one
        // bucket: sorting each run's keys is cheap. A shuffled batch (a hostile file) is
        // sorted whole instead, so it costs n log n, never a merge per sample.
        if changes.saturating_mul(64) > batch.len() {
            batch.sort_unstable();
        }
        let mut keys: Vec<(u64, u64)> = Vec::new();
        let mut run: Vec<Cell> = Vec::new();
        let mut i = 0;
        while i < batch.len() {
            let bucket = batch[i].0;
            keys.clear();
            while i < batch.len() && batch[i].0 == bucket {
                keys.push((batch[i].1, batch[i].2));
                i += 1;
            }
            keys.sort_unstable();
            run.clear();
            for &(key, weight) in &keys {
                match run.last_mut() {
                    Some(c) if c.key() == key => c.count += weight,
                    _ => run.push(Cell {
                        thread: (key >> 32) as u32,
                        stack: key as u32,
                        count: weight,
                    }),
                }
            }
            for c in &run {
                self.pairs.insert(c.key());
            }
            let dst = &mut self.buckets[bucket as usize];
            let was = dst.len();
            merge(dst, &run);
            self.ncells += dst.len() - was;
        }
        self.scratch = batch;
        let budget = FLOOR_CELLS.max(CELLS_PER_PAIR.saturating_mul(self.pairs.len()));
        while self.ncells > budget && self.shift < 63 {
            self.min_shift = self.shift + 1;
            let (a, b) = (self.origin, self.start_of(self.buckets.len() - 1));
            self.fit(a, b);
        }
    }

    /// Grows the grid (wider buckets, earlier origin, more buckets) to cover `lo..=hi`.
    fn fit(&mut self, lo: u64, hi: u64) {
        let (lo, hi, mut shift) = if self.buckets.is_empty() {
            (lo, hi, self.min_shift)
        } else {
            let end = self.start_of(self.buckets.len() - 1);
            (
                lo.min(self.origin),
                hi.max(end),
                self.shift.max(self.min_shift),
            )
        };
        while ((hi >> shift) - (lo >> shift)) as usize >= MAX_BUCKETS {
            shift += 1;
        }
        let origin = (lo >> shift) << shift;
        let len = ((hi >> shift) - (lo >> shift)) as usize + 1;
        if shift == self.shift && origin == self.origin && !self.buckets.is_empty() {
            self.buckets.resize_with(len, Vec::new);
            return;
        }
        if self.buckets.is_empty() {
            self.origin = origin;
            self.shift = shift;
            self.buckets.resize_with(len, Vec::new);
            return;
        }
        // In place, one doubling at a time: each step merges neighbours into a lower or
        // equal index, so cells are never held twice (a copy of the whole grid would
        // double the model's memory at the moment it is largest).
        while self.shift < shift {
            let s = self.shift + 1;
            let new_origin = (self.origin >> s) << s;
            let mut top = 0;
            for i in 0..self.buckets.len() {
                let start = self.origin + ((i as u64) << self.shift);
                let j = ((start - new_origin) >> s) as usize;
                top = j;
                if j == i {
                    continue;
                }
                let cells = std::mem::take(&mut self.buckets[i]);
                if self.buckets[j].is_empty() {
                    self.buckets[j] = cells;
                } else {
                    merge(&mut self.buckets[j], &cells);
                }
            }
            self.buckets.truncate(top + 1);
            self.origin = new_origin;
            self.shift = s;
        }
        // An earlier origin: empty buckets in front (moves only the buckets' headers).
        let front = ((self.origin - origin) >> shift) as usize;
        self.buckets
            .splice(0..0, std::iter::repeat_with(Vec::new).take(front));
        self.origin = origin;
        self.buckets.resize_with(len, Vec::new);
        self.ncells = self.buckets.iter().map(Vec::len).sum();
    }

    /// Samples added.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// First and last sample times.
    pub fn span(&self) -> Option<(u64, u64)> {
        self.span
    }

    /// Bucket width in ns.
    pub fn width(&self) -> u64 {
        1 << self.shift
    }

    /// Cells held (what memory follows).
    pub fn cells(&self) -> usize {
        self.ncells
    }

    /// Distinct (thread, stack) pairs seen.
    pub fn pairs(&self) -> usize {
        self.pairs.len()
    }

    fn start_of(&self, i: usize) -> u64 {
        self.origin + ((i as u64) << self.shift)
    }

    /// Index range of the buckets overlapping `from..=to`.
    fn overlapping(&self, from: u64, to: u64) -> std::ops::Range<usize> {
        if self.buckets.is_empty() || to < from || to < self.origin {
            return 0..0;
        }
        let a = (from.saturating_sub(self.origin) >> self.shift) as usize;
        let b = (((to - self.origin) >> self.shift) as usize).saturating_add(1);
        a.min(self.buckets.len())..b.min(self.buckets.len())
    }

    /// (bucket start, cells) of the non-empty buckets overlapping `from..=to`, in time order.
    pub fn range(&self, from: u64, to: u64) -> impl Iterator<Item = (u64, &[Cell])> {
        let r = self.overlapping(from, to);
        let first = r.start;
        self.buckets[r]
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.is_empty())
            .map(move |(i, c)| (self.start_of(first + i), c.as_slice()))
    }

    /// Buckets (empty or not) overlapping `from..=to`: the finest resolution there.
    pub fn spanned(&self, from: u64, to: u64) -> usize {
        self.overlapping(from, to).len()
    }

    /// Summed weights in the buckets overlapping `from..=to`.
    pub fn count(&self, from: u64, to: u64) -> u64 {
        self.range(from, to)
            .flat_map(|(_, cells)| cells)
            .map(|c| c.count)
            .sum()
    }
}

/// Merges sorted `src` into sorted `dst`, adding the counts of equal keys. In place, from
/// the back: a new vector per merge would churn the allocator with bucket-sized blocks,
/// and the fragments would make the viewer's memory grow with the samples it reads.
fn merge(dst: &mut Vec<Cell>, src: &[Cell]) {
    if src.is_empty() {
        return;
    }
    if dst.last().is_none_or(|l| l.key() < src[0].key()) {
        dst.extend_from_slice(src);
        return;
    }
    let (a, b) = (dst.len(), src.len());
    let (mut x, mut y, mut dups) = (0, 0, 0);
    while x < a && y < b {
        match dst[x].key().cmp(&src[y].key()) {
            std::cmp::Ordering::Less => x += 1,
            std::cmp::Ordering::Greater => y += 1,
            std::cmp::Ordering::Equal => {
                dups += 1;
                x += 1;
                y += 1;
            }
        }
    }
    let n = a + b - dups;
    dst.resize(n, src[0]);
    // i, j: how many of dst's old cells and of src are still to place; k: free slots.
    let (mut i, mut j, mut k) = (a, b, n);
    while j > 0 {
        k -= 1;
        if i > 0 && dst[i - 1].key() > src[j - 1].key() {
            dst[k] = dst[i - 1];
            i -= 1;
        } else if i > 0 && dst[i - 1].key() == src[j - 1].key() {
            dst[k] = Cell {
                count: dst[i - 1].count + src[j - 1].count,
                ..dst[i - 1]
            };
            i -= 1;
            j -= 1;
        } else {
            dst[k] = src[j - 1];
            j -= 1;
        }
    }
    debug_assert_eq!(k, i);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn total(b: &Buckets) -> u64 {
        b.range(0, u64::MAX)
            .flat_map(|(_, c)| c)
            .map(|c| c.count)
            .sum()
    }

    #[test]
    fn counts_survive_widening_and_earlier_samples() {
        let mut b = Buckets::default();
        b.extend((0..1000u64).map(|i| (1_000_000 + i * 7, (i % 3) as u32, (i % 5) as u32)));
        assert_eq!(b.width(), 2);
        // Much later and much earlier samples force wider buckets and an earlier origin.
        b.extend([(50_000_000_000, 1, 1), (10, 2, 2), (10, 2, 2)]);
        assert_eq!(b.samples(), 1003);
        assert_eq!(total(&b), 1003);
        assert!(b.buckets.len() <= MAX_BUCKETS);
        assert_eq!(b.span(), Some((10, 50_000_000_000)));
        // Cells stay sorted and distinct per bucket.
        for cells in &b.buckets {
            assert!(cells.windows(2).all(|w| w[0].key() < w[1].key()));
        }
        // 15 (thread, stack) pairs at most per bucket: memory follows distinct stacks.
        assert!(b.cells() <= 15 * b.buckets.iter().filter(|c| !c.is_empty()).count());
    }

    #[test]
    fn ranges_select_overlapping_buckets() {
        let mut b = Buckets::default();
        b.extend((0..4096u64).map(|i| (i * 1000, 0, i as u32 % 2)));
        let w = b.width();
        assert_eq!(b.count(0, u64::MAX), 4096);
        // 1024 ns buckets from 0: the one holding 1000 also holds 0.
        assert_eq!(w, 1024);
        assert_eq!(b.count(1000, 1000), 2);
        assert_eq!(b.count(5_000_000, 4_000_000), 0);
        assert_eq!(b.count(u64::MAX, u64::MAX), 0);
        // Halves of the span add up to the whole.
        let mid = b.origin + (b.buckets.len() as u64 / 2) * w;
        assert_eq!(b.count(0, mid - 1) + b.count(mid, u64::MAX), 4096);
    }

    #[test]
    fn many_distinct_stacks_per_bucket_widen_the_buckets_instead_of_growing_memory() {
        let mut b = Buckets::default();
        // 40,000 pairs, each sample a new pair until they repeat: every bucket full of
        // different stacks, the worst case for a time grid.
        let n = 2_000_000u64;
        b.extend((0..n).map(|i| (i * 1000, (i % 8) as u32, ((i * 7919) % 5000) as u32)));
        assert_eq!(b.count(0, u64::MAX), n);
        assert!(b.pairs() <= 40_000);
        let budget = FLOOR_CELLS.max(CELLS_PER_PAIR * b.pairs());
        assert!(b.cells() <= budget, "{} cells over {budget}", b.cells());
        assert_eq!(b.cells(), b.buckets.iter().map(Vec::len).sum::<usize>());
        // Later batches keep to the budget too.
        b.extend((n..n + 500_000).map(|i| (i * 1000, (i % 8) as u32, ((i * 7919) % 5000) as u32)));
        assert!(b.cells() <= budget);
        assert_eq!(b.count(0, u64::MAX), n + 500_000);
    }

    #[test]
    fn merging_adds_equal_keys_and_keeps_order() {
        let c = |thread, stack, count| Cell {
            thread,
            stack,
            count,
        };
        let mut dst = vec![c(0, 1, 1), c(0, 3, 2), c(1, 0, 5), c(2, 2, 1)];
        merge(
            &mut dst,
            &[c(0, 0, 7), c(0, 3, 1), c(1, 1, 1), c(2, 2, 2), c(3, 0, 1)],
        );
        assert_eq!(
            dst,
            vec![
                c(0, 0, 7),
                c(0, 1, 1),
                c(0, 3, 3),
                c(1, 0, 5),
                c(1, 1, 1),
                c(2, 2, 3),
                c(3, 0, 1)
            ]
        );
        let mut all_equal = vec![c(0, 1, 1), c(0, 2, 1)];
        merge(&mut all_equal, &[c(0, 1, 1), c(0, 2, 1)]);
        assert_eq!(all_equal, vec![c(0, 1, 2), c(0, 2, 2)]);
    }

    #[test]
    fn wild_timestamps_do_not_overflow() {
        let mut b = Buckets::default();
        b.extend([(0, 0, 0), (u64::MAX, 0, 0), (u64::MAX / 2, 1, 1)]);
        assert_eq!(total(&b), 3);
        assert!(b.buckets.len() <= MAX_BUCKETS);
        b.extend([(u64::MAX, 0, 0)]);
        assert_eq!(b.count(0, u64::MAX), 4);
    }
}
