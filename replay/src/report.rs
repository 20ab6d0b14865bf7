//! Headless reports: the flat profile as text, and folded stacks.

use std::fmt::Write;

use crate::capture::Capture;
use crate::flat::flat;
use crate::profile::{Filter, fold, folded_text};
use crate::sanitize::display;

/// The flat profile's top `top` rows as a text table.
pub fn text(c: &Capture, filter: &Filter, top: usize) -> String {
    let folded = fold(c, filter);
    let rows = flat(&folded);
    let total = folded.total.max(1) as f64;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} samples{}",
        folded.total,
        if folded.unknown_stacks > 0 {
            format!(" ({} with stacks lost to damage)", folded.unknown_stacks)
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        o,
        "{:>7} {:>8} {:>7}  {:<20} {}",
        "self%", "self", "total%", "module", "function"
    );
    for r in rows.iter().take(top) {
        let line = r
            .hottest
            .as_ref()
            .map(|(f, l)| {
                format!(
                    "  ({}:{l})",
                    display(crate::names::short_module(f).as_str())
                )
            })
            .unwrap_or_default();
        let _ = writeln!(
            o,
            "{:>6.2}% {:>8} {:>6.2}%  {:<20} {}{}",
            100.0 * r.self_samples as f64 / total,
            r.self_samples,
            100.0 * r.total_samples as f64 / total,
            display(&r.key.module),
            display(&r.key.function),
            line
        );
    }
    o
}

/// Folded stacks (`a;b;c N`).
pub fn folded(c: &Capture, filter: &Filter) -> String {
    folded_text(&fold(c, filter))
}
