//! The views' diff mode (`hotspot view BASE NEW`, `hotspot live … --base BASE`): a second
//! capture, the base, read whole beside the one the views show (the new capture, which may
//! still grow), each with its own time selection. Every comparison is replay's diff of the
//! two selections' folds ([`hotspot_replay::export::diff::diff_summaries`], what
//! `hotspot diff` runs on two file scans' flat rows): the same matching across builds, the
//! same significance and the same scales, never a second copy of them. Each side is folded
//! once per change of its own selection, so moving one capture's selection refolds that
//! capture only. The flat rows are the diff's changes; callers/callees and the flame graph
//! add the base's side of the new capture's fold ([`flame`] matches the call trees).

pub mod flame;

use hotspot_replay::export::diff::threads::{self, ThreadChange};
use hotspot_replay::export::diff::{
    Diff, DiffOptions, MatchKey, Scale, Summary, diff_summaries, match_key,
};
use hotspot_replay::export::slice::file_name;
use hotspot_replay::metric::Metric;
use hotspot_replay::model::Hide;
use hotspot_replay::model::aggregate::{self, Neighbours, Tree};
use hotspot_replay::names::FunctionKey;
use rustc_hash::FxHashMap;

use crate::model::slice::window;
use crate::model::{Data, Fold, Query, Timeline, fold, timeline};
use crate::state::{Sort, State, View, clamp_selection};

/// Which capture the time-selection keys and the timeline clicks act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Base,
    New,
}

/// The base capture and everything compared with it.
#[derive(Debug)]
pub struct Compare {
    /// The base capture.
    pub base: Data,
    /// Where the base is read from, while it is being read: the views poll it as they poll
    /// the new capture, so the first frame does not wait for a big base to be read whole.
    pub source: Option<hotspot_replay::file::Tail>,
    /// The base's own time selection (inclusive, monotonic ns of its clock); `None` is
    /// the whole capture.
    pub selection: Option<(u64, u64)>,
    /// What the selection keys move.
    pub side: Side,
    /// The scale changes are ranked and shown on, and the error rate of the marks.
    pub options: DiffOptions,
    /// The two selections compared (after [`refresh`]).
    pub diff: Option<Diff>,
    /// Index into the diff's changes by match key.
    pub index: FxHashMap<MatchKey, usize>,
    /// Wall time per thread name, when both captures have off-CPU data and the metric is
    /// off-CPU or wall ([`threads::compare`]).
    pub threads: Option<Vec<ThreadChange>>,
    /// The base selection's fold (after [`refresh`]).
    pub fold: Option<Fold>,
    fold_key: Option<(u64, Query)>,
    fold_version: u64,
    /// Bumped per recomputed diff.
    pub version: u64,
    diff_key: Option<(u64, u64, Scale)>,
    /// The base's timeline.
    pub timeline: Timeline,
    timeline_key: Option<(u64, Hide, Metric, u16)>,
    /// The base's call tree (built for the flame view) and the comparison of the new
    /// fold's tree against it.
    pub tree: Tree,
    pub flame: flame::Flame,
    tree_key: Option<u64>,
    flame_key: Option<(u64, u64)>,
    /// The base's weights of the callers/callees rows (callers then callees, as in the
    /// state's neighbours), and the target's total and self there.
    pub neighbours: Vec<u64>,
    pub target_total: u64,
    pub target_self: u64,
    neighbours_key: Option<(u64, u64, FunctionKey)>,
    rows_key: Option<(u64, String, Sort)>,
}

impl Compare {
    /// A base already in memory.
    pub fn new(base: Data, options: DiffOptions) -> Compare {
        Compare {
            base,
            source: None,
            selection: None,
            side: Side::New,
            options,
            diff: None,
            index: FxHashMap::default(),
            threads: None,
            fold: None,
            fold_key: None,
            fold_version: 0,
            version: 0,
            diff_key: None,
            timeline: Timeline::default(),
            timeline_key: None,
            tree: Tree::default(),
            tree_key: None,
            flame: flame::Flame::default(),
            flame_key: None,
            neighbours: Vec::new(),
            target_total: 0,
            target_self: 0,
            neighbours_key: None,
            rows_key: None,
        }
    }

    /// A base read from `tail` (the capture at `path`) as the views run.
    pub fn reading(
        tail: hotspot_replay::file::Tail,
        path: &std::path::Path,
        options: DiffOptions,
    ) -> Compare {
        let mut data = Data::default();
        data.capture.path = path.to_path_buf();
        let mut c = Compare::new(data, options);
        c.source = Some(tail);
        c
    }

