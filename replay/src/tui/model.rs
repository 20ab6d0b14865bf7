//! The view model: the capture's samples indexed by time, and the folds every view draws
//! from. Folding walks the selected samples once into per-stack counts; names are expanded
//! once per stack (through [`StackNames`]), never per sample.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use hotspot_format::{Event, ModuleKind};
use rustc_hash::FxHashMap;

use crate::capture::{Capture, SampleSink};
use crate::clock::Clock;
use crate::flat::FlatRow;
use crate::names::FrameName;
use crate::names::FunctionKey;
use crate::profile::StackNames;
use crate::tree::{Neighbours, key_of};
use crate::tui::buckets::Buckets;

/// A thread the capture has samples of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadRow {
    pub tid: u32,
    pub pid: u32,
    pub name: String,
    /// Samples in the whole capture.
    pub samples: u64,
}

/// The capture, its samples in time order, and the name cache.
#[derive(Debug, Default)]
pub struct Data {
    /// Definitions; its `samples` are moved into [`Data::buckets`] as they arrive.
    pub capture: Capture,
    /// Every sample, counted per time bucket, thread and stack.
    pub buckets: Buckets,
    /// Dense thread index → thread, in order of first sample.
    pub threads: Vec<ThreadRow>,
    thread_index: FxHashMap<u32, u32>,
    /// Dense stack index → the capture's stack id, in order of first sample. The folds
    /// index stacks densely: a capture's ids are its writer's choice, and a crafted one
    /// (stack `u32::MAX`) must not size an array.
    pub stack_ids: Vec<u32>,
    stack_index: FxHashMap<u32, u32>,
    pub names: StackNames,
    /// Bumped whenever samples or names change: the folds' cache key.
    pub generation: u64,
    symbols_seen: usize,
    /// The first sample's time, in arrival order (time 0 without a session header).
    first_sample: Option<u64>,
    /// Frames that `--symbols` has already been applied to.
    frames_resymbolized: usize,
    /// Functions, lines and stacks as integers (reset when names change).
    pub interned: Interned,
}

impl Data {
    /// A model over a capture read whole (its samples are taken over).
    pub fn new(mut capture: Capture) -> Data {
        let samples = std::mem::take(&mut capture.samples);
        let mut d = Data {
            capture,
            ..Data::default()
        };
        d.take_samples(samples);
        d.symbols_seen = d.capture.symbols.len();
        d
    }

    /// Names frames that arrived since the last call again from `dirs` (`--symbols`);
    /// true if it ran, so names must be redrawn.
    pub fn resymbolize(&mut self, dirs: &[std::path::PathBuf]) -> bool {
        if dirs.is_empty() || self.capture.frames.len() == self.frames_resymbolized {
            return false;
        }
        self.frames_resymbolized = self.capture.frames.len();
        crate::resymbolize::resymbolize(&mut self.capture, dirs);
        self.symbols_seen = self.capture.symbols.len();
        self.names = StackNames::default();
        self.interned = Interned::default();
        self.generation += 1;
        true
    }

    /// Folds in what a reader or follower produced; true if anything visible changed.
    pub fn apply(&mut self, events: Vec<Event>) -> bool {
        if events.is_empty() {
            return false;
        }
        let mut sink = sink!(self);
        for e in events {
            // Each block's samples go straight into the buckets, and its decoded batch is
            // freed before the next block's: the capture never holds a poll's samples.
            self.capture.ingest(e, &mut sink);
        }
        sink.flush();
        self.names_arrived();
        if self.capture.symbols.len() != self.symbols_seen {
            // Names that arrived late (live mode) replace the `??` already cached.
            self.symbols_seen = self.capture.symbols.len();
            self.names = StackNames::default();
            self.interned = Interned::default();
        }
        self.generation += 1;
        true
    }

    /// Takes in samples directly (what [`Data::apply`] does with a block's samples).
    pub fn add_samples(&mut self, samples: Vec<hotspot_format::Sample>) {
        self.take_samples(samples);
        self.generation += 1;
    }

    fn take_samples(&mut self, samples: Vec<hotspot_format::Sample>) {
        let mut sink = sink!(self);
        for s in &samples {
            sink.sample(s, crate::capture::SAMPLE_WEIGHT);
        }
        sink.flush();
        self.names_arrived();
    }

    /// Thread names and pids may have arrived after the first sample.
    fn names_arrived(&mut self) {
        for t in &mut self.threads {
            if let Some(info) = self.capture.threads.get(&t.tid) {
                t.pid = info.pid;
                t.name = info.name().to_string();
            }
        }
    }

