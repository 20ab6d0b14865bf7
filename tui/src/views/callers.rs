//! The callers/callees view of one function: who calls it and what it calls, each with
//! the share of the function's samples that flows through that edge.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;

use hotspot_replay::sanitize::display;

use crate::state::State;
use crate::views::draw::{bar, pct, put, thousands};

/// A line of the view: a section label or a function row (index into callers+callees).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line {
    Label(&'static str),
    Row(usize),
}

/// The lines in order: callers label, callers, callees label, callees.
pub fn lines(state: &State) -> Vec<Line> {
    let n = &state.cache.neighbours;
    let mut out = vec![Line::Label("callers (who calls it)")];
    out.extend((0..n.callers.len()).map(Line::Row));
    out.push(Line::Label("callees (what it calls)"));
    out.extend((n.callers.len()..n.callers.len() + n.callees.len()).map(Line::Row));
    out
}

/// Index of the first line shown, so the cursor's row is visible in `height` lines.
pub fn first_line(state: &State, height: usize) -> usize {
    let lines = lines(state);
    let at = lines
        .iter()
        .position(|l| *l == Line::Row(state.callers.pos.cursor))
        .unwrap_or(0);
    at.saturating_sub(height.saturating_sub(1))
}

/// Column (from the area's left) where a row's function name starts: after the share,
/// the samples and the bar.
pub const NAME_X: u16 = 32;

pub fn render(state: &State, area: Rect, buf: &mut Buffer) {
    let pal = state.opts.palette;
    let Some(target) = &state.callers.target else {
        return;
    };
    let n = &state.cache.neighbours;
    let total = state.fold().map_or(0, |f| f.total);
    put(
        buf,
        area.x,
        area.y,
        area.width,
        &format!(
            "{}  [{}]",
            display(&target.function),
            display(&target.module)
        ),
        pal.title(),
    );
    put(
        buf,
        area.x,
        area.y + 1,
        area.width,
        &format!(
            "total {} ({} of all)  self {} ({})   shares are of this function's samples",
            thousands(n.total),
            pct(n.total, total),
            thousands(n.self_samples),
            pct(n.self_samples, total)
        ),
        pal.dim(),
    );
    let height = usize::from(area.height.saturating_sub(2));
    let first = first_line(state, height);
    for (i, line) in lines(state)
        .into_iter()
        .skip(first)
        .take(height)
        .enumerate()
    {
        let y = area.y + 2 + i as u16;
        match line {
            Line::Label(l) => {
                put(buf, area.x, y, area.width, l, pal.title());
            }
            Line::Row(r) => {
                let Some((key, samples)) = state.callers_row(r) else {
                    continue;
                };
                let style = if r == state.callers.pos.cursor {
                    pal.cursor()
                } else {
                    Style::new()
                };
                buf.set_style(Rect::new(area.x, y, area.width, 1), style);
                let frac = *samples as f64 / n.total.max(1) as f64;
                let x = put(
                    buf,
                    area.x,
                    y,
                    area.width,
                    &format!(
                        "  {:>7} {:>9} ",
                        pct(*samples, n.total),
                        thousands(*samples)
                    ),
                    style,
                );
                put(buf, x, y, 10, &bar(frac, 10), pal.heat(frac).patch(style));
                let (x, end) = (area.x + NAME_X, area.x + area.width);
                if x < end {
                    put(buf, x, y, end - x, &display(&key.function), style);
                }
            }
        }
    }
}
