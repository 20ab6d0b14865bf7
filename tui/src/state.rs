//! The views' state: plain data that key handling changes and rendering reads, plus the
//! folds cached under the inputs they were computed from.

use std::collections::BTreeSet;
use std::time::Instant;

use ratatui::layout::Rect;

use hotspot_replay::metric::Metric;
use hotspot_replay::model::Hide;
use hotspot_replay::model::aggregate::FlatRow;
use hotspot_replay::model::aggregate::Neighbours;
use hotspot_replay::names::FunctionKey;

use super::layout::Regions;
use super::links::link::LinkBase;
use super::model::{
    Data, Fold, Lanes, Query, Stream, Timeline, ensure_tree, fold, lanes, neighbours, stream,
    timeline,
};
use super::palette::Palette;

/// The screen showing in the main area.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Flat,
    Callers,
    Flame,
    Stream,
    Threads,
}

impl View {
    /// The tabs, in order.
    pub const TABS: [View; 4] = [View::Flat, View::Flame, View::Stream, View::Threads];

    pub fn title(self) -> &'static str {
        match self {
            View::Flat => "Flat",
            View::Callers => "Callers/callees",
            View::Flame => "Flame",
            View::Stream => "Stream",
            View::Threads => "Threads",
        }
    }
}

/// Live (recording while viewing) or replaying a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    Live,
    Replay,
}

/// What the views are started with.
#[derive(Debug, Clone)]
pub struct Options {
    pub mode: Mode,
    pub palette: Palette,
    pub links: Option<LinkBase>,
    /// `--symbols` directories: frames are named again from files found there.
    pub symbol_dirs: Vec<std::path::PathBuf>,
    /// Start with the interpreter's own frames hidden (`--no-interpreter`; `P` toggles).
    pub no_interpreter: bool,
}

/// Flat view order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sort {
    SelfTime,
    Total,
    Name,
}

/// A scrolled list: cursor row and first visible row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListPos {
    pub cursor: usize,
    pub offset: usize,
}

impl ListPos {
    /// Keeps the cursor inside `len` rows and visible in `height` rows.
    pub fn clamp(&mut self, len: usize, height: usize) {
        self.cursor = self.cursor.min(len.saturating_sub(1));
        let height = height.max(1);
        if self.cursor < self.offset {
            self.offset = self.cursor;
        } else if self.cursor >= self.offset + height {
            self.offset = self.cursor + 1 - height;
        }
        self.offset = self.offset.min(len.saturating_sub(height));
    }
}

/// The flat view.
#[derive(Debug, Clone)]
pub struct FlatState {
    pub pos: ListPos,
    pub sort: Sort,
    pub filter: String,
    /// Indices into the fold's flat rows, filtered and sorted.
    pub rows: Vec<usize>,
}

/// The callers/callees view.
#[derive(Debug, Clone, Default)]
pub struct CallersState {
    pub target: Option<FunctionKey>,
    pub pos: ListPos,
    /// Functions opened before, for going back.
    pub history: Vec<FunctionKey>,
}

/// The flame graph: zoom and cursor as paths of functions from the root, so they
/// survive a refold (node ids do not).
#[derive(Debug, Clone, Default)]
pub struct FlameState {
    /// Zoom stack: each entry the path of a zoomed-into frame; empty shows the root.
    pub zoom: Vec<Vec<FunctionKey>>,
    pub cursor: Vec<FunctionKey>,
    /// The frame under the mouse, if any.
    pub hover: Option<Vec<FunctionKey>>,
}

/// The thread list.
#[derive(Debug, Clone, Default)]
pub struct ThreadsState {
    pub pos: ListPos,
    /// Thread ids left out of every view.
    pub excluded: BTreeSet<u32>,
    /// Idle threads ([`crate::model::IDLE_CPU_PERCENT`]) are hidden: left out of
    /// every view and of the list.
    pub hide_idle: bool,
}

/// A fold frozen by `space`: the data generation and last sample time it showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frozen {
    pub generation: u64,
    pub until_ns: u64,
}