    /// Where time 0 is ([`crate::clock`]): what every label of an instant counts from.
    pub fn clock(&self) -> Option<Clock> {
        Clock::of(self.capture.session.as_ref(), self.first_sample)
    }

    /// Samples taken in.
    pub fn samples(&self) -> u64 {
        self.buckets.samples()
    }

    /// The capture's time span: from the session start (or first sample) to the end
    /// marker (or last sample), in monotonic ns.
    pub fn span(&self) -> Option<(u64, u64)> {
        let (first, last) = self.buckets.span()?;
        let start = self
            .capture
            .session
            .as_ref()
            .map(|s| s.start_mono_ns)
            .filter(|&s| s > 0 && s <= first && first - s < 3_600_000_000_000)
            .unwrap_or(first);
        let end = self
            .capture
            .end
            .map(|e| e.end_mono_ns)
            .filter(|&e| e >= last && e - last < 3_600_000_000_000)
            .unwrap_or(last);
        Some((start, end.max(start.saturating_add(1))))
    }

    /// User frames referenced by stacks that have no name yet.
    pub fn unnamed_frames(&self) -> usize {
        self.capture
            .frames
            .values()
            .filter(|f| {
                matches!(f.addr, hotspot_format::FrameAddr::FileOffset(_))
                    && !self.capture.symbols.contains_key(&f.id)
                    && self
                        .capture
                        .modules
                        .get(&f.module)
                        .is_some_and(|m| m.kind == ModuleKind::Elf)
            })
            .count()
    }

    /// Logical frames of a stack given by its dense index (root first), with kernel
    /// frames dropped if asked.
    pub fn stack_names(&mut self, stack: u32, no_kernel: bool) -> Option<Vec<FrameName>> {
        let stack = *self.stack_ids.get(stack as usize)?;
        if !self.capture.stacks.contains_key(&stack) {
            return None;
        }
        let frames = self.names.get(&self.capture, stack)?;
        Some(if no_kernel {
            frames.iter().filter(|f| !f.kernel).cloned().collect()
        } else {
            frames.clone()
        })
    }
}

/// The views' sample sink over a model's buckets and indices (borrowed field by field,
/// so the capture stays free for [`Capture::ingest`]).
macro_rules! sink {
    ($d:expr) => {
        Sink {
            buckets: &mut $d.buckets,
            threads: &mut $d.threads,
            thread_index: &mut $d.thread_index,
            stack_ids: &mut $d.stack_ids,
            stack_index: &mut $d.stack_index,
            first_sample: &mut $d.first_sample,
            pending: Vec::new(),
            last: None,
        }
    };
}
use sink;

/// The views' sample sink: each sample's thread and stack get dense indices (in order of
/// first sample), then samples go into the buckets in block-sized batches.
struct Sink<'a> {
    buckets: &'a mut Buckets,
    threads: &'a mut Vec<ThreadRow>,
    thread_index: &'a mut FxHashMap<u32, u32>,
    stack_ids: &'a mut Vec<u32>,
    stack_index: &'a mut FxHashMap<u32, u32>,
    first_sample: &'a mut Option<u64>,
    pending: Vec<(u64, u32, u32, u64)>,
    /// The last sample's (tid, dense thread): samples come in runs of one thread.
    last: Option<(u32, u32)>,
}

/// Samples handed to the buckets at once: a capture taken in whole (not block by block,
/// as the viewer reads it) meets the buckets' cell budget as it goes, not once at the end.
const BATCH: usize = 1 << 16;

impl Sink<'_> {
    fn flush(&mut self) {
        if !self.pending.is_empty() {
            self.buckets.extend_weighted(self.pending.drain(..));
        }
    }
}

impl SampleSink for Sink<'_> {
    fn sample(&mut self, s: &hotspot_format::Sample, weight: u64) {
        self.first_sample.get_or_insert(s.time_ns);
        let thread = match self.last {
            Some((tid, idx)) if tid == s.tid => idx,
            _ => {
                let threads = &mut *self.threads;
                let idx = *self.thread_index.entry(s.tid).or_insert_with(|| {
                    threads.push(ThreadRow {
                        tid: s.tid,
                        pid: 0,
                        name: String::new(),
                        samples: 0,
                    });
                    (threads.len() - 1) as u32
                });
                self.last = Some((s.tid, idx));
                idx
            }
        };
        self.threads[thread as usize].samples += weight;
        let stack_ids = &mut *self.stack_ids;
        let stack = *self.stack_index.entry(s.stack).or_insert_with(|| {
            stack_ids.push(s.stack);
            (stack_ids.len() - 1) as u32
        });
        self.pending.push((s.time_ns, thread, stack, weight));
        if self.pending.len() >= BATCH {
            self.flush();
        }
    }
}

