//! The time strip under every view: samples per time bucket over the whole capture
//! (idle time is a gap), coloured by the dominant function or thread, with the time
//! selection that every view follows, and the capture's marks (`hotspot mark`), each a `▼`
//! on the top row of bars with its text after it.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;

use crate::model::Timeline;
use crate::state::State;
use crate::views::draw::{put, secs};

/// Column of the timeline for a time, and back.
pub fn render(state: &State, area: Rect, buf: &mut Buffer) {
    if area.height == 0 {
        return;
    }
    if state.diff.is_some() {
        return crate::views::diff::timelines(state, area, buf);
    }
    let pal = state.opts.palette;
    let t = &state.cache.timeline;
    let Some((start, end)) = state.span() else {
        put(
            buf,
            area.x,
            area.y,
            area.width,
            "timeline: no samples yet",
            pal.dim(),
        );
        return;
    };
    let span = end - start;
    let (from, to) = state.selected().unwrap_or((start, end));
    let (c0, c1) = (t.column(from), t.column(to));
    // Label line: the selection and how it is chosen.
    let how = if let Some(n) = state.follow {
        format!("following the last {}", secs(n, n))
    } else if state.selection.is_none() {
        "all".to_string()
    } else {
        format!("{} long", secs(to - from, span))
    };
    let frozen = if state.frozen.is_some() {
        " · FROZEN"
    } else {
        ""
    };
    let colour = if state.timeline_by_thread {
        "by thread"
    } else {
        "by function"
    };
    let label = format!(
        "timeline {} · selection {} – {} ({how}){frozen} · colour {colour} · [ ] move  - + resize  a all",
        secs(span, span),
        state.label_at(from, span),
        state.label_at(to, span),
    );
    put(buf, area.x, area.y, area.width, &label, pal.dim());
    let bars = Rect::new(area.x, area.y + 1, area.width, area.height - 1);
    strip(state, t, (c0, c1), bars, buf);
    marks(state, t, &state.data.capture.marks, bars, (start, end), buf);
}

/// Draws a timeline's bars into `bars`, columns `c0..=c1` as selected.
pub(crate) fn strip(
    state: &State,
    t: &Timeline,
    (c0, c1): (usize, usize),
    bars: Rect,
    buf: &mut Buffer,
) {
    let pal = state.opts.palette;
    if bars.height == 0 {
        return;
    }
    let max = t
        .buckets
        .iter()
        .map(|b| b.samples)
        .max()
        .unwrap_or(0)
        .max(1);
    let levels = u32::from(bars.height) * 8;
    const EIGHTHS: [&str; 9] = [" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"];
    for (c, b) in t.buckets.iter().enumerate().take(usize::from(bars.width)) {
        let x = bars.x + c as u16;
        let selected = c >= c0 && c <= c1;
        let base = if selected {
            pal.selected()
        } else {
            Style::new()
        };
        let fg = if state.timeline_by_thread {
            b.thread.map(|i| pal.thread(i as usize))
        } else {
            b.function
                .and_then(|i| t.functions.get(i as usize))
                .map(|k| Style::new().fg(pal.frame_color(k.kind, &k.function)))
        }
        .unwrap_or_default();
        // Any sample shows at least one eighth: idle is blank, not a sliver.
        let h = if b.samples == 0 {
            0
        } else {
            (b.samples * u64::from(levels)).div_ceil(max) as u32
        };
        for row in 0..bars.height {
            let y = bars.y + bars.height - 1 - row;
            let fill = h.saturating_sub(u32::from(row) * 8).min(8) as usize;
            let style = if pal.mode == crate::palette::ColorMode::None {
                base
            } else {
                base.patch(fg)
            };
            put(buf, x, y, 1, EIGHTHS[fill], style);
        }
    }
}

/// The marks of timeline `t`'s capture inside its drawn span, left to right: `▼` at the
/// mark's column and its text after it, cut where the next mark starts.
pub(crate) fn marks(
    state: &State,
    t: &crate::model::Timeline,
    marks: &[hotspot_format::Mark],
    bars: Rect,
    (start, end): (u64, u64),
    buf: &mut Buffer,
) {
    let mut shown: Vec<(u16, &str)> = marks
        .iter()
        .filter(|m| (start..=end).contains(&m.time_ns))
        .map(|m| (t.column(m.time_ns) as u16, m.text.as_str()))
        .filter(|&(c, _)| c < bars.width)
        .collect();
    shown.sort_by_key(|&(c, _)| c);
    let style = state.opts.palette.warn();
    for (i, &(c, text)) in shown.iter().enumerate() {
        let next = shown.get(i + 1).map_or(bars.width, |&(n, _)| n);
        let room = next.saturating_sub(c);
        let label = format!("▼{}", hotspot_replay::sanitize::display(text));
        put(buf, bars.x + c, bars.y, room, &label, style);
    }
}