/// A selection kept inside a capture's span (`None`: the whole span).
pub fn clamp_selection((a, b): (u64, u64), selection: Option<(u64, u64)>) -> (u64, u64) {
    match selection {
        Some((s, e)) => (s.max(a), e.min(b).max(s.max(a))),
        None => (a, b),
    }
}

/// Everything the views show and the keys change.
#[derive(Debug)]
pub struct State {
    pub data: Data,
    pub opts: Options,
    /// The terminal size.
    pub size: Rect,
    pub view: View,
    pub history: Vec<View>,
    pub flat: FlatState,
    pub callers: CallersState,
    pub flame: FlameState,
    pub threads: ThreadsState,
    /// Typing into the flat view's `/` filter.
    pub filtering: bool,
    /// Time selection (inclusive, monotonic ns); `None` is the whole capture.
    pub selection: Option<(u64, u64)>,
    /// Follow the last this-many ns (live).
    pub follow: Option<u64>,
    pub frozen: Option<Frozen>,
    pub no_kernel: bool,
    /// The interpreter's own frames hidden where Python frames stand for them (`P`).
    pub no_interpreter: bool,
    /// What the views weigh: CPU, off-CPU or wall-clock time.
    pub metric: Metric,
    pub timeline_by_thread: bool,
    pub help: bool,
    /// A message and when it was set (shown for a few seconds).
    pub notice: Option<(String, Instant)>,
    /// Where a mouse drag on the timeline started (ns).
    pub drag: Option<u64>,
    /// The capture ended (end marker read).
    pub finished: bool,
    /// The file does not hold a whole file header yet (it may still be being written).
    pub no_header: bool,
    pub cache: Cache,
    /// Diff mode: the base capture the views compare this one with.
    pub diff: Option<crate::diff::Compare>,
}

/// Folds with the inputs they were computed from.
#[derive(Debug, Default)]
pub struct Cache {
    pub fold_key: Option<(u64, Query)>,
    pub fold: Option<Fold>,
    /// Bumped per refold: what derived caches key on.
    pub fold_version: u64,
    pub timeline_key: Option<(u64, BTreeSet<u32>, Hide, Metric, u16)>,
    pub timeline: Timeline,
    pub lanes_key: Option<(u64, u16)>,
    /// Per-thread lanes of the threads view (captures with off-CPU data).
    pub lanes: Lanes,
    pub stream_key: Option<(u64, Query, u16)>,
    pub stream: Stream,
    pub rows_key: Option<(u64, String, Sort)>,
    pub neighbours_key: Option<(u64, FunctionKey)>,
    pub neighbours: Neighbours,
    /// How many refolds ran (tests check the cache holds).
    pub refolds: u64,
}

impl State {
    pub fn new(data: Data, opts: Options, size: Rect) -> State {
        let no_interpreter = opts.no_interpreter;
        State {
            data,
            opts,
            size,
            view: View::Flat,
            history: Vec::new(),
            flat: FlatState {
                pos: ListPos::default(),
                sort: Sort::SelfTime,
                filter: String::new(),
                rows: Vec::new(),
            },
            callers: CallersState::default(),
            flame: FlameState::default(),
            threads: ThreadsState::default(),
            filtering: false,
            selection: None,
            follow: None,
            frozen: None,
            no_kernel: false,
            no_interpreter,
            metric: Metric::Cpu,
            timeline_by_thread: false,
            help: false,
            notice: None,
            drag: None,
            finished: false,
            no_header: false,
            cache: Cache::default(),
            diff: None,
        }
    }

    pub fn regions(&self) -> Regions {
        Regions::new(self.size)
    }

    /// The data generation the views show (held while frozen).
    fn generation(&self) -> u64 {
        self.frozen.map_or(self.data.generation, |f| f.generation)
    }