/// What a fold selects: the samples in `[from_ns, to_ns]` of the threads not excluded.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Query {
    pub from_ns: u64,
    pub to_ns: u64,
    /// Thread ids left out.
    pub excluded: BTreeSet<u32>,
    pub no_kernel: bool,
}

impl Query {
    fn mask(&self, data: &Data) -> Vec<bool> {
        data.threads
            .iter()
            .map(|t| self.excluded.contains(&t.tid))
            .collect()
    }
}

/// One node of the call tree: a function reached by one path from the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeNode {
    /// Index into [`Fold::functions`]; `None` for the root.
    pub func: Option<u32>,
    pub parent: Option<usize>,
    /// Hottest first (then by name), so the hottest branch is leftmost.
    pub children: Vec<usize>,
    pub total: u64,
    pub self_samples: u64,
    /// Index into [`Fold::lines`] of the source line with the most samples.
    pub line: Option<u32>,
}

/// The call tree of a fold, frames merged by function (as [`crate::tree::CallTree`],
/// with functions as indices so that building it allocates per node, not per name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    pub nodes: Vec<TreeNode>,
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

/// The selected samples folded into everything the views show.
#[derive(Debug, Clone)]
pub struct Fold {
    /// Samples selected.
    pub total: u64,
    /// Samples whose stack the capture does not define (a lost block).
    pub unknown_stacks: u64,
    /// Flat rows, hottest self first (as [`crate::flat::flat`] orders them).
    pub flat: Vec<FlatRow>,
    /// Built on first use (see [`ensure_tree`]): the flat view does not need it.
    pub tree: Tree,
    pub tree_built: bool,
    no_kernel: bool,
    /// Function table the tree's indices refer to.
    pub functions: Vec<FunctionKey>,
    /// Source lines the tree's indices refer to.
    pub lines: Vec<(Arc<str>, u32)>,
    /// Samples per stack (dense index, see [`Data::stack_ids`]) of the stacks selected:
    /// what callers/callees fold.
    pub stacks: Vec<(u32, u64)>,
    /// Samples in the time selection per dense thread index (threads filter ignored, so
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

/// Functions and source lines as small integers, and each stack as their sequence: what
/// makes a refold cost a pass over the stacks rather than over names.
#[derive(Debug, Default)]
pub struct Interned {
    pub functions: Vec<FunctionKey>,
    function_ids: HashMap<FunctionKey, u32>,
    pub lines: Vec<(Arc<str>, u32)>,
    line_ids: HashMap<(Arc<str>, u32), u32>,
    /// Per dense stack index, root first: (function, line) pairs; index 0 with kernel frames,
    /// 1 without. `None` inside: not interned yet; `Some(None)`: undefined stack.
    stacks: [Vec<Option<Option<Frames>>>; 2],
}

/// A stack's (function, line) pairs, root first.
type Frames = Vec<(u32, u32)>;

/// No source line.
pub const NO_LINE: u32 = u32::MAX;

impl Interned {
    fn function(&mut self, f: &FrameName) -> u32 {
        let k = key_of(f);
        if let Some(&i) = self.function_ids.get(&k) {
            return i;
        }
        let i = self.functions.len() as u32;
        self.functions.push(k.clone());
        self.function_ids.insert(k, i);
        i
    }

    fn line(&mut self, f: &FrameName) -> u32 {
        let Some(file) = &f.file else { return NO_LINE };
        let k = (file.clone(), f.line);
        if let Some(&i) = self.line_ids.get(&k) {
            return i;
        }
        let i = self.lines.len() as u32;
        self.lines.push(k.clone());
        self.line_ids.insert(k, i);
        i
    }

