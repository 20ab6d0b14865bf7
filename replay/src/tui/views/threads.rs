//! The thread list: per-thread sample counts in the selection, and which threads the
//! views include.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;

use crate::sanitize::display;

use crate::tui::state::State;
use crate::tui::views::draw::{bar, pct, put, thousands};

pub fn render(state: &State, area: Rect, buf: &mut Buffer) {
    let pal = state.opts.palette;
    let per_thread = state.fold().map(|f| f.per_thread.as_slice()).unwrap_or(&[]);
    let total: u64 = per_thread.iter().sum();
    let shown = state.data.threads.len()
        - state
            .data
            .threads
            .iter()
            .filter(|t| state.threads.excluded.contains(&t.tid))
            .count();
    put(
        buf,
        area.x,
        area.y,
        area.width,
        &format!(
            "Threads · {} of {} included · ⏎/click toggles, r includes all",
            shown,
            state.data.threads.len()
        ),
        pal.title(),
    );
    put(
        buf,
        area.x,
        area.y + 1,
        area.width,
        &format!(
            "{:<4}{:>8} {:>8}  {:<16} {:>9} {:>7}  {}",
            "", "tid", "pid", "name", "samples", "share", "in selection"
        ),
        pal.dim(),
    );
    let height = usize::from(area.height.saturating_sub(2));
    let top = state.threads.pos.offset;
    for (i, t) in state.data.threads.iter().enumerate().skip(top).take(height) {
        let y = area.y + 2 + (i - top) as u16;
        let style = if i == state.threads.pos.cursor {
            pal.cursor()
        } else {
            Style::new()
        };
        buf.set_style(Rect::new(area.x, y, area.width, 1), style);
        let n = per_thread.get(i).copied().unwrap_or(0);
        let mark = if state.threads.excluded.contains(&t.tid) {
            "[ ]"
        } else {
            "[x]"
        };
        let name: String = display(&t.name).chars().take(16).collect();
        let x = put(
            buf,
            area.x,
            y,
            area.width,
            &format!(
                "{mark} {:>8} {:>8}  {:<16} {:>9} {:>7}  ",
                t.tid,
                t.pid,
                name,
                thousands(n),
                pct(n, total)
            ),
            style,
        );
        let frac = n as f64 / total.max(1) as f64;
        let end = area.x + area.width;
        if x < end {
            put(
                buf,
                x,
                y,
                (end - x).min(20),
                &bar(frac, 20),
                pal.thread(i).patch(style),
            );
        }
    }
}
