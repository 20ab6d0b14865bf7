//! What frames every view: the header (target, mode, counts, warnings, tabs, filters), the
//! footer (what the last key did, then key hints) and the `?` help, all from the capture
//! and the key table.

use std::time::{Duration, Instant};

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Block, Borders, Clear, Widget};

use hotspot_replay::info::utc;
use hotspot_replay::sanitize::display;

use crate::keymap::{self, Scope};
use crate::state::{Mode, Sort, State, View};
use crate::views::draw::{put, secs, thousands};

/// How long a notice stays up.
pub const NOTICE_FOR: Duration = Duration::from_secs(4);

/// `name (pid N)` of what was recorded.
pub fn target(state: &State) -> String {
    let c = &state.data.capture;
    let Some(s) = &c.session else {
        // A file that is not (yet) a capture may still be being written, so the view
        // waits; it says so, since a file that never grows would otherwise look stuck.
        return match state.opts.mode {
            Mode::Replay if state.no_header => {
                "no capture header yet: waiting for the file to be written (q quits)".into()
            }
            _ => "waiting for the capture…".into(),
        };
    };
    if s.all_processes {
        return "all processes".into();
    }
    let mut parts: Vec<String> = s
        .targets
        .iter()
        .take(2)
        .map(|pid| match c.processes.get(pid) {
            Some(p) => format!("{} (pid {pid})", display(&p.name)),
            None => format!("pid {pid}"),
        })
        .collect();
    if s.targets.len() > 2 {
        parts.push(format!("+{} more", s.targets.len() - 2));
    }
    parts.join(", ")
}

/// `live at N Hz` or `replay of FILE recorded on HOST at TIME`, then in diff mode the
/// base it is compared with.
pub fn mode(state: &State) -> String {
    let own = own_mode(state);
    match &state.diff {
        Some(c) => {
            let file = c
                .base
                .capture
                .path
                .file_name()
                .map(|f| display(&f.to_string_lossy()))
                .unwrap_or_default();
            format!("diff against base {file} │ {own}")
        }
        None => own,
    }
}

fn own_mode(state: &State) -> String {
    let c = &state.data.capture;
    let freq = c.session.as_ref().map_or(0, |s| s.freq_hz);
    match state.opts.mode {
        Mode::Live if state.finished => format!("live at {freq} Hz, recording ended"),
        Mode::Live => format!("live at {freq} Hz"),
        Mode::Replay => {
            let file = c
                .path
                .file_name()
                .map(|f| display(&f.to_string_lossy()))
                .unwrap_or_default();
            match &c.session {
                Some(s) => format!(
                    "replay of {file} recorded on {} at {}",
                    display(&s.host),
                    utc(s.start_wall_ns)
                ),
                None => format!("replay of {file}"),
            }
        }
    }
}

/// Warnings about the capture itself.
pub fn notices(state: &State) -> Vec<String> {
    let c = &state.data.capture;
    let mut out = Vec::new();
    if c.truncated.is_some() {
        out.push("capture truncated".to_string());
    }
    if !c.corrupt.is_empty() {
        out.push(format!("{} damaged regions skipped", c.corrupt.len()));
    }
    if !state.finished && state.opts.mode == Mode::Replay && c.session.is_some() {
        out.push("no end marker: cut, or still being written".to_string());
    }
    let unnamed = state.data.unnamed_frames();
    if unnamed > 0 {
        if state.finished {
            out.push(format!("{unnamed} frames without symbols"));
        } else {
            out.push(format!("symbols pending for {unnamed} frames"));
        }
    }
    if state.frozen.is_some() {
        out.push("FROZEN (space resumes)".to_string());
    }
    out
}

/// Tab labels and their columns on the second header line (for clicks).
pub fn tabs(area: Rect) -> Vec<(View, u16, u16)> {
    let mut x = area.x + 1;
    View::TABS
        .iter()
        .map(|&v| {
            let w = v.title().chars().count() as u16 + 2;
            let r = (v, x, w);
            x += w + 1;
            r
        })
        .collect()
}

