//! `hotspot diff`: how each function's share of the samples, and its time per second,
//! changed between two captures (say, before and after a deploy), and which changes are
//! beyond sampling noise ([`significance`]). Functions are matched by name and module file
//! name with any shared-object version dropped (`libfoo.so.1.2` is `libfoo.so`), never by
//! address or path, so captures of different builds and installs compare. Both sides are
//! weighed by the same `--metric` (under `off-cpu` and `wall`, counts and shares are of
//! periods).

mod flame;
pub mod gate;
pub mod significance;
pub mod threads;

pub use flame::write_svg;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;
use std::sync::Arc;

use serde::Serialize;

use super::slice::Slice;
use super::{DEFAULT_TOP, ExportError, ExportOptions, folded, pct};
use crate::metric::{self, Metric};
use crate::model::aggregate::FlatRow;
use crate::names::FunctionKey;
use crate::sanitize::display;

/// What a diff ranks and shows by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Scale {
    /// Each function's share of its capture's samples (percentage points).
    #[default]
    Share,
    /// Each function's time per second of the time the capture covers (ms/s): a function
    /// that kept its share while everything got slower grew here.
    Rate,
}

impl Scale {
    pub const ALL: [Scale; 2] = [Scale::Share, Scale::Rate];

    pub fn name(self) -> &'static str {
        match self {
            Scale::Share => "share",
            Scale::Rate => "rate",
        }
    }
}

/// A diff's options: what it ranks by and the family-wise error rate its marks control.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiffOptions {
    pub scale: Scale,
    /// The chance, at most, that any unchanged function is marked (Holm over each family
    /// of tests).
    pub alpha: f64,
}

impl Default for DiffOptions {
    fn default() -> DiffOptions {
        DiffOptions {
            scale: Scale::Share,
            alpha: significance::DEFAULT_ALPHA,
        }
    }
}

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
    /// Holm-adjusted p-values of the self and total share changes (two-proportion tests).
    pub self_p: f64,
    pub total_p: f64,
    /// Time per second covered, in ms/s, self and total, in each capture.
    pub base_self_rate: f64,
    pub new_self_rate: f64,
    pub base_total_rate: f64,
    pub new_total_rate: f64,
    /// Holm-adjusted p-values of the self and total rate changes.
    pub self_rate_p: f64,
    pub total_rate_p: f64,
}

impl Change {
    /// Relative change of a rate in %: `None` for a function the base did not have.
    pub fn rate_growth(base: f64, new: f64) -> Option<f64> {
        (base > 0.0).then(|| 100.0 * (new - base) / base)
    }

    /// Present in the new capture only, or in the base only.
    pub fn is_new(&self) -> bool {
        self.base_total == 0 && self.new_total > 0
    }

    pub fn is_gone(&self) -> bool {
        self.new_total == 0 && self.base_total > 0
    }
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
    /// Seconds each capture's selection covers (what rates are per).
    pub base_duration_s: f64,
    pub new_duration_s: f64,
    /// The family-wise error rate the marks control, and how many tests each family
    /// (shares, rates) held.
    pub alpha: f64,
    pub tests: usize,
    /// What the changes are ranked by.
    pub scale: Scale,
    /// Largest change first (of self, then total, on the scale), then by name.
    pub changes: Vec<Change>,
}

impl Diff {
    /// Whether a Holm-adjusted p-value is beyond noise at the diff's error rate.
    pub fn significant(&self, p: f64) -> bool {
        p < self.alpha
    }

    /// The adjusted p-values of a change's self and total on the diff's scale: what its
    /// marks (text `*`, the views' dimming) are decided by.
    pub fn p_values(&self, c: &Change) -> [f64; 2] {
        match self.scale {
            Scale::Share => [c.self_p, c.total_p],
            Scale::Rate => [c.self_rate_p, c.total_rate_p],
        }
    }

    /// Whether a change's self and total are beyond noise on the diff's scale.
    pub fn marks(&self, c: &Change) -> [bool; 2] {
        self.p_values(c).map(|p| self.significant(p))
    }
}

/// What functions of two captures are matched by: name, module without its shared-object
/// version ([`match_module`]), and kind.
pub type MatchKey = (Arc<str>, Arc<str>, crate::kind::FrameKind);

/// A function's [`MatchKey`].
pub fn match_key(k: &FunctionKey) -> MatchKey {
    (
        k.function.clone(),
        Arc::from(match_module(&k.module)),
        k.kind,
    )
}

