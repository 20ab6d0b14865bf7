//! The views in diff mode ([`crate::diff`]): the flat rows of the diff's changes (self and
//! total in both captures and the change, on the diff's scale, noise dimmed and the rest
//! marked `*` as `hotspot diff` marks it), callers/callees in both captures, the flame
//! graph's colours by change with a legend, wall time per thread name, and a timeline
//! per capture, each with its own selection.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};

use hotspot_replay::export::diff::{Change, Diff, Scale};
use hotspot_replay::sanitize::display;

use crate::diff::flame::{self, Change as Frame};
use crate::diff::{Compare, Side};
use crate::palette::{ColorMode, Palette};
use crate::state::State;
use crate::views::draw::{put, secs, thousands};
use crate::views::timeline::{marks, strip};

/// Style of a change beyond noise: red where it grew (slower), blue where it shrank.
fn grew(pal: &Palette, up: bool) -> Style {
    match pal.mode {
        ColorMode::None => Style::new().add_modifier(Modifier::BOLD),
        _ if up => Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
        _ => Style::new().fg(Color::Blue).add_modifier(Modifier::BOLD),
    }
}

/// A flame frame's background by its change.
fn frame_style(pal: &Palette, change: Frame) -> Option<Style> {
    let bg = match (change, pal.mode) {
        (_, ColorMode::None) => return None,
        (Frame::Slower, ColorMode::True) => Color::Rgb(230, 80, 70),
        (Frame::Slower, _) => Color::Red,
        (Frame::Faster, ColorMode::True) => Color::Rgb(80, 130, 230),
        (Frame::Faster, _) => Color::Blue,
        (Frame::New, ColorMode::True) => Color::Rgb(200, 90, 210),
        (Frame::New, _) => Color::Magenta,
        (Frame::Same | Frame::Root, ColorMode::True) => Color::Rgb(190, 190, 190),
        (Frame::Same | Frame::Root, _) => Color::Gray,
    };
    Some(Style::new().bg(bg).fg(Color::Black))
}

/// The style and label glyph of flame node `node` in diff mode (`None` outside it).
pub fn flame_frame(state: &State, node: usize) -> Option<(Option<Style>, &'static str)> {
    let c = state.diff.as_ref()?;
    let change = c.flame.nodes.get(node).map_or(Frame::Same, |n| n.0);
    Some((frame_style(&state.opts.palette, change), change.glyph()))
}

/// The legend on the flame view's title line, right-aligned after column `after` (the
/// breadcrumb's end).
pub fn flame_legend(state: &State, area: Rect, after: u16, buf: &mut Buffer) {
    let Some(c) = &state.diff else { return };
    let pal = state.opts.palette;
    let scale = match c.options.scale {
        Scale::Share => "self share",
        Scale::Rate => "self time/s",
    };
    let parts: [(Frame, &str); 4] = [
        (Frame::Slower, "▲ slower"),
        (Frame::Faster, "▼ faster"),
        (Frame::New, "+ new"),
        (Frame::Same, "noise"),
    ];
    let gone = format!(
        " · gone: {} frames only in the base (no width) · width: new, colour: {scale}",
        c.flame.gone
    );
    let width: u16 = parts
        .iter()
        .map(|(_, t)| t.chars().count() as u16 + 1)
        .sum::<u16>()
        + gone.chars().count() as u16;
    let end = area.x + area.width;
    let mut x = end.saturating_sub(width).max(after + 2);
    for (f, text) in parts {
        let style = frame_style(&pal, f).unwrap_or_default();
        x = put(buf, x, area.y, end.saturating_sub(x), text, style);
        x = put(buf, x, area.y, end.saturating_sub(x), " ", Style::new());
    }
    put(buf, x, area.y, end.saturating_sub(x), &gone, pal.dim());
}