    /// The function index of a key, if interned.
    pub fn id(&self, k: &FunctionKey) -> Option<u32> {
        self.function_ids.get(k).copied()
    }
}

impl Data {
    /// Makes sure every stack sampled so far is interned for `no_kernel`.
    fn intern_stacks(&mut self, no_kernel: bool) {
        let n = self.stack_ids.len();
        let slot = usize::from(no_kernel);
        if self.interned.stacks[slot].len() < n {
            self.interned.stacks[slot].resize(n, None);
        }
        for id in 0..n {
            if self.interned.stacks[slot][id].is_some() {
                continue;
            }
            // Not defined yet (live: it may come in a later block). Asked before the
            // name cache, which would remember the absence.
            let real = self.stack_ids[id];
            if !self.capture.stacks.contains_key(&real) {
                continue;
            }
            let seq = match self.names.get(&self.capture, real) {
                None => None,
                Some(frames) => {
                    let frames: Vec<FrameName> = frames
                        .iter()
                        .filter(|f| !(no_kernel && f.kernel))
                        .cloned()
                        .collect();
                    let mut seq = Vec::with_capacity(frames.len());
                    for f in &frames {
                        let func = self.interned.function(f);
                        let line = self.interned.line(f);
                        seq.push((func, line));
                    }
                    Some(seq)
                }
            };
            self.interned.stacks[slot][id] = Some(seq);
        }
    }