    /// Reads what the base's file holds beyond what was read (`--symbols` applied to new
    /// frames): (anything changed, more to read at once). Done once the end marker is read.
    pub fn poll(
        &mut self,
        symbol_dirs: &[std::path::PathBuf],
    ) -> Result<(bool, bool), hotspot_replay::error::ReplayError> {
        let Some(tail) = self.source.as_mut() else {
            return Ok((false, false));
        };
        let events = tail
            .poll()
            .map_err(|e| e.with_path(&self.base.capture.path))?;
        let busy = !events.is_empty() || tail.behind();
        let mut changed = self.base.apply(events);
        changed |= self.base.resymbolize(symbol_dirs);
        if tail.finished() {
            self.source = None;
        }
        Ok((changed, busy))
    }

    /// The base's time span.
    pub fn span(&self) -> Option<(u64, u64)> {
        self.base.span()
    }

    /// The base's selected time range.
    pub fn selected(&self) -> Option<(u64, u64)> {
        Some(clamp_selection(self.span()?, self.selection))
    }

    /// The change of a function, by its key in either capture.
    pub fn change(&self, key: &FunctionKey) -> Option<&hotspot_replay::export::diff::Change> {
        let d = self.diff.as_ref()?;
        d.changes.get(*self.index.get(&match_key(key))?)
    }
}

/// What the diff needs of one side: its fold's flat rows and where its window sits.
fn side<'a>(data: &Data, f: &'a Fold, q: &Query, file: &'a str) -> Summary<'a> {
    Summary {
        file,
        flat: &f.flat,
        total: f.total,
        duration_s: window(data, q).duration_s(),
        period_ns: data.capture.period_ns(q.metric),
        metric: q.metric,
    }
}

/// The base's fold query: its own selection, the new side's kernel filter and metric.
fn base_query(c: &Compare, new: &Query) -> Query {
    let (from_ns, to_ns) = c.selected().unwrap_or((0, 0));
    Query {
        from_ns,
        to_ns,
        excluded: Default::default(),
        no_kernel: new.no_kernel,
        no_interpreter: new.no_interpreter,
        metric: new.metric,
    }
}

/// Recomputes what the diff mode shows that the inputs invalidated (after the state's own
/// refresh has folded the new side): the diff, the flat rows, the callers/callees and the
/// flame comparison of the view showing, and the base's timeline.
pub fn refresh(state: &mut State) {
    let Some(mut c) = state.diff.take() else {
        return;
    };
    let nq = state.query();
    let bq = base_query(&c, &nq);
    let base_key = (c.base.generation, bq.clone());
    if c.fold_key.as_ref() != Some(&base_key) {
        c.fold = Some(fold(&mut c.base, &bq));
        c.fold_key = Some(base_key);
        c.fold_version += 1;
    }
    let key = (state.cache.fold_version, c.fold_version, c.options.scale);
    if c.diff_key.as_ref() != Some(&key)
        && let (Some(nf), Some(bf)) = (state.cache.fold.as_ref(), c.fold.as_ref())
    {
        let (nfile, bfile) = (file_name(&state.data.capture), file_name(&c.base.capture));
        let d = diff_summaries(
            &side(&c.base, bf, &bq, &bfile),
            &side(&state.data, nf, &nq, &nfile),
            &c.options,
        );
        let all = |_: u32| true;
        c.threads = threads::compare_captures(
            (&c.base.capture, &all),
            (&state.data.capture, &all),
            nq.metric,
        );
        c.index = d
            .changes
            .iter()
            .enumerate()
            .map(|(i, ch)| (match_key(&ch.key), i))
            .collect();
        c.diff = Some(d);
        c.diff_key = Some(key);
        c.version += 1;
    }
    let width = state.regions().timeline.width;
    let tl_key = (c.base.generation, nq.hide(), state.metric, width);
    if c.timeline_key != Some(tl_key) {
        c.timeline = timeline(
            &mut c.base,
            &Default::default(),
            nq.hide(),
            state.metric,
            usize::from(width),
        );
        c.timeline_key = Some(tl_key);
    }
    let rows_key = (c.version, state.flat.filter.clone(), state.flat.sort);
    if c.rows_key.as_ref() != Some(&rows_key) {
        state.flat.rows = rows(&c, &state.flat.filter, state.flat.sort);
        c.rows_key = Some(rows_key);
    }
    let fold_version = state.cache.fold_version;
    if let Some(target) = state.callers.target.clone() {
        let nk = (c.version, fold_version, target.clone());
        if c.neighbours_key.as_ref() != Some(&nk) {
            neighbours(state, &mut c, &target);
            c.neighbours_key = Some(nk);
        }
    }
    if state.view == View::Flame
        && let Some(f) = state.cache.fold.as_ref()
    {
        if c.tree_key != Some(c.fold_version) {
            c.tree = c
                .fold
                .as_ref()
                .map(|bf| aggregate::tree(&c.base.profile, &bf.selected))
                .unwrap_or_default();
            c.tree_key = Some(c.fold_version);
        }
        let fk = (c.version, fold_version);
        if c.flame_key != Some(fk) {
            c.flame = flame::compare(f, &c);
            c.flame_key = Some(fk);
        }
    }
    let h = usize::from(state.regions().list_height());
    let n = state.flat.rows.len();
    state.flat.pos.clamp(n, h);
    let n = state.callers_len();
    state.callers.pos.clamp(n, h.saturating_sub(3));
    state.diff = Some(c);
}