/// The flame view's numbers line for node `shown` in diff mode: inclusive and self in
/// both captures (the base's through the matched path) and the change.
pub fn flame_details(state: &State, shown: usize, area: Rect, y: u16, buf: &mut Buffer) {
    let (Some(c), Some(f)) = (&state.diff, state.fold()) else {
        return;
    };
    let Some(d) = &c.diff else { return };
    let n = &f.tree.nodes[shown];
    let nt = f.tree.nodes[0].total;
    let bt = c.tree.nodes.first().map_or(0, |r| r.total);
    let (bi, bs) = c
        .flame
        .nodes
        .get(shown)
        .and_then(|x| x.1)
        .and_then(|b| c.tree.nodes.get(b))
        .map_or((0, 0), |b| (b.total, b.self_samples));
    let unit = match d.scale {
        Scale::Share => "pt",
        Scale::Rate => " ms/s",
    };
    let change = c.flame.nodes.get(shown).map_or("", |x| match x.0 {
        Frame::Slower => "slower",
        Frame::Faster => "faster",
        Frame::New => "new path",
        Frame::Same => "noise",
        Frame::Root => "",
    });
    let pct = |n: u64, of: u64| format!("{:.2}%", 100.0 * n as f64 / of.max(1) as f64);
    put(
        buf,
        area.x,
        y,
        area.width,
        &format!(
            "inclusive base {} → new {} ({:+.2}{unit})  self base {} → new {} ({:+.2}{unit})  {change}",
            pct(bi, bt),
            pct(n.total, nt),
            flame::delta(d, bi, bt, n.total, nt),
            pct(bs, bt),
            pct(n.self_samples, nt),
            flame::delta(d, bs, bt, n.self_samples, nt),
        ),
        state.opts.palette.dim(),
    );
}

/// `+12.3%`, `new` or `-`: a rate's growth in % of the base.
fn growth(base: f64, new: f64) -> String {
    match Change::rate_growth(base, new) {
        Some(g) => format!("{g:+.1}%"),
        None if new > 0.0 => "new".into(),
        None => "-".into(),
    }
}

/// The title line every diff view shares: both captures' weights and what the marks mean.
fn title(d: &Diff) -> String {
    let scale = match d.scale {
        Scale::Share => "Δ in share points",
        Scale::Rate => "Δ in % of the base's ms/s",
    };
    format!(
        "base {} ({}) → new {} ({}) · {scale} · * beyond noise (Holm, α {})",
        display(&d.base_file),
        thousands(d.base_samples),
        display(&d.new_file),
        thousands(d.new_samples),
        d.alpha
    )
}