/// The module name functions match by: a shared object's version suffix dropped
/// (`libfoo.so.1.2` and `libfoo.so.1.3` are one library across an upgrade).
pub fn match_module(module: &str) -> &str {
    match module.find(".so.") {
        Some(at) => &module[..at + 3],
        None => module,
    }
}

fn share(n: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        100.0 * n as f64 / of as f64
    }
}

/// Compares the functions of `base` and `new` under [`DiffOptions::default`].
pub fn diff(base: &Slice, new: &Slice) -> Diff {
    diff_with(base, new, &DiffOptions::default())
}

/// What a diff needs of one side: a selection's flat profile and where it sits. A
/// [`Slice`] gives one ([`Summary::of`]); so does anything else holding the same flat rows
/// (the views' fold), so the views compare exactly as `hotspot diff` does.
#[derive(Debug, Clone, Copy)]
pub struct Summary<'a> {
    /// The capture's file name, sanitised.
    pub file: &'a str,
    /// The selection's flat rows ([`crate::model::aggregate::flat`]).
    pub flat: &'a [FlatRow],
    /// Weight selected (what shares are of).
    pub total: u64,
    /// Seconds the selection covers ([`Extent::duration_s`](super::slice::Extent::duration_s)).
    pub duration_s: f64,
    /// One period in ns under the metric ([`Capture::period_ns`](crate::Capture::period_ns)).
    pub period_ns: u64,
    pub metric: Metric,
}

impl<'a> Summary<'a> {
    /// A slice's, with its flat rows (`slice.flat()`) and file name.
    pub fn of(slice: &Slice, flat: &'a [FlatRow], file: &'a str) -> Summary<'a> {
        Summary {
            file,
            flat,
            total: slice.total,
            duration_s: slice.duration_s(),
            period_ns: slice.period_ns(),
            metric: slice.metric(),
        }
    }
}

/// Compares the functions of `base` and `new`.
pub fn diff_with(base: &Slice, new: &Slice, options: &DiffOptions) -> Diff {
    let (fb, fnew) = (base.flat(), new.flat());
    let (nb, nn) = (base.file_name(), new.file_name());
    diff_summaries(
        &Summary::of(base, &fb, &nb),
        &Summary::of(new, &fnew, &nn),
        options,
    )
}

