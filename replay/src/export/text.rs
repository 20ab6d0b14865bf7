//! `hotspot report`'s text form: the flat profile (top functions by self samples) with a
//! header saying what was counted, for a terminal or a ticket comment.

use std::fmt::Write as _;
use std::io::Write;

use super::slice::Slice;
use super::{DEFAULT_TOP, ExportError, ExportOptions};
use crate::names::short_module;
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
    let scan = slice.scan;
    let rows = slice.flat();
    let total = slice.total.max(1) as f64;
    let mut o = String::new();
    let _ = write!(o, "{}: {} samples", slice.file_name(), slice.total);
    if slice.total != scan.samples {
        let _ = write!(o, " of {}", scan.samples);
    }
    let _ = write!(o, " over {:.3} s", slice.duration_s());
    if let Some(s) = &scan.capture.session {
        let _ = write!(o, " at {} Hz", s.freq_hz);
    }
    if scan.capture.lost > 0 {
        let _ = write!(o, ", {} lost", scan.capture.lost);
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
    let _ = writeln!(
        o,
        "{:>7} {:>8} {:>7}  {:<width$}  function",
        "self%", "self", "total%", "module"
    );
    for (r, module) in shown.iter().zip(&modules) {
        let line = r
            .hottest
            .as_ref()
            .map(|(f, l)| format!("  ({}:{l})", display(&short_module(f))))
            .unwrap_or_default();
        let _ = writeln!(
            o,
            "{:>6.2}% {:>8} {:>6.2}%  {:<width$}  {}{}",
            100.0 * r.self_samples as f64 / total,
            r.self_samples,
            100.0 * r.total_samples as f64 / total,
            module,
            display(&r.key.function),
            line
        );
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

/// Width of the module column of a text table: the longest shown name, within 6..=32.
pub(crate) fn module_width(modules: &[String]) -> usize {
    modules
        .iter()
        .map(|m| m.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(6, 32)
}
