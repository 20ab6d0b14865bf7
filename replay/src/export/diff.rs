//! `hotspot diff`: how each function's share of the samples changed between two captures
//! (say, before and after a deploy). Functions are matched by name and module file name,
//! never by address, so captures of different builds compare. Both sides are weighed by
//! the same `--metric` (under `off-cpu` and `wall`, counts and shares are of periods).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;

use serde::Serialize;

use super::slice::Slice;
use super::{DEFAULT_TOP, ExportError, ExportOptions, folded, pct};
use crate::metric::{self, Metric};
use crate::names::FunctionKey;
use crate::sanitize::display;

/// One function's samples in both captures.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub key: FunctionKey,
    pub base_self: u64,
    pub base_total: u64,
    pub new_self: u64,
    pub new_total: u64,
    /// Change of the self share, in percentage points of each capture's samples.
    pub delta_self: f64,
    /// Change of the total (inclusive) share, in percentage points.
    pub delta_total: f64,
}

/// Two captures compared.
#[derive(Debug, Clone, PartialEq)]
pub struct Diff {
    pub base_file: String,
    pub new_file: String,
    pub base_samples: u64,
    pub new_samples: u64,
    /// What both sides count (`--metric`): under `off-cpu` and `wall`, periods.
    pub metric: Metric,
    /// Each side's period in ns.
    pub base_period_ns: u64,
    pub new_period_ns: u64,
    /// Largest change of self share first, then of total share, then by name.
    pub changes: Vec<Change>,
}

fn share(n: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        100.0 * n as f64 / of as f64
    }
}

/// Compares the functions of `base` and `new`.
pub fn diff(base: &Slice, new: &Slice) -> Diff {
    let mut both: BTreeMap<FunctionKey, [u64; 4]> = BTreeMap::new();
    for r in base.flat() {
        let e = both.entry(r.key).or_default();
        e[0] = r.self_samples;
        e[1] = r.total_samples;
    }
    for r in new.flat() {
        let e = both.entry(r.key).or_default();
        e[2] = r.self_samples;
        e[3] = r.total_samples;
    }
    let (nb, nn) = (base.total, new.total);
    let mut changes: Vec<Change> = both
        .into_iter()
        .map(|(key, [bs, bt, ns, nt])| Change {
            key,
            base_self: bs,
            base_total: bt,
            new_self: ns,
            new_total: nt,
            delta_self: share(ns, nn) - share(bs, nb),
            delta_total: share(nt, nn) - share(bt, nb),
        })
        .collect();
    changes.sort_by(|a, b| {
        b.delta_self
            .abs()
            .total_cmp(&a.delta_self.abs())
            .then(b.delta_total.abs().total_cmp(&a.delta_total.abs()))
            .then_with(|| a.key.cmp(&b.key))
    });
    Diff {
        base_file: base.file_name(),
        new_file: new.file_name(),
        base_samples: nb,
        new_samples: nn,
        metric: new.metric(),
        base_period_ns: base.period_ns(),
        new_period_ns: new.period_ns(),
        changes,
    }
}

/// Writes the largest changes ([`ExportOptions::top`], else [`DEFAULT_TOP`]) as a text table.
pub fn write_text(
    base: &Slice,
    new: &Slice,
    options: &ExportOptions,
    out: &mut dyn Write,
) -> Result<(), ExportError> {
    let d = diff(base, new);
    out.write_all(table(&d, options.top.unwrap_or(DEFAULT_TOP)).as_bytes())?;
    Ok(())
}

fn table(d: &Diff, top: usize) -> String {
    let mut o = String::new();
    if d.metric == Metric::Cpu {
        let _ = writeln!(
            o,
            "base: {} ({} samples)  new: {} ({} samples)",
            d.base_file, d.base_samples, d.new_file, d.new_samples
        );
        let _ = writeln!(
            o,
            "shares in % of each capture's samples; Δ in percentage points, largest first"
        );
    } else {
        let _ = writeln!(
            o,
            "{} time; base: {} ({} periods, {:.3} s)  new: {} ({} periods, {:.3} s)",
            d.metric.label(),
            d.base_file,
            d.base_samples,
            metric::secs(d.base_samples, d.base_period_ns),
            d.new_file,
            d.new_samples,
            metric::secs(d.new_samples, d.new_period_ns),
        );
        let _ = writeln!(
            o,
            "shares in % of each capture's {} periods; Δ in percentage points, largest first",
            d.metric.label()
        );
    }
    let shown: Vec<&Change> = d.changes.iter().take(top).collect();
    let modules: Vec<String> = shown.iter().map(|c| display(&c.key.module)).collect();
    let width = super::text::module_width(&modules);
    let _ = writeln!(
        o,
        "{:>8} {:>7} {:>7} {:>8} {:>7} {:>7}  {:<width$}  function",
        "Δself", "base", "new", "Δtotal", "base", "new", "module"
    );
    for (c, module) in shown.iter().zip(&modules) {
        let _ = writeln!(
            o,
            "{:>+8.2} {:>6.2}% {:>6.2}% {:>+8.2} {:>6.2}% {:>6.2}%  {:<width$}  {}",
            round2(c.delta_self),
            share(c.base_self, d.base_samples),
            share(c.new_self, d.new_samples),
            round2(c.delta_total),
            share(c.base_total, d.base_samples),
            share(c.new_total, d.new_samples),
            module,
            display(&c.key.function),
        );
    }
    if d.changes.len() > shown.len() {
        let _ = writeln!(
            o,
            "({} more functions; --top N shows more)",
            d.changes.len() - shown.len()
        );
    }
    o
}