    /// The interned frames of a stack given by its dense index (root first), if defined.
    pub fn interned_stack(&self, stack: u32, no_kernel: bool) -> Option<&[(u32, u32)]> {
        self.interned.stacks[usize::from(no_kernel)]
            .get(stack as usize)?
            .as_ref()?
            .as_deref()
    }
}

/// Folds the samples `q` selects.
pub fn fold(data: &mut Data, q: &Query) -> Fold {
    data.intern_stacks(q.no_kernel);
    let mask = q.mask(data);
    let mut per_thread = vec![0u64; data.threads.len()];
    let dense = data.stack_ids.len();
    let mut counts = vec![0u64; dense];
    // Every dense index is in range; anything else would be counted as undefined.
    let mut stray = 0u64;
    for (_, cells) in data.buckets.range(q.from_ns, q.to_ns) {
        for c in cells {
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
    let mut stacks = Vec::new();
    let mut unknown_stacks = stray;
    let mut total = stray;
    for (id, &n) in counts.iter().enumerate().filter(|(_, n)| **n > 0) {
        total += n;
        if data.interned_stack(id as u32, q.no_kernel).is_some() {
            stacks.push((id as u32, n));
        } else {
            unknown_stacks += n;
        }
    }
    let it = &data.interned;
    let seq = |id: u32| data.interned_stack(id, q.no_kernel).unwrap_or(&[]);
    let flat = flat_rows(it, &stacks, &seq);
    let tree = Tree {
        nodes: vec![root_node()],
    };
    Fold {
        total,
        unknown_stacks,
        flat,
        tree,
        tree_built: false,
        no_kernel: q.no_kernel,
        functions: it.functions.clone(),
        lines: it.lines.clone(),
        stacks,
        per_thread,
    }
}

/// Flat rows with [`crate::flat::flat`]'s rules: recursion counts once in the total; the
/// hottest line is the one with most self samples, then most total, then the first name.
fn flat_rows<'a>(
    it: &Interned,
    stacks: &[(u32, u64)],
    seq: &dyn Fn(u32) -> &'a [(u32, u32)],
) -> Vec<FlatRow> {
    let nf = it.functions.len();
    let (mut self_n, mut total_n) = (vec![0u64; nf], vec![0u64; nf]);
    // Stamp per function: the last stack that counted it, for counting recursion once.
    let mut stamp = vec![usize::MAX; nf];
    let mut lines: FxHashMap<(u32, u32), (u64, u64)> = FxHashMap::default();
    for (si, &(id, n)) in stacks.iter().enumerate() {
        let s = seq(id);
        for (i, &(f, l)) in s.iter().enumerate() {
            let leaf = i + 1 == s.len();
            if stamp[f as usize] != si {
                stamp[f as usize] = si;
                total_n[f as usize] += n;
            }
            if leaf {
                self_n[f as usize] += n;
            }
            if l != NO_LINE {
                let e = lines.entry((f, l)).or_default();
                if leaf {
                    e.0 += n;
                }
                e.1 += n;
            }
        }
    }
    let mut hottest: Vec<Option<(u32, (u64, u64))>> = vec![None; nf];
    for (&(f, l), &c) in &lines {
        let better = match hottest[f as usize] {
            None => true,
            Some((bl, bc)) => c > bc || (c == bc && it.lines[l as usize] < it.lines[bl as usize]),
        };
        if better {
            hottest[f as usize] = Some((l, c));
        }
    }
    let mut rows: Vec<FlatRow> = (0..nf)
        .filter(|&f| total_n[f] > 0)
        .map(|f| FlatRow {
            key: it.functions[f].clone(),
            self_samples: self_n[f],
            total_samples: total_n[f],
            hottest: hottest[f].map(|(l, _)| it.lines[l as usize].clone()),
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

/// The call tree with [`crate::tree::CallTree`]'s rules: children hottest first, then by
/// name; each node's line is its most frequent one (then the first by name).
fn root_node() -> TreeNode {
    TreeNode {
        func: None,
        parent: None,
        children: Vec::new(),
        total: 0,
        self_samples: 0,
        line: None,
    }
}

/// Builds the fold's call tree if it is not built yet.
pub fn ensure_tree(fold: &mut Fold, data: &Data) {
    if fold.tree_built {
        return;
    }
    let seq = |id: u32| data.interned_stack(id, fold.no_kernel).unwrap_or(&[]);
    fold.tree = tree(&data.interned, &fold.stacks, &seq);
    fold.tree_built = true;
}

fn tree<'a>(it: &Interned, stacks: &[(u32, u64)], seq: &dyn Fn(u32) -> &'a [(u32, u32)]) -> Tree {
    let mut nodes = vec![root_node()];
    let mut index: FxHashMap<(usize, u32), usize> = FxHashMap::default();
    // Per node its first line and samples inline (most nodes have one), others aside.
    let mut first_line: Vec<(u32, u64)> = vec![(NO_LINE, 0)];
    let mut more_lines: FxHashMap<(usize, u32), u64> = FxHashMap::default();
    for &(id, n) in stacks {
        let s = seq(id);
        nodes[0].total += n;
        if s.is_empty() {
            nodes[0].self_samples += n;
        }
        let mut at = 0;
        for (i, &(f, l)) in s.iter().enumerate() {
            let next = *index.entry((at, f)).or_insert_with(|| {
                nodes.push(TreeNode {
                    func: Some(f),
                    parent: Some(at),
                    children: Vec::new(),
                    total: 0,
                    self_samples: 0,
                    line: None,
                });
                let id = nodes.len() - 1;
                nodes[at].children.push(id);
                first_line.push((NO_LINE, 0));
                id
            });
            nodes[next].total += n;
            if i + 1 == s.len() {
                nodes[next].self_samples += n;
            }
            if l != NO_LINE {
                let f = &mut first_line[next];
                if f.0 == NO_LINE || f.0 == l {
                    *f = (l, f.1 + n);
                } else {
                    *more_lines.entry((next, l)).or_default() += n;
                }
            }
            at = next;
        }
    }
    let better = |a: (u32, u64), b: (u32, u64)| {
        b.1 > a.1 || (b.1 == a.1 && it.lines[b.0 as usize] < it.lines[a.0 as usize])
    };
    for (&(node, l), &c) in &more_lines {
        if better(first_line[node], (l, c)) {
            first_line[node] = (l, c);
        }
    }
    for (node, &(l, _)) in first_line.iter().enumerate() {
        nodes[node].line = (l != NO_LINE).then_some(l);
    }
    // Rank functions by key once, so sorting children compares integers.
    let mut by_key: Vec<u32> = (0..it.functions.len() as u32).collect();
    by_key.sort_by(|&a, &b| it.functions[a as usize].cmp(&it.functions[b as usize]));
    let mut rank = vec![0u32; by_key.len()];
    for (r, &f) in by_key.iter().enumerate() {
        rank[f as usize] = r as u32;
    }
    let order: Vec<(u64, u32)> = nodes
        .iter()
        .map(|n| (n.total, n.func.map_or(0, |f| rank[f as usize])))
        .collect();
    for n in &mut nodes {
        n.children.sort_by(|&a, &b| {
            order[b]
                .0
                .cmp(&order[a].0)
                .then(order[a].1.cmp(&order[b].1))
        });
    }
    Tree { nodes }
}

/// Who calls `target` and what it calls, as [`crate::tree::neighbours`] counts them.
pub fn neighbours(fold: &Fold, data: &Data, no_kernel: bool, target: &FunctionKey) -> Neighbours {
    let mut out = Neighbours::default();
    let Some(t) = data.interned.id(target) else {
        return out;
    };
    let root = u32::MAX;
    let mut callers: HashMap<u32, u64> = HashMap::new();
    let mut callees: HashMap<u32, u64> = HashMap::new();
    for &(id, n) in &fold.stacks {
        let s = data.interned_stack(id, no_kernel).unwrap_or(&[]);
        let Some(first) = s.iter().position(|&(f, _)| f == t) else {
            continue;
        };
        out.total += n;
        if s.last().map(|&(f, _)| f) == Some(t) {
            out.self_samples += n;
        }
        let caller = if first > 0 { s[first - 1].0 } else { root };
        *callers.entry(caller).or_default() += n;
        let last = s.iter().rposition(|&(f, _)| f == t).unwrap_or(first);
        if let Some(&(callee, _)) = s.get(last + 1) {
            *callees.entry(callee).or_default() += n;
        }
    }
    let key = |f: u32| {
        if f == root {
            FunctionKey {
                function: "[root]".into(),
                module: "".into(),
                kernel: false,
            }
        } else {
            data.interned.functions[f as usize].clone()
        }
    };
    let sorted = |m: HashMap<u32, u64>| {
        let mut v: Vec<(FunctionKey, u64)> = m.into_iter().map(|(f, n)| (key(f), n)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        v
    };
    out.callers = sorted(callers);
    out.callees = sorted(callees);
    out
}

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
struct Dominant {
    counts: Vec<u64>,
    touched: Vec<u32>,
}

impl Dominant {
    fn new(n: usize) -> Dominant {
        Dominant {
            counts: vec![0; n],
            touched: Vec::new(),
        }
    }

    fn add(&mut self, v: u32, n: u64) {
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

/// The heaviest path through the stacks counted in `dom` (which is reset): from the
/// root down, the function with the most samples among the stacks that agree so far. So
/// two threads, or one phase split over many leaves, still give a stable answer.
/// Returns a stack holding that path (the most sampled one) and the path's length.
fn heaviest(dom: &mut Dominant, data: &Data, no_kernel: bool) -> Option<(u32, usize)> {
    let cands: Vec<(u32, u64)> = dom
        .touched
        .iter()
        .map(|&v| (v, dom.counts[v as usize]))
        .collect();
    for &v in &dom.touched {
        dom.counts[v as usize] = 0;
    }
    dom.touched.clear();
    let seqs: Vec<&[(u32, u32)]> = cands
        .iter()
        .map(|&(id, _)| data.interned_stack(id, no_kernel).unwrap_or(&[]))
        .collect();
    let mut alive: Vec<usize> = (0..cands.len()).collect();
    let mut depth = 0;
    loop {
        let mut weights: Vec<(u32, u64)> = Vec::new();
        for &i in &alive {
            if let Some(&(f, _)) = seqs[i].get(depth) {
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
        alive.retain(|&i| seqs[i].get(depth).map(|x| x.0) == Some(f));
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

/// The capture over `width` buckets (threads `excluded` left out).
pub fn timeline(
    data: &mut Data,
    excluded: &BTreeSet<u32>,
    no_kernel: bool,
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
    data.intern_stacks(no_kernel);
    let functions = data.interned.functions.clone();
    let n_stacks = data.stack_ids.len();
    let of_stack: Vec<u32> = (0..n_stacks as u32)
        .map(|id| {
            data.interned_stack(id, no_kernel)
                .and_then(|s| s.last())
                .map_or(u32::MAX, |&(f, _)| f)
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
                if mask[cell.thread as usize] {
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
    data.intern_stacks(q.no_kernel);
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
    let mut picks: Vec<Option<(u32, usize)>> = vec![None; buckets];
    let mut col: Option<usize> = None;
    for (at, cells) in data.buckets.range(q.from_ns, q.to_ns) {
        let c = bucket_of(at);
        if col != Some(c) {
            if let Some(p) = col {
                picks[p] = heaviest(&mut dom, data, q.no_kernel);
            }
            col = Some(c);
        }
        for cell in cells {
            if !mask[cell.thread as usize] {
                dom.add(cell.stack, cell.count);
            }
        }
    }
    if let Some(p) = col {
        picks[p] = heaviest(&mut dom, data, q.no_kernel);
    }
    let mut index: HashMap<(u32, usize), Option<u32>> = HashMap::new();
    for c in 0..width {
        let Some((id, depth)) = picks[c * buckets / width] else {
            continue;
        };
        let slot = match index.get(&(id, depth)) {
            Some(&s) => s,
            None => {
                let s = data.stack_names(id, q.no_kernel).map(|mut names| {
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
