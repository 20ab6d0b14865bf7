//! The thread list: per-thread sample counts in the selection, and which threads the
//! views include. A capture with off-CPU data gets per-thread on / S / D / R / wall
//! totals and a lane per thread: when over the capture it ran, and when it was blocked,
//! by state.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;

use hotspot_replay::sanitize::display;

use hotspot_format::ThreadState;

use crate::layout::lane_width;
use crate::state::State;
use crate::views::draw::{bar, pct, put, secs, thousands};

pub fn render(state: &State, area: Rect, buf: &mut Buffer) {
    let pal = state.opts.palette;
    let per_thread = state.fold().map(|f| f.per_thread.as_slice()).unwrap_or(&[]);
    let total: u64 = per_thread.iter().sum();
    let excluded = state.excluded();
    let shown = state.data.threads.len()
        - state
            .data
            .threads
            .iter()
            .filter(|t| excluded.contains(&t.tid))
            .count();
    let rows = state.thread_rows();
    let hidden = state.data.threads.len() - rows.len();
    let mut title = format!(
        "Threads · {} of {} included · ⏎/click toggles, r includes all",
        shown,
        state.data.threads.len()
    );
    if hidden > 0 {
        title.push_str(&format!(" · {hidden} idle hidden (i shows)"));
    }
    put(buf, area.x, area.y, area.width, &title, pal.title());
    if state.data.has_off_cpu() {
        return render_times(state, area, buf, (&rows, &excluded), per_thread, total);
    }
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
    for (row, &i) in rows.iter().enumerate().skip(top).take(height) {
        let t = &state.data.threads[i];
        let y = area.y + 2 + (row - top) as u16;
        let style = if row == state.threads.pos.cursor {
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

/// The rows of a capture with off-CPU data: times per state over the whole capture
/// (exact from the kernel's totals where the capture has them, `~` where they come from
/// samples), the share of the metric in the selection, and the lane.
fn render_times(
    state: &State,
    area: Rect,
    buf: &mut Buffer,
    (rows, excluded): (&[usize], &std::collections::BTreeSet<u32>),
    per_thread: &[u64],
    total: u64,
) {
    let pal = state.opts.palette;
    let span = state.data.span().map_or(0, |(a, b)| b - a);
    put(
        buf,
        area.x,
        area.y + 1,
        area.width,
        &format!(
            "{:<4}{:>8} {:>8}  {:<16} {:>7} {:>7} {:>7} {:>7} {:>7}  {:>7}  {}",
            "",
            "tid",
            "pid",
            "name",
            "on",
            "S",
            "D",
            "R",
            "wall",
            state.metric.name(),
            "on a CPU █, off it S D R, over the capture"
        ),
        pal.dim(),
    );
    let lanes = &state.cache.lanes;
    let width = usize::from(lane_width(area.width));
    let column_ns = lanes.column_ns(width);
    let height = usize::from(area.height.saturating_sub(2));
    let top = state.threads.pos.offset;
    for (row, &i) in rows.iter().enumerate().skip(top).take(height) {
        let t = &state.data.threads[i];
        let y = area.y + 2 + (row - top) as u16;
        let style = if row == state.threads.pos.cursor {
            pal.cursor()
        } else {
            Style::new()
        };
        buf.set_style(Rect::new(area.x, y, area.width, 1), style);
        let n = per_thread.get(i).copied().unwrap_or(0);
        let mark = if excluded.contains(&t.tid) {
            "[ ]"
        } else {
            "[x]"
        };
        let name: String = display(&t.name).chars().take(16).collect();
        let times = state.data.thread_totals(i);
        let s = |ns: u64| secs(ns, span);
        let x = put(
            buf,
            area.x,
            y,
            area.width,
            &format!(
                "{mark} {:>8} {:>8}  {:<16} {:>7} {:>7} {:>7} {:>7} {:>7}{} {:>7}  ",
                t.tid,
                t.pid,
                name,
                s(times.on_cpu_ns),
                s(times.off_cpu_ns[0]),
                s(times.off_cpu_ns[1]),
                s(times.off_cpu_ns[2]),
                s(times.wall_ns()),
                if times.exact { " " } else { "~" },
                pct(n, total)
            ),
            style,
        );
        let Some(lane) = lanes.rows.get(i) else {
            continue;
        };
        for (c, col) in lane.iter().enumerate().take(width) {
            let (glyph, fg) = lane_cell(col, column_ns);
            let fg = match fg {
                None => pal.thread(i),
                Some(st) => pal.state(st),
            };
            put(buf, x + c as u16, y, 1, glyph, fg.patch(style));
        }
    }
}

/// A lane column drawn: CPU time as a block shaded by how much of the column it fills,
/// blocked time as its state's letter, whichever took more of the column.
fn lane_cell(col: &[u64; 4], column_ns: u64) -> (&'static str, Option<ThreadState>) {
    let sum: u64 = col.iter().sum();
    if sum == 0 {
        return (" ", None);
    }
    let (k, _) = col
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0)))
        .unwrap_or((0, &0));
    if k == 0 {
        let shade = match col[0].saturating_mul(4) / column_ns.max(1) {
            0 => "░",
            1 => "▒",
            2 => "▓",
            _ => "█",
        };
        return (shade, None);
    }
    let st = ThreadState::ALL[k - 1];
    let letter = match st {
        ThreadState::Sleeping => "S",
        ThreadState::Uninterruptible => "D",
        ThreadState::Runnable => "R",
    };
    (letter, Some(st))
}
