//! The flat view: one row per function, hottest first, with a heat bar, the object it
//! lives in (a coloured dot keyed by the legend) and its hottest source line.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use hotspot_replay::capture::short_module;
use hotspot_replay::metric;
use hotspot_replay::model::aggregate::FlatRow;
use hotspot_replay::sanitize::display;

use crate::palette::Palette;
use crate::state::{Sort, State};
use crate::views::draw::{bar, pct, put, thousands};

/// Column where the function name starts (links are drawn over it).
pub const NAME_X: u16 = 40;
const HEAT_W: usize = 10;

/// Objects in legend order (hottest first), kernel last: (name, kernel).
pub fn legend(rows: &[FlatRow]) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = Vec::new();
    for r in rows {
        if !out.iter().any(|(m, _)| **m == *r.key.module) {
            out.push((r.key.module.to_string(), r.key.kind.is_kernel()));
        }
    }
    out.sort_by_key(|(_, k)| *k);
    out
}

/// Colour of an object: its place in the legend among non-kernel objects.
pub fn module_style(
    pal: &Palette,
    legend: &[(String, bool)],
    module: &str,
    kernel: bool,
) -> ratatui::style::Style {
    let n = legend
        .iter()
        .filter(|(_, k)| !k)
        .position(|(m, _)| m == module)
        .unwrap_or(0);
    pal.module(n, kernel)
}

/// A fold's total as titles say it: samples for a capture without off-CPU data (as
/// ever), else periods of the metric and the time they stand for.
pub fn weight(state: &State, total: u64) -> String {
    if !state.data.has_off_cpu() {
        return format!("{} samples", thousands(total));
    }
    let ns = metric::ns(total, state.data.capture.period_ns(state.metric));
    format!(
        "{} periods of {} time ({})",
        thousands(total),
        state.metric.label(),
        crate::views::draw::secs(ns, ns)
    )
}

/// `name  file:line` for a row.
pub fn name_text(r: &FlatRow) -> (String, String) {
    let line = r
        .hottest
        .as_ref()
        .map(|(f, l)| format!("{}:{l}", display(&short_module(f))))
        .unwrap_or_default();
    (display(&r.key.function), line)
}

pub fn render(state: &State, area: Rect, buf: &mut Buffer) {
    let pal = state.opts.palette;
    let Some(fold) = state.fold() else { return };
    let total = fold.total;
    let legend = legend(&fold.flat);
    // Title: counts and the object legend.
    let mut x = put(
        buf,
        area.x,
        area.y,
        area.width,
        &format!(
            "Flat · {} functions · {} · objects:",
            thousands(state.flat.rows.len() as u64),
            weight(state, total)
        ),
        pal.title(),
    );
    for (m, k) in &legend {
        let end = area.x + area.width;
        if x + 3 >= end {
            break;
        }
        x = put(
            buf,
            x + 1,
            area.y,
            end - x - 1,
            "●",
            module_style(&pal, &legend, m, *k),
        );
        x = put(
            buf,
            x + 1,
            area.y,
            end.saturating_sub(x + 1),
            &display(m),
            pal.dim(),
        );
    }
    if !state.flat.filter.is_empty() || state.filtering {
        let cursor = if state.filtering { "▏" } else { "" };
        let text = format!(" /{}{cursor}", display(&state.flat.filter));
        let w = text.chars().count() as u16;
        let fx = (area.x + area.width).saturating_sub(w);
        put(buf, fx.max(x), area.y, w, &text, pal.warn());
    }
    let arrow = |s: Sort| if state.flat.sort == s { "▼" } else { " " };
    put(
        buf,
        area.x,
        area.y + 1,
        area.width,
        &format!(
            "{:>7}{} {:<w$} {:>9} {:>7}{}   {}function  (hottest line)",
            "self%",
            arrow(Sort::SelfTime),
            "heat",
            "self",
            "total%",
            arrow(Sort::Total),
            if state.flat.sort == Sort::Name {
                "▼"
            } else {
                ""
            },
            w = HEAT_W
        ),
        pal.dim(),
    );
    let rows = state.flat_rows();
    let height = usize::from(area.height.saturating_sub(2));
    let top = state.flat.pos.offset;
    for (i, r) in rows.iter().enumerate().skip(top).take(height) {
        let y = area.y + 2 + (i - top) as u16;
        let frac = r.self_samples as f64 / total.max(1) as f64;
        let row_style = if i == state.flat.pos.cursor {
            pal.cursor()
        } else {
            ratatui::style::Style::new()
        };
        buf.set_style(Rect::new(area.x, y, area.width, 1), row_style);
        let mut x = put(
            buf,
            area.x,
            y,
            8,
            &format!("{:>7} ", pct(r.self_samples, total)),
            row_style,
        );
        x = put(
            buf,
            x,
            y,
            HEAT_W as u16,
            &bar(frac, HEAT_W),
            pal.heat(frac).patch(row_style),
        );
        x = put(
            buf,
            x,
            y,
            21,
            &format!(
                " {:>9} {:>7}  ",
                thousands(r.self_samples),
                pct(r.total_samples, total)
            ),
            row_style,
        );
        let _ = x;
        let dot_x = area.x + NAME_X - 2;
        put(
            buf,
            dot_x,
            y,
            1,
            "●",
            module_style(&pal, &legend, &r.key.module, r.key.kind.is_kernel()).patch(row_style),
        );
        let (name, line) = name_text(r);
        let end = area.x + area.width;
        let nx = area.x + NAME_X;
        if nx >= end {
            continue;
        }
        let after = put(buf, nx, y, end - nx, &name, row_style);
        if after + 2 < end && !line.is_empty() {
            put(
                buf,
                after + 2,
                y,
                end - after - 2,
                &line,
                pal.dim().patch(row_style),
            );
        }
    }
    if rows.is_empty() {
        let msg = if state.flat.filter.is_empty() {
            "no samples in the selection"
        } else {
            "no function matches the filter"
        };
        put(
            buf,
            area.x + 2,
            area.y + 2,
            area.width.saturating_sub(2),
            msg,
            pal.dim(),
        );
    }
}
