//! `report --format json`: the `hotspot-report` document, version 1, for scripts and CI.
//! `docs/json-schema.md` describes every field; a change that breaks a reader bumps
//! [`VERSION`]. Under `--metric off-cpu` and `wall` counts are periods and the document
//! gains fields (`metric`, `period_ns`, `*_ns` next to counts, splits by kind of time),
//! none of which a `cpu` document has, so readers of version 1 see no change.

use std::collections::HashMap;
use std::io::{self, Write};
use std::sync::Arc;

use serde::Serialize;
use serde::ser::{SerializeSeq, Serializer};

use super::slice::Slice;
use super::split::{self, Split, SplitJson};
use super::summary::{CaptureInfo, MarkJson, Session, capture_info_of, marks_of, session_of};
use super::{ExportError, ExportOptions, pct};
use crate::metric::{self, Metric};
use crate::model::Profile;
use crate::model::aggregate::FlatRow;
use crate::model::aggregate::Tree as CallTree;
use crate::names::FunctionKey;
use crate::sanitize::{Shown, display};

/// The `schema` field.
pub const SCHEMA: &str = "hotspot-report";
/// The `version` field.
pub const VERSION: u32 = 1;

/// The document. `functions` and `tree` are produced while they are written: names are
/// repeated on every tree node, so the text can be far larger than what it is made from.
#[derive(Serialize)]
struct Report<'a> {
    schema: &'static str,
    version: u32,
    /// Under `--metric off-cpu` and `wall` only (absent: `cpu`, counts are samples).
    #[serde(skip_serializing_if = "Option::is_none")]
    metric: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    period_ns: Option<u64>,
    capture: CaptureInfo,
    session: Option<Session>,
    /// The capture's marks (format 1.5), all of them, whatever the selection; absent
    /// when it has none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    marks: Vec<MarkJson>,
    selection: SelectionInfo,
    totals: Totals,
    functions: Functions<'a>,
    threads: Vec<Thread>,
    tree: Tree<'a>,
}

#[derive(Serialize)]
struct SelectionInfo {
    from_s: Option<f64>,
    to_s: Option<f64>,
    tids: Option<Vec<u32>>,
    threads: Vec<String>,
    pids: Option<Vec<u32>>,
    no_kernel: bool,
    no_interpreter: bool,
    top: Option<usize>,
}

#[derive(Serialize)]
struct Totals {
    samples: u64,
    capture_samples: u64,
    lost: u64,
    unknown_stack_samples: u64,
    duration_s: f64,
    functions: usize,
    stacks: usize,
    threads: usize,
    #[serde(flatten)]
    timed: Option<Timed>,
}

/// What a count under `--metric off-cpu` or `wall` adds: its ns and its split by kind.
#[derive(Serialize)]
struct Timed {
    samples_ns: u64,
    split: SplitJson,
    split_ns: SplitJson,
}

impl Timed {
    fn of(s: &Split, period_ns: u64) -> Timed {
        Timed {
            samples_ns: metric::ns(s.wall(), period_ns),
            split: s.json(),
            split_ns: s.json_ns(period_ns),
        }
    }
}

#[derive(Serialize)]
struct Function {
    rank: usize,
    name: String,
    module: String,
    kernel: bool,
    kind: &'static str,
    #[serde(rename = "self")]
    self_samples: u64,
    total: u64,
    self_pct: f64,
    total_pct: f64,
    file: Option<String>,
    line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    self_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    total_ns: Option<u64>,
    /// The total's periods by kind of time.
    #[serde(skip_serializing_if = "Option::is_none")]
    total_split: Option<SplitJson>,
}

#[derive(Serialize)]
struct Thread {
    tid: u32,
    pid: Option<u32>,
    name: String,
    samples: u64,
    pct: f64,
    #[serde(flatten)]
    timed: Option<Timed>,
}

#[derive(Serialize)]
struct Node<'a> {
    id: usize,
    parent: Option<usize>,
    depth: usize,
    name: Option<&'a str>,
    module: Option<&'a str>,
    kernel: bool,
    kind: Option<&'static str>,
    #[serde(rename = "self")]
    self_samples: u64,
    total: u64,
    file: Option<&'a str>,
    line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    self_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    total_ns: Option<u64>,
}

/// Rounds seconds to the nanosecond, so floats print the same everywhere.
fn secs(ns_offset: f64) -> f64 {
    (ns_offset * 1e9).round() / 1e9
}