    /// The capture's time span as the views see it (clamped while frozen).
    pub fn span(&self) -> Option<(u64, u64)> {
        let (a, b) = self.data.span()?;
        Some(match self.frozen {
            Some(f) => (a, b.min(f.until_ns).max(a.saturating_add(1))),
            None => (a, b),
        })
    }

    /// An instant as the views label it: seconds on the capture's clock (time 0 is the
    /// session start, as for `--from`/`--to`; see [`hotspot_replay::clock`]), with the precision
    /// that suits `span_ns`.
    pub fn label_at(&self, t: u64, span_ns: u64) -> String {
        let origin = self.data.clock().map_or(t, |c| c.start_mono_ns);
        super::views::draw::at(i128::from(t) - i128::from(origin), span_ns)
    }

    /// The selected time range (follow and freeze applied).
    pub fn selected(&self) -> Option<(u64, u64)> {
        let (a, b) = self.span()?;
        if let Some(n) = self.follow {
            return Some((b.saturating_sub(n).max(a), b));
        }
        Some(clamp_selection((a, b), self.selection))
    }

    /// The fold query of the current selection and filters.
    pub fn query(&self) -> Query {
        let (from_ns, to_ns) = self.selected().unwrap_or((0, 0));
        Query {
            from_ns,
            to_ns,
            excluded: self.excluded(),
            no_kernel: self.no_kernel,
            no_interpreter: self.no_interpreter,
            metric: self.metric,
        }
    }

    /// Thread ids left out of the views: those excluded by hand, and the idle ones while
    /// they are hidden.
    pub fn excluded(&self) -> BTreeSet<u32> {
        let mut out = self.threads.excluded.clone();
        if self.threads.hide_idle {
            out.extend(self.data.idle_threads());
        }
        out
    }

    /// Dense indices of the threads the thread list shows (idle ones left out while
    /// hidden).
    pub fn thread_rows(&self) -> Vec<usize> {
        (0..self.data.threads.len())
            .filter(|&i| !(self.threads.hide_idle && self.data.is_idle(i)))
            .collect()
    }

    /// The current fold (after [`State::refresh`]).
    pub fn fold(&self) -> Option<&Fold> {
        self.cache.fold.as_ref()
    }

    /// Flat rows as shown (filtered, sorted).
    pub fn flat_rows(&self) -> Vec<&FlatRow> {
        let Some(f) = self.fold() else {
            return Vec::new();
        };
        self.flat
            .rows
            .iter()
            .filter_map(|&i| f.flat.get(i))
            .collect()
    }

