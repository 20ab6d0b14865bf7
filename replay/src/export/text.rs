//! `hotspot report`'s text form: the flat profile (top functions by self samples) with a
//! header saying what was counted, for a terminal or a ticket comment. Under `--metric
//! off-cpu` and `wall` the counts are periods, the header gives the period and the split
//! by state, and the table adds each row's time.

use std::fmt::Write as _;
use std::io::Write;

use hotspot_format::ThreadState;

use super::slice::Slice;
use super::{DEFAULT_TOP, ExportError, ExportOptions, split};
use crate::capture::short_module;
use crate::metric::{self, Metric};
use crate::sanitize::display;

/// Writes the flat profile's top rows ([`ExportOptions::top`], else [`DEFAULT_TOP`]) as a
/// text table. The table is short, so it is built whole and written at once.
pub fn write(
    slice: &Slice,
    options: &ExportOptions,
    out: &mut dyn Write,
) -> Result<(), ExportError> {
    out.write_all(table(slice, options.top.unwrap_or(DEFAULT_TOP)).as_bytes())?;
    Ok(())
}

fn table(slice: &Slice, top: usize) -> String {
    let capture = slice.capture;
    let rows = slice.flat();
    let total = slice.total.max(1) as f64;
    let mut o = String::new();
    // Under `cpu` the header is what it always was: counts are samples.
    let timed = slice.metric() != Metric::Cpu;
    let period = slice.period_ns();
    if timed {
        let _ = write!(
            o,
            "{}: {} time, {} periods of {} = {:.3} s",
            slice.file_name(),
            slice.metric().label(),
            slice.total,
            period_text(period),
            metric::secs(slice.total, period)
        );
    } else {
        let _ = write!(o, "{}: {} samples", slice.file_name(), slice.total);
    }
    if slice.total != slice.extent.capture_total {
        let _ = write!(o, " of {}", slice.extent.capture_total);
    }
    if timed {
        let t = split::total(slice);
        let _ = write!(o, " (");
        if slice.metric() == Metric::Wall {
            let _ = write!(o, "CPU {}, ", t.cpu);
        }
        for (i, state) in ThreadState::ALL.into_iter().enumerate() {
            let sep = if i > 0 { ", " } else { "" };
            let _ = write!(o, "{sep}{} {}", state.letter(), t.state(state));
        }
        let _ = write!(o, ")");
    }
    let _ = write!(o, " over {:.3} s", slice.duration_s());
    if let Some(s) = &capture.session {
        let _ = write!(o, " at {} Hz", s.freq_hz);
    }
    if capture.lost > 0 {
        let _ = write!(o, ", {} lost", capture.lost);
    }
    if timed && capture.lost_off_cpu > 0 {
        let _ = write!(o, ", {} off-CPU records lost", capture.lost_off_cpu);
    }
    if slice.unknown_stacks > 0 {
        let _ = write!(o, ", {} with stacks lost to damage", slice.unknown_stacks);
    }
    o.push('\n');
    if !slice.selection.is_everything() {
        let _ = writeln!(o, "selection: {}", slice.selection.describe());
    }
    let shown: Vec<_> = rows.iter().take(top).collect();
    let modules: Vec<String> = shown.iter().map(|r| display(&r.key.module)).collect();
    let width = module_width(&modules);
    if timed {
        let _ = writeln!(
            o,
            "{:>7} {:>8} {:>10} {:>7} {:>10}  {:<width$}  function",
            "self%", "self", "self s", "total%", "total s", "module"
        );
    } else {
        let _ = writeln!(
            o,
            "{:>7} {:>8} {:>7}  {:<width$}  function",
            "self%", "self", "total%", "module"
        );
    }
    for (r, module) in shown.iter().zip(&modules) {
        let line = r
            .hottest
            .as_ref()
            .map(|(f, l)| format!("  ({}:{l})", display(&short_module(f))))
            .unwrap_or_default();
        let (self_pct, total_pct) = (
            100.0 * r.self_samples as f64 / total,
            100.0 * r.total_samples as f64 / total,
        );
        if timed {
            let _ = writeln!(
                o,
                "{self_pct:>6.2}% {:>8} {:>10.3} {total_pct:>6.2}% {:>10.3}  {:<width$}  {}{}",
                r.self_samples,
                metric::secs(r.self_samples, period),
                metric::secs(r.total_samples, period),
                module,
                display(&r.key.function),
                line
            );
        } else {
            let _ = writeln!(
                o,
                "{self_pct:>6.2}% {:>8} {total_pct:>6.2}%  {:<width$}  {}{}",
                r.self_samples,
                module,
                display(&r.key.function),
                line
            );
        }
    }
    if rows.len() > shown.len() {
        let _ = writeln!(
            o,
            "({} more functions; --top N shows more)",
            rows.len() - shown.len()
        );
    }
    o
}

/// A period for people: `2.004 ms`, `10 ms`, `500 µs`, `7 ns`.
pub(crate) fn period_text(ns: u64) -> String {
    let (div, unit) = match ns {
        0..1_000 => return format!("{ns} ns"),
        1_000..1_000_000 => (1e3, "µs"),
        1_000_000..1_000_000_000 => (1e6, "ms"),
        _ => (1e9, "s"),
    };
    let v = format!("{:.3}", ns as f64 / div);
    let v = v.trim_end_matches('0').trim_end_matches('.');
    format!("{v} {unit}")
}

/// Width of the module column of a text table: the longest shown name, within 6..=32.
pub(crate) fn module_width(modules: &[String]) -> usize {
    modules
        .iter()
        .map(|m| m.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(6, 32)
}