pub fn header(state: &State, area: Rect, buf: &mut Buffer) {
    let pal = state.opts.palette;
    if area.height == 0 {
        return;
    }
    let samples = state.data.samples();
    let lost = state.data.capture.lost;
    let mut x = put(
        buf,
        area.x,
        area.y,
        area.width,
        " hotspot ",
        pal.title().add_modifier(Modifier::REVERSED),
    );
    let end = area.x + area.width;
    let off_cpu = if state.data.has_off_cpu() {
        format!(" + {} off-CPU", thousands(state.data.off_cpu_samples()))
    } else {
        String::new()
    };
    let line = format!(
        " {} │ {} │ {} samples{off_cpu} │ {} lost",
        target(state),
        mode(state),
        thousands(samples),
        thousands(lost)
    );
    x = put(buf, x, area.y, end.saturating_sub(x), &line, pal.title());
    let warn: Vec<String> = notices(state);
    if !warn.is_empty() && x + 3 < end {
        put(
            buf,
            x,
            area.y,
            end - x,
            &format!(" │ {}", warn.join(" · ")),
            pal.warn(),
        );
    }
    if area.height < 2 {
        return;
    }
    let y = area.y + 1;
    let active = match state.view {
        View::Callers => View::Flat,
        v => v,
    };
    let mut last = area.x;
    for (v, tx, w) in tabs(area) {
        let style = if v == active {
            pal.title().add_modifier(Modifier::REVERSED)
        } else {
            pal.dim()
        };
        last = put(
            buf,
            tx,
            y,
            w.min(end.saturating_sub(tx)),
            &format!(" {} ", v.title()),
            style,
        );
    }
    let (a, b) = state.span().unwrap_or((0, 0));
    let (from, to) = state.selected().unwrap_or((a, b));
    let span = b - a;
    let excluded = state.excluded();
    let included = state.data.threads.len()
        - state
            .data
            .threads
            .iter()
            .filter(|t| excluded.contains(&t.tid))
            .count();
    let sort = match state.flat.sort {
        Sort::SelfTime => "self",
        Sort::Total => "total",
        Sort::Name => "name",
    };
    // The interpreter's frames are named only where the capture has Python frames.
    let interpreter = if !state.data.has_python() {
        ""
    } else if state.no_interpreter {
        " · interpreter hidden"
    } else {
        " · interpreter shown"
    };
    let mut info = format!(
        "  selection {} – {} of {} · threads {included}/{} · kernel {}{interpreter} · sort {sort}",
        state.label_at(from, span),
        state.label_at(to, span),
        secs(span, span),
        state.data.threads.len(),
        if state.no_kernel { "hidden" } else { "shown" },
    );
    if state.data.has_off_cpu() {
        info.push_str(&format!(" · metric {}", state.metric.label()));
    }
    if !state.flat.filter.is_empty() {
        info.push_str(&format!(" · filter /{}", display(&state.flat.filter)));
    }
    put(buf, last, y, end.saturating_sub(last), &info, pal.dim());
}

/// The scopes whose keys apply now.
pub fn scopes(state: &State) -> Vec<Scope> {
    if state.filtering {
        return vec![Scope::Filter];
    }
    let mut s = Vec::new();
    if state.view == View::Flame {
        s.push(Scope::Flame);
    }
    s.extend([Scope::Nav, Scope::Views]);
    if state.data.has_python() {
        s.push(Scope::Python);
    }
    if state.diff.is_some() {
        s.push(Scope::Diff);
    }
    s
}

/// The notice set by the last key, while it is fresh.
pub fn fresh_notice(state: &State, now: Instant) -> Option<&str> {
    let (text, at) = state.notice.as_ref()?;
    (now.saturating_duration_since(*at) < NOTICE_FOR).then_some(text.as_str())
}

/// The footer: what the last key did (a fresh notice: the header's first line is often
/// cut by a long target and mode before a notice would show), then the key hints.
pub fn footer(state: &State, area: Rect, buf: &mut Buffer, now: Instant) {
    let pal = state.opts.palette;
    if area.height == 0 {
        return;
    }
    let mut x = area.x;
    let end = area.x + area.width;
    if let Some(text) = fresh_notice(state, now) {
        x = put(
            buf,
            x,
            area.y,
            area.width,
            &format!(" {} ", display(text)),
            pal.warn(),
        );
    }
    if state.filtering {
        x = put(buf, x, area.y, area.width, " type to filter ", pal.warn());
    }
    for (key, word) in keymap::hints(&scopes(state)) {
        if x + 2 >= end {
            break;
        }
        x = put(buf, x + 1, area.y, end - x - 1, &key, pal.title());
        x = put(
            buf,
            x + 1,
            area.y,
            end.saturating_sub(x + 1),
            word,
            pal.dim(),
        );
    }
}

/// The `?` overlay: every key of the current screen, from the table.
pub fn help(state: &State, area: Rect, buf: &mut Buffer) {
    let mut scopes = vec![Scope::Nav, Scope::Views, Scope::Flame];
    if state.data.has_python() {
        scopes.insert(2, Scope::Python);
    }
    if state.diff.is_some() {
        scopes.push(Scope::Diff);
    }
    if state.filtering {
        scopes.insert(0, Scope::Filter);
    }
    let lines = keymap::help(&scopes);
    let h = (lines.len() as u16 + 5).min(area.height);
    let w = 64.min(area.width);
    let r = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    );
    Clear.render(r, buf);
    Block::default()
        .borders(Borders::ALL)
        .title(" keys (any key closes) ")
        .render(r, buf);
    let pal = state.opts.palette;
    for (i, (keys, what)) in lines.iter().enumerate() {
        let y = r.y + 1 + i as u16;
        if y + 3 >= r.y + r.height {
            break;
        }
        put(buf, r.x + 2, y, 18, keys, pal.title());
        put(
            buf,
            r.x + 20,
            y,
            r.width.saturating_sub(22),
            what,
            Style::new(),
        );
    }
    const MOUSE: [&str; 2] = [
        "mouse: click selects, click again opens, wheel scrolls,",
        "right-click goes back, drag on the timeline selects",
    ];
    for (i, line) in MOUSE.iter().enumerate() {
        let y = (r.y + r.height).saturating_sub(3) + i as u16;
        put(buf, r.x + 2, y, r.width.saturating_sub(4), line, pal.dim());
    }
}