/// Writes the JSON document, pretty-printed, newline-terminated. `options.top` limits
/// `functions`; the tree always holds every node.
pub fn write(slice: &Slice, options: &ExportOptions, w: &mut dyn Write) -> Result<(), ExportError> {
    let top = options.top;
    let (capture, extent) = (slice.capture, &slice.extent);
    let total = slice.total;
    let rows = slice.flat();
    let clock = extent.clock;
    let offset = |ns: Option<u64>| ns.zip(clock).map(|(ns, c)| secs(c.offset_s(ns)));
    // Under `cpu` the document is what it always was.
    let period = (slice.metric() != Metric::Cpu).then(|| slice.period_ns());
    let functions = Functions {
        rows: &rows[..rows.len().min(top.unwrap_or(usize::MAX))],
        total,
        timed: period.map(|p| (p, split::by_function(slice))),
    };
    let thread_splits = period.map(|_| split::by_thread(slice)).unwrap_or_default();
    let mut threads: Vec<Thread> = slice
        .thread_samples
        .iter()
        .map(|(&tid, &n)| {
            let info = capture.threads.get(&tid);
            Thread {
                tid,
                pid: info.map(|t| t.pid),
                name: info.map(|t| display(t.name())).unwrap_or_default(),
                samples: n,
                pct: pct(n, total),
                timed: period
                    .map(|p| Timed::of(&thread_splits.get(&tid).copied().unwrap_or_default(), p)),
            }
        })
        .collect();
    threads.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.tid.cmp(&b.tid)));
    let call_tree = slice.tree();
    let tree = Tree(&call_tree, &slice.profile, period);
    let report = Report {
        schema: SCHEMA,
        version: VERSION,
        metric: period.map(|_| slice.metric().name()),
        period_ns: period,
        capture: capture_info_of(capture),
        session: session_of(capture),
        marks: marks_of(capture, clock),
        selection: SelectionInfo {
            from_s: offset(extent.from_ns),
            to_s: offset(extent.to_ns),
            tids: slice.filter.tids.as_ref().map(|t| {
                let mut v: Vec<u32> = t.iter().copied().collect();
                v.sort_unstable();
                v
            }),
            threads: slice.selection.threads.iter().map(|n| display(n)).collect(),
            pids: slice.filter.pids.as_ref().map(|p| {
                let mut v: Vec<u32> = p.iter().copied().collect();
                v.sort_unstable();
                v
            }),
            no_kernel: slice.selection.no_kernel,
            no_interpreter: slice.selection.no_interpreter,
            top,
        },
        totals: Totals {
            samples: total,
            capture_samples: extent.capture_total,
            lost: capture.lost,
            unknown_stack_samples: slice.unknown_stacks,
            duration_s: secs(slice.duration_s()),
            functions: rows.len(),
            stacks: slice.distinct_stacks(),
            threads: slice.thread_samples.len(),
            timed: period.map(|p| Timed::of(&split::total(slice), p)),
        },
        functions,
        threads,
        tree,
    };
    // An I/O failure comes back as the `io::Error` itself (a closed pipe stays one).
    serde_json::to_writer_pretty(&mut *w, &report).map_err(io::Error::from)?;
    w.write_all(b"\n")?;
    Ok(())
}

/// The flat profile's rows, ranked.
struct Functions<'a> {
    rows: &'a [FlatRow],
    total: u64,
    /// Under `off-cpu` and `wall`: the period and each function's total split.
    timed: Option<(u64, HashMap<FunctionKey, Split>)>,
}

impl Serialize for Functions<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let total = self.total;
        let mut seq = serializer.serialize_seq(Some(self.rows.len()))?;
        for (i, r) in self.rows.iter().enumerate() {
            seq.serialize_element(&Function {
                rank: i + 1,
                name: display(&r.key.function),
                module: display(&r.key.module),
                kernel: r.key.kind.is_kernel(),
                kind: r.key.kind.name(),
                self_samples: r.self_samples,
                total: r.total_samples,
                self_pct: pct(r.self_samples, total),
                total_pct: pct(r.total_samples, total),
                file: r.hottest.as_ref().map(|(f, _)| display(f)),
                line: r.hottest.as_ref().map(|(_, l)| *l),
                self_ns: self.timed.as_ref().map(|t| metric::ns(r.self_samples, t.0)),
                total_ns: self
                    .timed
                    .as_ref()
                    .map(|t| metric::ns(r.total_samples, t.0)),
                total_split: self
                    .timed
                    .as_ref()
                    .map(|t| t.1.get(&r.key).copied().unwrap_or_default().json()),
            })?;
        }
        seq.end()
    }
}

/// The call tree in pre-order (a parent before its children, hottest child first), so
/// `id` is the position in the array and `parent` always points backwards.
struct Tree<'a>(&'a CallTree, &'a Profile, Option<u64>);

impl Serialize for Tree<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (tree, profile, period) = (self.0, self.1, self.2);
        let mut seq = serializer.serialize_seq(Some(tree.nodes.len()))?;
        let mut id = 0;
        // Names recur on many nodes: each is sanitised once.
        let mut shown = Shown::default();
        let mut show = |s: &Arc<str>| shown.get(s, |s| display(s).into());
        // (node, parent's id, depth); iterative, since stacks can be deep.
        let mut todo = vec![(0usize, None, 0usize)];
        while let Some((at, parent, depth)) = todo.pop() {
            let node = &tree.nodes[at];
            let key = node.func.map(|f| &profile.keys()[f as usize]);
            let hottest = node
                .lines
                .first()
                .map(|&(l, _)| &profile.lines()[l as usize]);
            let name = key.map(|k| show(&k.function));
            let module = key.map(|k| show(&k.module));
            let file = hottest.map(|(f, _)| show(f));
            seq.serialize_element(&Node {
                id,
                parent,
                depth,
                name: name.as_deref(),
                module: module.as_deref(),
                kernel: key.is_some_and(|k| k.kind.is_kernel()),
                kind: key.map(|k| k.kind.name()),
                self_samples: node.self_samples,
                total: node.total,
                file: file.as_deref(),
                line: hottest.map(|(_, l)| *l),
                self_ns: period.map(|p| metric::ns(node.self_samples, p)),
                total_ns: period.map(|p| metric::ns(node.total, p)),
            })?;
            for &child in node.children.iter().rev() {
                todo.push((child, Some(id), depth + 1));
            }
            id += 1;
        }
        seq.end()
    }
}