/// Rounds to two decimals, and makes -0.00 print as +0.00.
fn round2(x: f64) -> f64 {
    let r = (x * 100.0).round() / 100.0;
    if r == 0.0 { 0.0 } else { r }
}

#[derive(Serialize)]
struct Side {
    file: String,
    samples: u64,
    /// Under `off-cpu` and `wall` (where `samples` counts periods).
    #[serde(skip_serializing_if = "Option::is_none")]
    period_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    samples_ns: Option<u64>,
}

#[derive(Serialize)]
struct Row {
    name: String,
    module: String,
    kernel: bool,
    base_self: u64,
    new_self: u64,
    base_total: u64,
    new_total: u64,
    base_self_pct: f64,
    new_self_pct: f64,
    delta_self_pct: f64,
    base_total_pct: f64,
    new_total_pct: f64,
    delta_total_pct: f64,
}

#[derive(Serialize)]
struct Document {
    schema: &'static str,
    version: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    metric: Option<&'static str>,
    base: Side,
    new: Side,
    functions: usize,
    changes: Vec<Row>,
}

/// Writes the `hotspot-diff` JSON document (see `docs/json-schema.md`), newline-terminated;
/// [`ExportOptions::top`] limits `changes`.
pub fn write_json(
    base: &Slice,
    new: &Slice,
    options: &ExportOptions,
    out: &mut dyn Write,
) -> Result<(), ExportError> {
    out.write_all(document(&diff(base, new), options.top).as_bytes())?;
    Ok(())
}

fn document(d: &Diff, top: Option<usize>) -> String {
    let changes = d
        .changes
        .iter()
        .take(top.unwrap_or(usize::MAX))
        .map(|c| Row {
            name: display(&c.key.function),
            module: display(&c.key.module),
            kernel: c.key.kind.is_kernel(),
            base_self: c.base_self,
            new_self: c.new_self,
            base_total: c.base_total,
            new_total: c.new_total,
            base_self_pct: pct(c.base_self, d.base_samples),
            new_self_pct: pct(c.new_self, d.new_samples),
            delta_self_pct: round2(c.delta_self),
            base_total_pct: pct(c.base_total, d.base_samples),
            new_total_pct: pct(c.new_total, d.new_samples),
            delta_total_pct: round2(c.delta_total),
        })
        .collect();
    let timed = d.metric != Metric::Cpu;
    let side = |file: &str, samples: u64, period: u64| Side {
        file: file.to_string(),
        samples,
        period_ns: timed.then_some(period),
        samples_ns: timed.then(|| metric::ns(samples, period)),
    };
    let doc = Document {
        schema: "hotspot-diff",
        version: 1,
        metric: timed.then(|| d.metric.name()),
        base: side(&d.base_file, d.base_samples, d.base_period_ns),
        new: side(&d.new_file, d.new_samples, d.new_period_ns),
        functions: d.changes.len(),
        changes,
    };
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
    s.push('\n');
    s
}

/// Writes the differential folded format flame-graph tools read:
/// `a;b;c count_base count_new`, one line per stack found in either capture, sorted.
pub fn write_folded(
    base: &Slice,
    new: &Slice,
    _: &ExportOptions,
    w: &mut dyn Write,
) -> Result<(), ExportError> {
    use std::cmp::Ordering;
    let mut a = folded::lines(base, usize::MAX).into_iter().peekable();
    let mut b = folded::lines(new, usize::MAX).into_iter().peekable();
    loop {
        let order = match (a.peek(), b.peek()) {
            (None, None) => return Ok(()),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(x), Some(y)) => folded::cmp_joined(&x.0, &y.0),
        };
        let (names, na, nb) = match order {
            Ordering::Less => a.next().map(|(s, n)| (s, n, 0)),
            Ordering::Greater => b.next().map(|(s, n)| (s, 0, n)),
            Ordering::Equal => a.next().zip(b.next()).map(|((s, n), (_, m))| (s, n, m)),
        }
        .unwrap_or_default();
        folded::write_stack(w, &names)?;
        writeln!(w, " {na} {nb}")?;
    }
}
