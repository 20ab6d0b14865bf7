//! `report --format json`: the `hotspot-report` document, version 1, for scripts and CI.
//! `docs/json-schema.md` describes every field; a change that breaks a reader bumps
//! [`VERSION`].

use serde::Serialize;

use super::slice::Slice;
use super::time::rfc3339;
use crate::capture::Capture;
use crate::flat::flat;
use crate::sanitize::display;
use crate::tree::CallTree;

/// The `schema` field.
pub const SCHEMA: &str = "hotspot-report";
/// The `version` field.
pub const VERSION: u32 = 1;

#[derive(Serialize)]
struct Report {
    schema: &'static str,
    version: u32,
    capture: CaptureInfo,
    session: Option<Session>,
    selection: SelectionInfo,
    totals: Totals,
    functions: Vec<Function>,
    threads: Vec<Thread>,
    tree: Vec<Node>,
}

#[derive(Serialize)]
pub(crate) struct CaptureInfo {
    pub file: String,
    pub format_version: String,
    pub size_bytes: u64,
    pub ending: &'static str,
}

#[derive(Serialize)]
pub(crate) struct Session {
    pub host: String,
    pub kernel_release: String,
    pub arch: String,
    pub cpus: u32,
    pub freq_hz: u32,
    pub period_ns: u64,
    pub command_line: Vec<String>,
    pub start_utc: String,
    pub start_wall_ns: u64,
    pub start_mono_ns: u64,
    pub recorder_version: String,
}

#[derive(Serialize)]
struct SelectionInfo {
    from_s: Option<f64>,
    to_s: Option<f64>,
    tids: Option<Vec<u32>>,
    threads: Vec<String>,
    pids: Option<Vec<u32>>,
    no_kernel: bool,
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
}

#[derive(Serialize)]
struct Function {
    rank: usize,
    name: String,
    module: String,
    kernel: bool,
    #[serde(rename = "self")]
    self_samples: u64,
    total: u64,
    self_pct: f64,
    total_pct: f64,
    file: Option<String>,
    line: Option<u32>,
}

#[derive(Serialize)]
struct Thread {
    tid: u32,
    pid: Option<u32>,
    name: String,
    samples: u64,
    pct: f64,
}

#[derive(Serialize)]
struct Node {
    id: usize,
    parent: Option<usize>,
    depth: usize,
    name: Option<String>,
    module: Option<String>,
    kernel: bool,
    #[serde(rename = "self")]
    self_samples: u64,
    total: u64,
    file: Option<String>,
    line: Option<u32>,
}

/// `100 * part / whole`, rounded to two decimals (0 for an empty whole).
pub(crate) fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        return 0.0;
    }
    (10_000.0 * part as f64 / whole as f64).round() / 100.0
}

/// Rounds seconds to the nanosecond, so floats print the same everywhere.
fn secs(ns_offset: f64) -> f64 {
    (ns_offset * 1e9).round() / 1e9
}

pub(crate) fn capture_info_of(c: &Capture) -> CaptureInfo {
    CaptureInfo {
        file: display(
            &c.path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        ),
        format_version: format!("{}.{}", c.version.0, c.version.1),
        size_bytes: c.file_size,
        ending: match (&c.end, c.truncated) {
            (Some(_), None) => "clean",
            (_, Some(_)) => "truncated",
            (None, None) => "cut",
        },
    }
}

pub(crate) fn session_of(c: &Capture) -> Option<Session> {
    c.session.as_ref().map(|s| Session {
        host: display(&s.host),
        kernel_release: display(&s.kernel_release),
        arch: display(&s.arch),
        cpus: s.cpus,
        freq_hz: s.freq_hz,
        period_ns: if s.freq_hz > 0 {
            (1e9 / f64::from(s.freq_hz)).round() as u64
        } else {
            0
        },
        command_line: s.command_line.iter().map(|a| display(a)).collect(),
        start_utc: rfc3339(i128::from(s.start_wall_ns)),
        start_wall_ns: s.start_wall_ns,
        start_mono_ns: s.start_mono_ns,
        recorder_version: display(&s.recorder_version),
    })
}

/// The JSON document, pretty-printed, newline-terminated. `top` limits `functions`;
/// the tree always holds every node.
pub fn report(slice: &Slice, top: Option<usize>) -> String {
    let scan = slice.scan;
    let folded = &slice.folded;
    let total = folded.total;
    let rows = flat(folded);
    let clock = scan.clock;
    let offset = |ns: Option<u64>| ns.zip(clock).map(|(ns, c)| secs(c.offset_s(ns)));
    let functions = rows
        .iter()
        .take(top.unwrap_or(usize::MAX))
        .enumerate()
        .map(|(i, r)| Function {
            rank: i + 1,
            name: display(&r.key.function),
            module: display(&r.key.module),
            kernel: r.key.kernel,
            self_samples: r.self_samples,
            total: r.total_samples,
            self_pct: pct(r.self_samples, total),
            total_pct: pct(r.total_samples, total),
            file: r.hottest.as_ref().map(|(f, _)| display(f)),
            line: r.hottest.as_ref().map(|(_, l)| *l),
        })
        .collect();
    let mut threads: Vec<Thread> = slice
        .thread_samples
        .iter()
        .map(|(&tid, &n)| {
            let info = scan.capture.threads.get(&tid);
            Thread {
                tid,
                pid: info.map(|t| t.pid),
                name: info.map(|t| display(t.name())).unwrap_or_default(),
                samples: n,
                pct: pct(n, total),
            }
        })
        .collect();
    threads.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.tid.cmp(&b.tid)));
    let tree = tree_nodes(&CallTree::build(folded));
    let report = Report {
        schema: SCHEMA,
        version: VERSION,
        capture: capture_info_of(&scan.capture),
        session: session_of(&scan.capture),
        selection: SelectionInfo {
            from_s: offset(scan.from_ns),
            to_s: offset(scan.to_ns),
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
            top,
        },
        totals: Totals {
            samples: total,
            capture_samples: scan.samples,
            lost: scan.capture.lost,
            unknown_stack_samples: folded.unknown_stacks,
            duration_s: secs(slice.duration_s()),
            functions: rows.len(),
            stacks: folded.stacks.len(),
            threads: slice.thread_samples.len(),
        },
        functions,
        threads,
        tree,
    };
    let mut s = serde_json::to_string_pretty(&report).unwrap_or_default();
    s.push('\n');
    s
}

/// The call tree in pre-order (a parent before its children, hottest child first), so
/// `id` is the position in the array and `parent` always points backwards.
fn tree_nodes(tree: &CallTree) -> Vec<Node> {
    let mut out = Vec::with_capacity(tree.nodes.len());
    // (node, parent's id in `out`, depth); iterative, since stacks can be deep.
    let mut todo = vec![(0usize, None, 0usize)];
    while let Some((at, parent, depth)) = todo.pop() {
        let node = &tree.nodes[at];
        let id = out.len();
        let hottest = node.lines.first().map(|(l, _)| l);
        out.push(Node {
            id,
            parent,
            depth,
            name: node.key.as_ref().map(|k| display(&k.function)),
            module: node.key.as_ref().map(|k| display(&k.module)),
            kernel: node.key.as_ref().is_some_and(|k| k.kernel),
            self_samples: node.self_samples,
            total: node.total,
            file: hottest.map(|(f, _)| display(f)),
            line: hottest.map(|(_, l)| *l),
        });
        for &child in node.children.iter().rev() {
            todo.push((child, Some(id), depth + 1));
        }
    }
    out
}