/// Compares the functions of two sides given by their flat profiles.
pub fn diff_summaries(base: &Summary, new: &Summary, options: &DiffOptions) -> Diff {
    // Matched by (name, module without its version, kind); shown by the new capture's
    // module name where it has the function, else the base's.
    let mut both: BTreeMap<MatchKey, (FunctionKey, [u64; 4])> = BTreeMap::new();
    for r in base.flat {
        let e = both
            .entry(match_key(&r.key))
            .or_insert_with(|| (r.key.clone(), [0; 4]));
        e.1[0] += r.self_samples;
        e.1[1] += r.total_samples;
    }
    for r in new.flat {
        let e = both
            .entry(match_key(&r.key))
            .or_insert_with(|| (r.key.clone(), [0; 4]));
        e.0 = r.key.clone();
        e.1[2] += r.self_samples;
        e.1[3] += r.total_samples;
    }
    let (nb, nn) = (base.total, new.total);
    let (db, dn) = (base.duration_s, new.duration_s);
    let (pb, pn) = (base.period_ns, new.period_ns);
    // Sampling opportunities each capture had: covered time over its period.
    let opportunities = |d: f64, period: u64| {
        if period == 0 {
            0.0
        } else {
            d * 1e9 / period as f64
        }
    };
    let (wb, wn) = (opportunities(db, pb), opportunities(dn, pn));
    let rate = |n: u64, period: u64, d: f64| {
        if d > 0.0 {
            metric::ns(n, period) as f64 / 1e6 / d
        } else {
            0.0
        }
    };
    let rows: Vec<(FunctionKey, [u64; 4])> = both.into_values().collect();
    let p = |z: f64| significance::p_two_sided(z);
    let share_p: Vec<f64> = rows
        .iter()
        .flat_map(|(_, [bs, bt, ns, nt])| {
            [
                p(significance::two_proportion_z(*bs, nb, *ns, nn)),
                p(significance::two_proportion_z(*bt, nb, *nt, nn)),
            ]
        })
        .collect();
    let rate_p: Vec<f64> = rows
        .iter()
        .flat_map(|(_, [bs, bt, ns, nt])| {
            [
                p(significance::rate_z(*bs, wb, *ns, wn)),
                p(significance::rate_z(*bt, wb, *nt, wn)),
            ]
        })
        .collect();
    let share_p = significance::holm(&share_p);
    let rate_p = significance::holm(&rate_p);
    let mut changes: Vec<Change> = rows
        .into_iter()
        .enumerate()
        .map(|(i, (key, [bs, bt, ns, nt]))| Change {
            key,
            base_self: bs,
            base_total: bt,
            new_self: ns,
            new_total: nt,
            delta_self: share(ns, nn) - share(bs, nb),
            delta_total: share(nt, nn) - share(bt, nb),
            self_p: share_p[2 * i],
            total_p: share_p[2 * i + 1],
            base_self_rate: rate(bs, pb, db),
            new_self_rate: rate(ns, pn, dn),
            base_total_rate: rate(bt, pb, db),
            new_total_rate: rate(nt, pn, dn),
            self_rate_p: rate_p[2 * i],
            total_rate_p: rate_p[2 * i + 1],
        })
        .collect();
    let tests = share_p.len();
    match options.scale {
        Scale::Share => changes.sort_by(|a, b| {
            b.delta_self
                .abs()
                .total_cmp(&a.delta_self.abs())
                .then(b.delta_total.abs().total_cmp(&a.delta_total.abs()))
                .then_with(|| a.key.cmp(&b.key))
        }),
        Scale::Rate => changes.sort_by(|a, b| {
            let d = |c: &Change| (c.new_self_rate - c.base_self_rate).abs();
            let t = |c: &Change| (c.new_total_rate - c.base_total_rate).abs();
            d(b).total_cmp(&d(a))
                .then(t(b).total_cmp(&t(a)))
                .then_with(|| a.key.cmp(&b.key))
        }),
    }
    Diff {
        base_file: base.file.to_string(),
        new_file: new.file.to_string(),
        base_samples: nb,
        new_samples: nn,
        metric: new.metric,
        base_period_ns: pb,
        new_period_ns: pn,
        base_duration_s: db,
        new_duration_s: dn,
        alpha: options.alpha,
        tests,
        scale: options.scale,
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
    let d = diff_with(base, new, &options.diff);
    let top = options.top.unwrap_or(DEFAULT_TOP);
    let mut text = table(&d, top);
    if let Some(t) = threads::compare(base, new) {
        thread_table(&mut text, &t, top);
    }
    out.write_all(text.as_bytes())?;
    Ok(())
}

/// The text diff's part on threads ([`threads`]): wall, CPU and off-CPU seconds per
/// thread name in both captures.
fn thread_table(o: &mut String, t: &[threads::ThreadChange], top: usize) {
    let _ = writeln!(
        o,
        "\nwall time per thread name, in s (kernel-measured over each whole recording, not \
         sampled; Δ in % of the base)"
    );
    let _ = writeln!(
        o,
        "{:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7}  thread",
        "Δwall", "base", "new", "cpu base", "cpu new", "off base", "off new", "threads"
    );
    let s = |ns: Option<u64>| match ns {
        Some(ns) => format!("{:>9.3}", ns as f64 / 1e9),
        None => format!("{:>9}", "-"),
    };
    for c in t.iter().take(top) {
        let growth = match (c.wall_growth(), c.new) {
            (Some(g), _) => format!("{:>+7.1}%", g),
            (None, Some(_)) => "     new".to_string(),
            (None, None) => "    gone".to_string(),
        };
        let count = |t: Option<threads::ThreadTime>| t.map_or(0, |t| t.threads);
        let _ = writeln!(
            o,
            "{growth} {} {} {} {} {} {} {:>3}/{:<3}  {}",
            s(c.base.map(|t| t.wall_ns())),
            s(c.new.map(|t| t.wall_ns())),
            s(c.base.map(|t| t.on_cpu_ns)),
            s(c.new.map(|t| t.on_cpu_ns)),
            s(c.base.map(|t| t.off_ns())),
            s(c.new.map(|t| t.off_ns())),
            count(c.base),
            count(c.new),
            display(&c.name),
        );
    }
    if t.len() > top {
        let _ = writeln!(
            o,
            "({} more thread names; --top N shows more)",
            t.len() - top
        );
    }
}

fn table(d: &Diff, top: usize) -> String {
    let mut o = String::new();
    if d.metric == Metric::Cpu {
        let _ = writeln!(
            o,
            "base: {} ({} samples)  new: {} ({} samples)",
            d.base_file, d.base_samples, d.new_file, d.new_samples
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
    }
    let counted = if d.metric == Metric::Cpu {
        "samples".to_string()
    } else {
        format!("{} periods", d.metric.label())
    };
    match d.scale {
        Scale::Share => {
            let _ = writeln!(
                o,
                "shares in % of each capture's {counted}; Δ in percentage points, largest first"
            );
        }
        Scale::Rate => {
            let _ = writeln!(
                o,
                "ms per second of the time each capture covers ({:.3} s, {:.3} s); Δ in % of \
                 the base, largest first",
                d.base_duration_s, d.new_duration_s
            );
        }
    }
    let _ = writeln!(
        o,
        "* beyond sampling noise: Holm-adjusted p < {} over the {} {} tests (docs/diff.md)",
        d.alpha,
        d.tests,
        match d.scale {
            Scale::Share => "two-proportion",
            Scale::Rate => "rate",
        }
    );
    let shown: Vec<&Change> = d.changes.iter().take(top).collect();
    let modules: Vec<String> = shown.iter().map(|c| display(&c.key.module)).collect();
    let width = super::text::module_width(&modules);
    let mark = |on: bool| if on { '*' } else { ' ' };
    match d.scale {
        Scale::Share => {
            let _ = writeln!(
                o,
                "{:>9} {:>7} {:>7} {:>9} {:>7} {:>7}  {:<width$}  function",
                "Δself", "base", "new", "Δtotal", "base", "new", "module"
            );
            for (c, module) in shown.iter().zip(&modules) {
                let [self_mark, total_mark] = d.marks(c);
                let _ = writeln!(
                    o,
                    "{:>+8.2}{} {:>6.2}% {:>6.2}% {:>+8.2}{} {:>6.2}% {:>6.2}%  {:<width$}  {}",
                    round2(c.delta_self),
                    mark(self_mark),
                    share(c.base_self, d.base_samples),
                    share(c.new_self, d.new_samples),
                    round2(c.delta_total),
                    mark(total_mark),
                    share(c.base_total, d.base_samples),
                    share(c.new_total, d.new_samples),
                    module,
                    display(&c.key.function),
                );
            }
        }
        Scale::Rate => {
            let _ = writeln!(
                o,
                "{:>9} {:>8} {:>8} {:>9} {:>8} {:>8}  {:<width$}  function",
                "Δself", "base", "new", "Δtotal", "base", "new", "module"
            );
            let growth = |b: f64, n: f64| match Change::rate_growth(b, n) {
                Some(g) => format!("{:>+7.1}%", g),
                None if n > 0.0 => "     new".to_string(),
                None => "       -".to_string(),
            };
            for (c, module) in shown.iter().zip(&modules) {
                let [self_mark, total_mark] = d.marks(c);
                let _ = writeln!(
                    o,
                    "{}{} {:>8.2} {:>8.2} {}{} {:>8.2} {:>8.2}  {:<width$}  {}",
                    growth(c.base_self_rate, c.new_self_rate),
                    mark(self_mark),
                    c.base_self_rate,
                    c.new_self_rate,
                    growth(c.base_total_rate, c.new_total_rate),
                    mark(total_mark),
                    c.base_total_rate,
                    c.new_total_rate,
                    module,
                    display(&c.key.function),
                );
            }
        }
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

/// Rounds to three decimals.
fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
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
    duration_s: f64,
}

#[derive(Serialize)]
struct Row {
    name: String,
    module: String,
    kernel: bool,
    kind: &'static str,
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
    /// `both`, `new` or `gone`.
    presence: &'static str,
    self_p: f64,
    total_p: f64,
    self_significant: bool,
    total_significant: bool,
    base_self_ms_per_s: f64,
    new_self_ms_per_s: f64,
    base_total_ms_per_s: f64,
    new_total_ms_per_s: f64,
    self_rate_p: f64,
    total_rate_p: f64,
    self_rate_significant: bool,
    total_rate_significant: bool,
}

#[derive(Serialize)]
struct ThreadSide {
    threads: u32,
    on_cpu_ns: u64,
    sleeping_ns: u64,
    uninterruptible_ns: u64,
    runnable_ns: u64,
    wall_ns: u64,
}

#[derive(Serialize)]
struct ThreadRow {
    name: String,
    base: Option<ThreadSide>,
    new: Option<ThreadSide>,
    /// `null` for a thread name the base lacks.
    wall_growth_pct: Option<f64>,
}

fn thread_rows(t: &[threads::ThreadChange], top: Option<usize>) -> Vec<ThreadRow> {
    let side = |t: threads::ThreadTime| ThreadSide {
        threads: t.threads,
        on_cpu_ns: t.on_cpu_ns,
        sleeping_ns: t.off_cpu_ns[0],
        uninterruptible_ns: t.off_cpu_ns[1],
        runnable_ns: t.off_cpu_ns[2],
        wall_ns: t.wall_ns(),
    };
    t.iter()
        .take(top.unwrap_or(usize::MAX))
        .map(|c| ThreadRow {
            name: display(&c.name),
            base: c.base.map(side),
            new: c.new.map(side),
            wall_growth_pct: c.wall_growth().map(round2),
        })
        .collect()
}

#[derive(Serialize)]
struct Significance {
    share_test: &'static str,
    rate_test: &'static str,
    correction: &'static str,
    alpha: f64,
    tests: usize,
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
    significance: Significance,
    scale: &'static str,
    changes: Vec<Row>,
    /// Wall time per thread name, when both captures have off-CPU data.
    #[serde(skip_serializing_if = "Option::is_none")]
    threads: Option<Vec<ThreadRow>>,
}

/// Writes the `hotspot-diff` JSON document (see `docs/json-schema.md`), newline-terminated;
/// [`ExportOptions::top`] limits `changes`.
pub fn write_json(
    base: &Slice,
    new: &Slice,
    options: &ExportOptions,
    out: &mut dyn Write,
) -> Result<(), ExportError> {
    let threads = threads::compare(base, new).map(|t| thread_rows(&t, options.top));
    out.write_all(document(&diff_with(base, new, &options.diff), options.top, threads).as_bytes())?;
    Ok(())
}

fn document(d: &Diff, top: Option<usize>, threads: Option<Vec<ThreadRow>>) -> String {
    let changes = d
        .changes
        .iter()
        .take(top.unwrap_or(usize::MAX))
        .map(|c| Row {
            name: display(&c.key.function),
            module: display(&c.key.module),
            kernel: c.key.kind.is_kernel(),
            kind: c.key.kind.name(),
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
            presence: if c.is_new() {
                "new"
            } else if c.is_gone() {
                "gone"
            } else {
                "both"
            },
            self_p: c.self_p,
            total_p: c.total_p,
            self_significant: d.significant(c.self_p),
            total_significant: d.significant(c.total_p),
            base_self_ms_per_s: round3(c.base_self_rate),
            new_self_ms_per_s: round3(c.new_self_rate),
            base_total_ms_per_s: round3(c.base_total_rate),
            new_total_ms_per_s: round3(c.new_total_rate),
            self_rate_p: c.self_rate_p,
            total_rate_p: c.total_rate_p,
            self_rate_significant: d.significant(c.self_rate_p),
            total_rate_significant: d.significant(c.total_rate_p),
        })
        .collect();
    let timed = d.metric != Metric::Cpu;
    let side = |file: &str, samples: u64, period: u64, duration: f64| Side {
        file: file.to_string(),
        samples,
        period_ns: timed.then_some(period),
        samples_ns: timed.then(|| metric::ns(samples, period)),
        duration_s: (duration * 1e9).round() / 1e9,
    };
    let doc = Document {
        schema: "hotspot-diff",
        version: 1,
        metric: timed.then(|| d.metric.name()),
        base: side(
            &d.base_file,
            d.base_samples,
            d.base_period_ns,
            d.base_duration_s,
        ),
        new: side(
            &d.new_file,
            d.new_samples,
            d.new_period_ns,
            d.new_duration_s,
        ),
        functions: d.changes.len(),
        significance: Significance {
            share_test: "two-proportion z-test",
            rate_test: "conditional binomial z-test",
            correction: "holm",
            alpha: d.alpha,
            tests: d.tests,
        },
        scale: d.scale.name(),
        changes,
        threads,
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

#[cfg(test)]
mod tests {
    use super::match_module;

    #[test]
    fn a_shared_objects_version_is_not_part_of_its_match() {
        assert_eq!(match_module("libfoo.so.1.2"), "libfoo.so");
        assert_eq!(match_module("libfoo.so.1.3"), "libfoo.so");
        assert_eq!(match_module("libpython3.11.so.1.0"), "libpython3.11.so");
        assert_eq!(match_module("libfoo.so"), "libfoo.so");
        assert_eq!(match_module("split7030"), "split7030");
        assert_eq!(match_module("[kernel]"), "[kernel]");
    }
}