/// The flat rows: indices into the diff's changes, filtered by name and sorted by the
/// size of the self change (the diff's order), of the total change, or by name.
fn rows(c: &Compare, filter: &str, sort: Sort) -> Vec<usize> {
    let Some(d) = &c.diff else {
        return Vec::new();
    };
    let needle = filter.to_lowercase();
    let mut rows: Vec<usize> = d
        .changes
        .iter()
        .enumerate()
        .filter(|(_, ch)| needle.is_empty() || ch.key.function.to_lowercase().contains(&needle))
        .map(|(i, _)| i)
        .collect();
    match sort {
        Sort::SelfTime => {}
        Sort::Total => {
            let size = |i: usize| {
                let ch = &d.changes[i];
                match d.scale {
                    Scale::Share => ch.delta_total.abs(),
                    Scale::Rate => (ch.new_total_rate - ch.base_total_rate).abs(),
                }
            };
            rows.sort_by(|&a, &b| size(b).total_cmp(&size(a)).then(a.cmp(&b)));
        }
        Sort::Name => rows.sort_by(|&a, &b| d.changes[a].key.cmp(&d.changes[b].key)),
    }
    rows
}

/// The callers and callees of `target` in both captures: the state's neighbours become
/// the union (the new capture's weights, 0 where only the base has the edge), and the
/// base's weights go beside them.
fn neighbours(state: &mut State, c: &mut Compare, target: &FunctionKey) {
    let new = state
        .cache
        .fold
        .as_ref()
        .map(|f| aggregate::neighbours(&state.data.profile, &f.selected, target))
        .unwrap_or_default();
    let want = match_key(target);
    let base_key = c
        .base
        .profile
        .keys()
        .iter()
        .find(|k| match_key(k) == want)
        .cloned();
    let base = base_key
        .zip(c.fold.as_ref())
        .map(|(k, bf)| aggregate::neighbours(&c.base.profile, &bf.selected, &k))
        .unwrap_or_default();
    let union = |new: &[(FunctionKey, u64)], base: &[(FunctionKey, u64)]| {
        let mut rows: Vec<(FunctionKey, u64, u64)> =
            new.iter().map(|(k, n)| (k.clone(), *n, 0)).collect();
        let mut at: FxHashMap<MatchKey, usize> = rows
            .iter()
            .enumerate()
            .map(|(i, r)| (match_key(&r.0), i))
            .collect();
        for (k, n) in base {
            match at.get(&match_key(k)) {
                Some(&i) => rows[i].2 += n,
                None => {
                    at.insert(match_key(k), rows.len());
                    rows.push((k.clone(), 0, *n));
                }
            }
        }
        rows
    };
    let callers = union(&new.callers, &base.callers);
    let callees = union(&new.callees, &base.callees);
    c.neighbours = callers.iter().chain(&callees).map(|r| r.2).collect();
    c.target_total = base.total;
    c.target_self = base.self_samples;
    state.cache.neighbours = Neighbours {
        total: new.total,
        self_samples: new.self_samples,
        callers: callers.into_iter().map(|r| (r.0, r.1)).collect(),
        callees: callees.into_iter().map(|r| (r.0, r.1)).collect(),
    };
}