/// The flat view of the diff's changes.
pub fn flat(state: &State, area: Rect, buf: &mut Buffer) {
    let pal = state.opts.palette;
    let Some(d) = state.diff.as_ref().and_then(|c| c.diff.as_ref()) else {
        return;
    };
    let mut x = put(
        buf,
        area.x,
        area.y,
        area.width,
        &format!(
            "Flat diff · {} functions · ",
            thousands(d.changes.len() as u64)
        ),
        pal.title(),
    );
    x = put(
        buf,
        x,
        area.y,
        (area.x + area.width).saturating_sub(x),
        &title(d),
        pal.dim(),
    );
    if !state.flat.filter.is_empty() || state.filtering {
        let cursor = if state.filtering { "▏" } else { "" };
        let text = format!(" /{}{cursor}", display(&state.flat.filter));
        let w = text.chars().count() as u16;
        let fx = (area.x + area.width).saturating_sub(w);
        put(buf, fx.max(x), area.y, w, &text, pal.warn());
    }
    let head = match d.scale {
        Scale::Share => format!(
            "{:>8} {:>7} {:>7} {:>8} {:>7} {:>7}  {:<4}  function",
            "Δself", "base", "new", "Δtotal", "base", "new", ""
        ),
        Scale::Rate => format!(
            "{:>8} {:>7} {:>7} {:>8} {:>7} {:>7}  {:<4}  function (ms/s)",
            "Δself", "base", "new", "Δtotal", "base", "new", ""
        ),
    };
    put(buf, area.x, area.y + 1, area.width, &head, pal.dim());
    let height = usize::from(area.height.saturating_sub(2));
    let top = state.flat.pos.offset;
    let share = |n: u64, of: u64| format!("{:.2}%", 100.0 * n as f64 / of.max(1) as f64);
    for (i, &row) in state.flat.rows.iter().enumerate().skip(top).take(height) {
        let Some(c) = d.changes.get(row) else {
            continue;
        };
        let y = area.y + 2 + (i - top) as u16;
        let marks = d.marks(c);
        let cursor = i == state.flat.pos.cursor;
        let base_style = if cursor {
            pal.cursor()
        } else if !marks[0] && !marks[1] {
            pal.dim()
        } else {
            Style::new()
        };
        buf.set_style(Rect::new(area.x, y, area.width, 1), base_style);
        let star = |on: bool| if on { "*" } else { " " };
        let (cells, deltas): ([String; 6], [f64; 2]) = match d.scale {
            Scale::Share => (
                [
                    format!("{:+.2}{}", round2(c.delta_self), star(marks[0])),
                    share(c.base_self, d.base_samples),
                    share(c.new_self, d.new_samples),
                    format!("{:+.2}{}", round2(c.delta_total), star(marks[1])),
                    share(c.base_total, d.base_samples),
                    share(c.new_total, d.new_samples),
                ],
                [c.delta_self, c.delta_total],
            ),
            Scale::Rate => (
                [
                    format!(
                        "{}{}",
                        growth(c.base_self_rate, c.new_self_rate),
                        star(marks[0])
                    ),
                    format!("{:.2}", c.base_self_rate),
                    format!("{:.2}", c.new_self_rate),
                    format!(
                        "{}{}",
                        growth(c.base_total_rate, c.new_total_rate),
                        star(marks[1])
                    ),
                    format!("{:.2}", c.base_total_rate),
                    format!("{:.2}", c.new_total_rate),
                ],
                [
                    c.new_self_rate - c.base_self_rate,
                    c.new_total_rate - c.base_total_rate,
                ],
            ),
        };
        let mut x = area.x;
        for (k, cell) in cells.iter().enumerate() {
            let delta = k % 3 == 0;
            let w = if delta { 8 } else { 7 };
            let mut style = base_style;
            if delta && marks[k / 3] && !cursor {
                style = style.patch(grew(&pal, deltas[k / 3] > 0.0));
            }
            put(
                buf,
                x,
                y,
                w,
                &format!("{cell:>w$}", w = usize::from(w)),
                style,
            );
            x += w + 1;
        }
        let tag = if c.is_new() {
            "new"
        } else if c.is_gone() {
            "gone"
        } else {
            ""
        };
        x = put(buf, x + 1, y, 4, &format!("{tag:<4}"), base_style);
        let end = area.x + area.width;
        if x + 2 < end {
            put(
                buf,
                x + 2,
                y,
                end - x - 2,
                &format!("{}  {}", display(&c.key.function), display(&c.key.module)),
                base_style,
            );
        }
    }
    if state.flat.rows.is_empty() {
        let msg = if state.flat.filter.is_empty() {
            "no samples in either selection"
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

fn round2(x: f64) -> f64 {
    let r = (x * 100.0).round() / 100.0;
    if r == 0.0 { 0.0 } else { r }
}

/// The callers/callees of one function in both captures: each edge's weight as a share of
/// each capture's selection, and the change.
pub fn callers(state: &State, area: Rect, buf: &mut Buffer) {
    let pal = state.opts.palette;
    let (Some(c), Some(target)) = (&state.diff, &state.callers.target) else {
        return;
    };
    let Some(d) = &c.diff else { return };
    let n = &state.cache.neighbours;
    let (bt, nt) = (d.base_samples, d.new_samples);
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
    let share = |x: u64, of: u64| 100.0 * x as f64 / of.max(1) as f64;
    let marks = c.change(target).map_or([false; 2], |ch| d.marks(ch));
    let star = |on: bool| if on { "*" } else { "" };
    put(
        buf,
        area.x,
        area.y + 1,
        area.width,
        &format!(
            "total base {:.2}% → new {:.2}% ({:+.2} pt{})  self {:.2}% → {:.2}% ({:+.2} pt{})   \
             edges in % of each capture's selection",
            share(c.target_total, bt),
            share(n.total, nt),
            share(n.total, nt) - share(c.target_total, bt),
            star(marks[1]),
            share(c.target_self, bt),
            share(n.self_samples, nt),
            share(n.self_samples, nt) - share(c.target_self, bt),
            star(marks[0]),
        ),
        pal.dim(),
    );
    let height = usize::from(area.height.saturating_sub(2));
    let first = crate::views::callers::first_line(state, height);
    for (i, line) in crate::views::callers::lines(state)
        .into_iter()
        .skip(first)
        .take(height)
        .enumerate()
    {
        let y = area.y + 2 + i as u16;
        match line {
            crate::views::callers::Line::Label(l) => {
                put(
                    buf,
                    area.x,
                    y,
                    area.width,
                    &format!("{l}        base     new       Δ"),
                    pal.title(),
                );
            }
            crate::views::callers::Line::Row(r) => {
                let Some((key, new)) = state.callers_row(r) else {
                    continue;
                };
                let base = c.neighbours.get(r).copied().unwrap_or(0);
                let style = if r == state.callers.pos.cursor {
                    pal.cursor()
                } else {
                    Style::new()
                };
                buf.set_style(Rect::new(area.x, y, area.width, 1), style);
                let (b, n) = (share(base, bt), share(*new, nt));
                let tag = match (base, *new) {
                    (0, _) => "new",
                    (_, 0) => "gone",
                    _ => "",
                };
                put(
                    buf,
                    area.x,
                    y,
                    area.width,
                    &format!(
                        "  {:>7.2}% {:>7.2}% {:>+7.2} {tag:<4}  {}",
                        b,
                        n,
                        n - b,
                        display(&key.function)
                    ),
                    style,
                );
            }
        }
    }
}

/// Wall time per thread name in both captures ([`hotspot_replay::export::diff::threads`]).
pub fn threads(state: &State, area: Rect, buf: &mut Buffer) {
    let pal = state.opts.palette;
    let Some(c) = &state.diff else { return };
    put(
        buf,
        area.x,
        area.y,
        area.width,
        "Threads diff · wall time per thread name, in s (kernel-measured over each whole \
         recording, not sampled)",
        pal.title(),
    );
    let Some(rows) = &c.threads else {
        let why = if !(c.base.has_off_cpu() && state.data.has_off_cpu()) {
            "compared when both captures were recorded with --off-cpu"
        } else {
            "compared under the off-CPU and wall metrics: m switches"
        };
        put(
            buf,
            area.x + 2,
            area.y + 2,
            area.width.saturating_sub(2),
            why,
            pal.dim(),
        );
        return;
    };
    put(
        buf,
        area.x,
        area.y + 1,
        area.width,
        &format!(
            "{:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7}  thread",
            "Δwall", "base", "new", "cpu base", "cpu new", "off base", "off new", "threads"
        ),
        pal.dim(),
    );
    let s = |ns: Option<u64>| match ns {
        Some(ns) => format!("{:>9.3}", ns as f64 / 1e9),
        None => format!("{:>9}", "-"),
    };
    let height = usize::from(area.height.saturating_sub(2));
    for (i, t) in rows.iter().take(height).enumerate() {
        let y = area.y + 2 + i as u16;
        let g = match (t.wall_growth(), t.new) {
            (Some(g), _) => format!("{g:>+7.1}%"),
            (None, Some(_)) => format!("{:>8}", "new"),
            (None, None) => format!("{:>8}", "gone"),
        };
        let count = |x: Option<hotspot_replay::export::diff::threads::ThreadTime>| {
            x.map_or(0, |x| x.threads)
        };
        put(
            buf,
            area.x,
            y,
            area.width,
            &format!(
                "{g} {} {} {} {} {} {} {:>3}/{:<3}  {}",
                s(t.base.map(|x| x.wall_ns())),
                s(t.new.map(|x| x.wall_ns())),
                s(t.base.map(|x| x.on_cpu_ns)),
                s(t.new.map(|x| x.on_cpu_ns)),
                s(t.base.map(|x| x.off_ns())),
                s(t.new.map(|x| x.off_ns())),
                count(t.base),
                count(t.new),
                display(&t.name)
            ),
            Style::new(),
        );
    }
}

/// One capture's strip: a label line, then its bars.
struct Strip<'a> {
    name: &'static str,
    side: Side,
    timeline: &'a crate::model::Timeline,
    span: Option<(u64, u64)>,
    selected: Option<(u64, u64)>,
    whole: bool,
    origin: u64,
    /// Its capture's marks (`hotspot mark`), drawn on its bars.
    marks: &'a [hotspot_format::Mark],
}

/// The timelines of both captures, the base's above the new's, each with its selection;
/// the one the selection keys move is marked `▶`.
pub fn timelines(state: &State, area: Rect, buf: &mut Buffer) {
    let Some(c) = &state.diff else { return };
    let origin = |data: &crate::model::Data| data.clock().map(|k| k.start_mono_ns);
    let strips = [
        Strip {
            name: "base",
            side: Side::Base,
            timeline: &c.timeline,
            span: c.span(),
            selected: c.selected(),
            whole: c.selection.is_none(),
            origin: origin(&c.base).unwrap_or(0),
            marks: &c.base.capture.marks,
        },
        Strip {
            name: "new ",
            side: Side::New,
            timeline: &state.cache.timeline,
            span: state.span(),
            selected: state.selected(),
            whole: state.selection.is_none() && state.follow.is_none(),
            origin: origin(&state.data).unwrap_or(0),
            marks: &state.data.capture.marks,
        },
    ];
    let half = area.height / 2;
    for (k, s) in strips.iter().enumerate() {
        let (y, h) = if k == 0 {
            (area.y, half)
        } else {
            (area.y + half, area.height - half)
        };
        if h == 0 {
            continue;
        }
        draw_strip(state, c, s, Rect::new(area.x, y, area.width, h), buf);
    }
}

fn draw_strip(state: &State, c: &Compare, s: &Strip, area: Rect, buf: &mut Buffer) {
    let pal = state.opts.palette;
    let focus = c.side == s.side;
    let marker = if focus { "▶" } else { " " };
    let Some((a, b)) = s.span else {
        put(
            buf,
            area.x,
            area.y,
            area.width,
            &format!("{marker}{} timeline: no samples yet", s.name),
            pal.dim(),
        );
        return;
    };
    let span = b - a;
    let (from, to) = s.selected.unwrap_or((a, b));
    let at = |t: u64| super::draw::at(i128::from(t) - i128::from(s.origin), span);
    let how = if s.whole {
        "all".to_string()
    } else {
        format!("{} long", secs(to - from, span))
    };
    let keys = if focus {
        " · [ ] - + a move it, b the other"
    } else {
        ""
    };
    put(
        buf,
        area.x,
        area.y,
        area.width,
        &format!(
            "{marker}{} {} · selection {} – {} ({how}){keys}",
            s.name,
            secs(span, span),
            at(from),
            at(to)
        ),
        if focus { pal.title() } else { pal.dim() },
    );
    let t = s.timeline;
    let bars = Rect::new(
        area.x,
        area.y + 1,
        area.width,
        area.height.saturating_sub(1),
    );
    strip(state, t, (t.column(from), t.column(to)), bars, buf);
    marks(state, t, s.marks, bars, (a, b), buf);
}