    /// Recomputes whatever the current inputs invalidated, and keeps cursors in range.
    pub fn refresh(&mut self) {
        let regions = self.regions();
        let generation = self.generation();
        let q = self.query();
        let key = (generation, q.clone());
        if self.cache.fold_key.as_ref() != Some(&key) {
            self.cache.fold = Some(fold(&mut self.data, &q));
            self.cache.fold_key = Some(key);
            self.cache.fold_version += 1;
            self.cache.refolds += 1;
        }
        if self.view == View::Flame
            && let Some(f) = self.cache.fold.as_mut()
        {
            ensure_tree(f, &self.data);
        }
        let version = self.cache.fold_version;
        let tl_key = (
            generation,
            q.excluded.clone(),
            q.hide(),
            self.metric,
            regions.timeline.width,
        );
        if self.cache.timeline_key.as_ref() != Some(&tl_key) {
            let mut t = timeline(
                &mut self.data,
                &q.excluded,
                q.hide(),
                self.metric,
                usize::from(regions.timeline.width),
            );
            if let Some(f) = self.frozen {
                // Past the freeze the strip stays as it was.
                t.end = t.end.min(f.until_ns).max(t.start.saturating_add(1));
            }
            self.cache.timeline = t;
            self.cache.timeline_key = Some(tl_key);
        }
        if self.view == View::Stream {
            let st_key = (generation, q.clone(), regions.main.width);
            if self.cache.stream_key.as_ref() != Some(&st_key) {
                self.cache.stream = stream(&mut self.data, &q, usize::from(regions.main.width));
                self.cache.stream_key = Some(st_key);
            }
        }
        if self.view == View::Threads && self.data.has_off_cpu() {
            let width = super::layout::lane_width(regions.main.width);
            let key = (generation, width);
            if self.cache.lanes_key != Some(key) {
                self.cache.lanes = lanes(&self.data, usize::from(width));
                self.cache.lanes_key = Some(key);
            }
        }
        if self.diff.is_some() {
            // The flat rows are the diff's changes, the callers/callees both captures'.
            crate::diff::refresh(self);
            let n = self.thread_rows().len();
            self.threads
                .pos
                .clamp(n, usize::from(regions.list_height()));
            return;
        }
        let rows_key = (version, self.flat.filter.clone(), self.flat.sort);
        if self.cache.rows_key.as_ref() != Some(&rows_key) {
            self.flat.rows = self.sorted_rows();
            self.cache.rows_key = Some(rows_key);
        }
        if let Some(target) = self.callers.target.clone() {
            let nk = (version, target.clone());
            if self.cache.neighbours_key.as_ref() != Some(&nk) {
                self.cache.neighbours = self
                    .cache
                    .fold
                    .as_ref()
                    .map(|f| neighbours(f, &self.data, &target))
                    .unwrap_or_default();
                self.cache.neighbours_key = Some(nk);
            }
        }
        let h = usize::from(regions.list_height());
        let n = self.flat.rows.len();
        self.flat.pos.clamp(n, h);
        let n = self.callers_len();
        self.callers.pos.clamp(n, h.saturating_sub(3));
        let n = self.thread_rows().len();
        self.threads.pos.clamp(n, h);
    }

    fn sorted_rows(&self) -> Vec<usize> {
        let Some(f) = self.fold() else {
            return Vec::new();
        };
        let needle = self.flat.filter.to_lowercase();
        let mut rows: Vec<usize> = f
            .flat
            .iter()
            .enumerate()
            .filter(|(_, r)| needle.is_empty() || r.key.function.to_lowercase().contains(&needle))
            .map(|(i, _)| i)
            .collect();
        match self.flat.sort {
            // The fold's order is already self, then total, then name.
            Sort::SelfTime => {}
            Sort::Total => rows.sort_by(|&a, &b| {
                f.flat[b]
                    .total_samples
                    .cmp(&f.flat[a].total_samples)
                    .then(a.cmp(&b))
            }),
            Sort::Name => rows.sort_by(|&a, &b| f.flat[a].key.cmp(&f.flat[b].key)),
        }
        rows
    }

    /// Callers then callees: rows of the callers view.
    pub fn callers_len(&self) -> usize {
        self.cache.neighbours.callers.len() + self.cache.neighbours.callees.len()
    }

    /// The function on callers-view row `i`.
    pub fn callers_row(&self, i: usize) -> Option<&(FunctionKey, u64)> {
        let n = &self.cache.neighbours;
        n.callers
            .get(i)
            .or_else(|| n.callees.get(i - n.callers.len().min(i)))
    }

    /// The node a path of functions leads to, or as far as it goes.
    pub fn resolve(&self, path: &[FunctionKey]) -> usize {
        let Some(f) = self.fold() else { return 0 };
        let mut at = 0;
        for k in path {
            let next = f.tree.nodes[at]
                .children
                .iter()
                .copied()
                .find(|&c| f.key(c) == Some(k));
            match next {
                Some(c) => at = c,
                None => break,
            }
        }
        at
    }

    /// The path of functions from the root to a node.
    pub fn path_of(&self, id: usize) -> Vec<FunctionKey> {
        let Some(f) = self.fold() else {
            return Vec::new();
        };
        f.tree
            .path(id)
            .into_iter()
            .filter_map(|n| f.key(n).cloned())
            .collect()
    }

    /// Sets a notice shown for a few seconds.
    pub fn say(&mut self, text: impl Into<String>, now: Instant) {
        self.notice = Some((text.into(), now));
    }
}
