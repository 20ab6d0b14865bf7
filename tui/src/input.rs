//! Key and mouse handling: pure functions from (state, event, now) to a changed state and
//! an [`Action`] for the event loop. Keys go through the table in `keymap`.

use std::time::Instant;

use ratatui::crossterm::event::{KeyEvent, MouseButton, MouseEvent, MouseEventKind};

use hotspot_replay::export::diff::Scale;
use hotspot_replay::names::FunctionKey;

use super::diff::Side;
use super::keymap::{Cmd, Key, Scope, lookup};
use super::layout::contains;
use super::state::{Frozen, ListPos, Sort, State, View};
use super::views::chrome::{scopes, tabs};
use super::views::{callers, flame};

/// What the event loop should do after an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    None,
    Redraw,
    Quit,
    /// Put this text on the clipboard (OSC 52).
    Copy(String),
}

/// What `m` says on a capture without off-CPU data (it weighs CPU time only).
pub const NO_OFF_CPU: &str = "no off-CPU data (recorded without --off-cpu): CPU time only";

/// What `m` says in a diff where one of the captures has no off-CPU data.
pub const NO_OFF_CPU_BOTH: &str =
    "the metric applies to both captures, and one has no off-CPU data: CPU time only";

/// Follow windows `F` cycles through.
const FOLLOW_STEPS_NS: [u64; 3] = [5_000_000_000, 10_000_000_000, 30_000_000_000];

/// Handles one key press.
pub fn handle(state: &mut State, ev: KeyEvent, now: Instant) -> Action {
    let Some(key) = Key::from_event(&ev) else {
        return Action::None;
    };
    handle_key(state, key, now)
}

/// Handles one key of the table's kind (what tests call).
pub fn handle_key(state: &mut State, key: Key, now: Instant) -> Action {
    state.refresh();
    if state.help {
        state.help = false;
        return if key == Key::Ctrl('c') {
            Action::Quit
        } else {
            Action::Redraw
        };
    }
    if state.filtering {
        match lookup(&[Scope::Filter], key) {
            Some(Cmd::FilterDone) => state.filtering = false,
            Some(Cmd::FilterClear) => {
                state.flat.filter.clear();
                state.filtering = false;
            }
            Some(Cmd::FilterErase) => {
                state.flat.filter.pop();
            }
            _ => match key {
                Key::Char(c) => state.flat.filter.push(c),
                Key::Ctrl('c') => return Action::Quit,
                _ => return Action::None,
            },
        }
        state.flat.pos = ListPos::default();
        state.refresh();
        return Action::Redraw;
    }
    let Some(cmd) = lookup(&scopes(state), key) else {
        return Action::None;
    };
    let action = apply(state, cmd, now);
    state.refresh();
    action
}

/// Carries out a command.
pub fn apply(state: &mut State, cmd: Cmd, now: Instant) -> Action {
    let page = usize::from(state.regions().list_height().max(2) - 1);
    match cmd {
        Cmd::Quit => return Action::Quit,
        Cmd::Help => state.help = true,
        Cmd::Open => open(state),
        Cmd::Back => back(state),
        Cmd::Up => move_by(state, -1),
        Cmd::Down => move_by(state, 1),
        Cmd::PageUp => move_by(state, -(page as isize)),
        Cmd::PageDown => move_by(state, page as isize),
        Cmd::Top => move_by(state, isize::MIN / 2),
        Cmd::Bottom => move_by(state, isize::MAX / 2),
        Cmd::ShowFlat => show(state, View::Flat),
        Cmd::ShowFlame => show(state, View::Flame),
        Cmd::ShowStream => show(state, View::Stream),
        Cmd::ShowThreads => show(state, View::Threads),
        Cmd::NextView => {
            let at = View::TABS
                .iter()
                .position(|&v| v == state.view)
                .unwrap_or(0);
            show(state, View::TABS[(at + 1) % View::TABS.len()]);
        }
        Cmd::CopyLink => return copy_link(state, now),
        Cmd::Reset => {
            state.flame.zoom.clear();
            state.flame.cursor.clear();
            state.selection = None;
            state.follow = None;
            if let Some(c) = state.diff.as_mut() {
                c.selection = None;
            }
            if state.view == View::Threads {
                state.threads.excluded.clear();
            }
        }
        Cmd::ToggleKernel => state.no_kernel = !state.no_kernel,
        Cmd::ToggleInterpreter => {
            state.no_interpreter = !state.no_interpreter;
            let what = if state.no_interpreter {
                "interpreter frames hidden: their time counts for the Python frame that called them"
            } else {
                "interpreter frames shown"
            };
            state.say(what, now);
        }
        Cmd::Metric if state.diff.as_ref().is_some_and(|c| !c.base.has_off_cpu()) => {
            state.say(NO_OFF_CPU_BOTH, now);
        }
        Cmd::Metric => {
            if state.data.has_off_cpu() {
                state.metric = state.metric.next();
                state.say(format!("weighing by {} time", state.metric.label()), now);
            } else {
                state.say(NO_OFF_CPU, now);
            }
        }
        Cmd::HideIdle if state.diff.is_some() => {
            state.say("a diff compares whole captures: no thread is left out", now);
        }
        Cmd::HideIdle => hide_idle(state, now),
        Cmd::Freeze => {
            state.frozen = match state.frozen {
                Some(_) => None,
                None => Some(Frozen {
                    generation: state.data.generation,
                    until_ns: state.data.span().map_or(0, |(_, b)| b),
                }),
            };
        }
        Cmd::Filter => {
            show(state, View::Flat);
            state.filtering = true;
        }
        Cmd::Sort => {
            state.flat.sort = match state.flat.sort {
                Sort::SelfTime => Sort::Total,
                Sort::Total => Sort::Name,
                Sort::Name => Sort::SelfTime,
            };
            state.flat.pos = ListPos::default();
        }
        Cmd::SelectLeft => shift_selection(state, -1),
        Cmd::SelectRight => shift_selection(state, 1),
        Cmd::SelectShrink => resize_selection(state, -1),
        Cmd::SelectGrow => resize_selection(state, 1),
        Cmd::SelectAll => match state.diff.as_mut() {
            Some(c) if c.side == Side::Base => c.selection = None,
            _ => {
                state.selection = None;
                state.follow = None;
            }
        },
        Cmd::DiffSide => {
            if let Some(c) = state.diff.as_mut() {
                c.side = match c.side {
                    Side::Base => Side::New,
                    Side::New => Side::Base,
                };
                let which = match c.side {
                    Side::Base => "the base's",
                    Side::New => "the new capture's",
                };
                state.say(format!("the selection keys move {which} selection"), now);
            }
        }
        Cmd::DiffScale => {
            if let Some(c) = state.diff.as_mut() {
                c.options.scale = match c.options.scale {
                    Scale::Share => Scale::Rate,
                    Scale::Rate => Scale::Share,
                };
                let text = match c.options.scale {
                    Scale::Share => "changes in points of each capture's share",
                    Scale::Rate => "changes in time per second of each selection",
                };
                state.say(text, now);
            }
        }
        Cmd::Follow => {
            let at = state
                .follow
                .and_then(|f| FOLLOW_STEPS_NS.iter().position(|&s| s == f));
            state.follow = match at {
                None => Some(FOLLOW_STEPS_NS[0]),
                Some(i) => FOLLOW_STEPS_NS.get(i + 1).copied(),
            };
        }
        Cmd::TimelineColour => state.timeline_by_thread = !state.timeline_by_thread,
        Cmd::FlamePrev => flame_sideways(state, -1),
        Cmd::FlameNext => flame_sideways(state, 1),
        Cmd::FlameParent => {
            let (root, cur) = flame::root_and_cursor(state);
            if cur != root {
                state.flame.cursor.pop();
                if state.flame.cursor.len() < state.flame.zoom.last().map_or(0, Vec::len) {
                    state.flame.cursor = state.flame.zoom.last().cloned().unwrap_or_default();
                }
            }
        }
        Cmd::FlameChild => {
            let (_, cur) = flame::root_and_cursor(state);
            let child = state
                .fold()
                .and_then(|f| f.tree.nodes[cur].children.first().copied());
            if let Some(c) = child {
                let visible = flame::current_layout(state).iter().any(|b| b.node == c);
                if visible {
                    state.flame.cursor = state.path_of(c);
                }
            }
        }
        Cmd::FilterDone | Cmd::FilterClear | Cmd::FilterErase | Cmd::Reload => {}
    }
    Action::Redraw
}

fn hide_idle(state: &mut State, now: Instant) {
    state.threads.hide_idle = !state.threads.hide_idle;
    state.threads.pos = ListPos::default();
    let idle = state.data.idle_threads().len();
    let pct = crate::model::IDLE_CPU_PERCENT;
    let text = match (state.threads.hide_idle, idle) {
        (false, _) => "idle threads shown".to_string(),
        (true, 0) => format!("no idle threads (all over {pct}% on a CPU)"),
        (true, 1) => format!("1 idle thread hidden (under {pct}% on a CPU)"),
        (true, n) => format!("{n} idle threads hidden (under {pct}% on a CPU)"),
    };
    state.say(text, now);
}

fn show(state: &mut State, v: View) {
    if state.view != v {
        state.history.push(state.view);
        state.view = v;
    }
    state.filtering = false;
}

fn go_back(state: &mut State) {
    state.view = state.history.pop().unwrap_or(View::Flat);
}

/// The function under the cursor of the current view.
fn selected_function(state: &State) -> Option<FunctionKey> {
    match state.view {
        View::Flat if state.diff.is_some() => {
            let d = state.diff.as_ref().and_then(|c| c.diff.as_ref())?;
            let i = *state.flat.rows.get(state.flat.pos.cursor)?;
            d.changes.get(i).map(|c| c.key.clone())
        }
        View::Flat => state
            .flat_rows()
            .get(state.flat.pos.cursor)
            .map(|r| r.key.clone()),
        View::Callers => state
            .callers_row(state.callers.pos.cursor)
            .map(|(k, _)| k.clone())
            .filter(|k| !(k.module.is_empty() && &*k.function == "[root]")),
        View::Flame => {
            let (_, cur) = flame::root_and_cursor(state);
            state.fold().and_then(|f| f.key(cur).cloned())
        }
        View::Stream | View::Threads => None,
    }
}

fn open(state: &mut State) {
    match state.view {
        View::Flat => {
            if let Some(k) = selected_function(state) {
                state.callers.target = Some(k);
                state.callers.history.clear();
                state.callers.pos = ListPos::default();
                show(state, View::Callers);
            }
        }
        View::Callers => {
            if let Some(k) = selected_function(state)
                && state.callers.target.as_ref() != Some(&k)
            {
                if let Some(old) = state.callers.target.replace(k) {
                    state.callers.history.push(old);
                }
                state.callers.pos = ListPos::default();
            }
        }
        View::Flame => {
            let (root, cur) = flame::root_and_cursor(state);
            if cur != root {
                let path = state.path_of(cur);
                state.flame.zoom.push(path.clone());
                state.flame.cursor = path;
            }
        }
        View::Threads if state.diff.is_some() => {}
        View::Threads => {
            let row = state.thread_rows().get(state.threads.pos.cursor).copied();
            if let Some(t) = row.and_then(|i| state.data.threads.get(i)) {
                let tid = t.tid;
                if !state.threads.excluded.remove(&tid) {
                    state.threads.excluded.insert(tid);
                }
            }
        }
        View::Stream => {}
    }
}

fn back(state: &mut State) {
    match state.view {
        View::Flame if !state.flame.zoom.is_empty() => {
            state.flame.zoom.pop();
        }
        View::Callers if !state.callers.history.is_empty() => {
            state.callers.target = state.callers.history.pop();
            state.callers.pos = ListPos::default();
        }
        _ => go_back(state),
    }
}

fn move_by(state: &mut State, by: isize) {
    let step = |pos: &mut ListPos, len: usize| {
        let c = pos.cursor as isize + by;
        pos.cursor = c.clamp(0, len.saturating_sub(1) as isize) as usize;
    };
    match state.view {
        View::Flat => {
            let n = state.flat.rows.len();
            step(&mut state.flat.pos, n);
        }
        View::Callers => {
            let n = state.callers_len();
            step(&mut state.callers.pos, n);
        }
        View::Threads => {
            let n = state.thread_rows().len();
            step(&mut state.threads.pos, n);
        }
        View::Flame => {
            if by == isize::MIN / 2 {
                state.flame.cursor = state.flame.zoom.last().cloned().unwrap_or_default();
            }
        }
        View::Stream => {}
    }
}

/// Moves the flame cursor to the nearest frame left (-1) or right (+1) on its row.
fn flame_sideways(state: &mut State, dir: i32) {
    let bars = flame::current_layout(state);
    let (_, cur) = flame::root_and_cursor(state);
    let Some(me) = bars.iter().find(|b| b.node == cur) else {
        return;
    };
    let next = bars
        .iter()
        .filter(|b| b.depth == me.depth && b.node != me.node)
        .filter(|b| if dir < 0 { b.x < me.x } else { b.x > me.x })
        .min_by_key(|b| b.x.abs_diff(me.x));
    if let Some(b) = next {
        state.flame.cursor = state.path_of(b.node);
    }
}

/// A time range, inclusive monotonic ns.
type Range = (u64, u64);

/// The selection the keys move (the new capture's, or in a diff the side chosen with
/// `b`): its capture's span, the selected range, and one timeline column of time.
fn target(state: &State) -> Option<(Range, Range, u64)> {
    let (span, selected, columns) = match state.diff.as_ref() {
        Some(c) if c.side == Side::Base => (c.span()?, c.selected()?, c.timeline.buckets.len()),
        _ => (
            state.span()?,
            state.selected()?,
            state.cache.timeline.buckets.len(),
        ),
    };
    let step = ((span.1 - span.0) / columns.max(1) as u64).max(1);
    Some((span, selected, step))
}

/// Sets the selection the keys move.
fn select(state: &mut State, range: (u64, u64)) {
    match state.diff.as_mut() {
        Some(c) if c.side == Side::Base => c.selection = Some(range),
        _ => {
            state.follow = None;
            state.selection = Some(range);
        }
    }
}

/// The timeline the mouse acts on: the new capture's, or in a diff the side chosen.
fn timeline_of(state: &State) -> &crate::model::Timeline {
    match state.diff.as_ref() {
        Some(c) if c.side == Side::Base => &c.timeline,
        _ => &state.cache.timeline,
    }
}

fn shift_selection(state: &mut State, dir: i64) {
    let Some(((a, b), (s, e), step)) = target(state) else {
        return;
    };
    let (s, e) = if dir < 0 {
        let d = step.min(s - a);
        (s - d, e - d)
    } else {
        let d = step.min(b - e);
        (s + d, e + d)
    };
    select(state, (s, e));
}

fn resize_selection(state: &mut State, dir: i64) {
    let Some(((a, b), (s, e), step)) = target(state) else {
        return;
    };
    let (s, e) = if dir < 0 {
        if e - s <= step { (s, e) } else { (s, e - step) }
    } else if e + step <= b {
        (s, e + step)
    } else {
        (s.saturating_sub(step).max(a), b)
    };
    select(state, (s, e));
}

fn copy_link(state: &mut State, now: Instant) -> Action {
    let Some(key) = selected_function(state) else {
        state.say("no function selected", now);
        return Action::Redraw;
    };
    let Some(base) = state.opts.links.clone() else {
        state.say("no link: start with --repo ORG/REPO to link sources", now);
        return Action::Redraw;
    };
    let hottest = state
        .fold()
        .and_then(|f| f.flat.iter().find(|r| r.key == key))
        .and_then(|r| r.hottest.clone());
    match hottest.and_then(|(file, line)| base.url(&file, line)) {
        Some(url) => {
            state.say("link copied", now);
            Action::Copy(url)
        }
        None => {
            state.say("no link: the source path is not inside the repository", now);
            Action::Redraw
        }
    }
}

/// Handles one mouse event.
pub fn handle_mouse(state: &mut State, ev: MouseEvent, now: Instant) -> Action {
    state.refresh();
    let r = state.regions();
    let (x, y) = (ev.column, ev.row);
    let action = match ev.kind {
        MouseEventKind::ScrollUp if state.view == View::Flame => {
            apply(state, Cmd::FlameParent, now)
        }
        MouseEventKind::ScrollDown if state.view == View::Flame => {
            apply(state, Cmd::FlameChild, now)
        }
        MouseEventKind::ScrollUp => {
            move_by(state, -3);
            Action::Redraw
        }
        MouseEventKind::ScrollDown => {
            move_by(state, 3);
            Action::Redraw
        }
        MouseEventKind::Down(MouseButton::Right) => {
            back(state);
            Action::Redraw
        }
        MouseEventKind::Down(MouseButton::Left) => {
            state.help = false;
            click(state, x, y)
        }
        MouseEventKind::Drag(MouseButton::Left) => {
            if let Some(t0) = state.drag {
                let t = timeline_of(state);
                let col = usize::from(x.saturating_sub(r.timeline.x));
                let (c0, c1) = (t.time_at(col), t.time_at(col + 1));
                select(state, (t0.min(c0), c1.max(t0)));
                Action::Redraw
            } else {
                Action::None
            }
        }
        MouseEventKind::Up(MouseButton::Left) => {
            state.drag = None;
            Action::None
        }
        MouseEventKind::Moved if state.view == View::Flame => {
            let hover = flame::hit(state, x, y).map(|n| state.path_of(n));
            if hover == state.flame.hover {
                Action::None
            } else {
                state.flame.hover = hover;
                Action::Redraw
            }
        }
        _ => Action::None,
    };
    state.refresh();
    action
}

fn click(state: &mut State, x: u16, y: u16) -> Action {
    let r = state.regions();
    if y == r.header.y + 1
        && let Some((v, _, _)) = tabs(r.header)
            .into_iter()
            .find(|&(_, tx, w)| x >= tx && x < tx + w)
    {
        show(state, v);
        return Action::Redraw;
    }
    if contains(r.timeline, x, y) {
        if let Some(c) = state.diff.as_mut() {
            // The base's strip is the upper half of the timeline, the new's the lower.
            c.side = if y < r.timeline.y + r.timeline.height / 2 {
                Side::Base
            } else {
                Side::New
            };
        }
        let t = timeline_of(state);
        let col = usize::from(x - r.timeline.x);
        let (t0, t1) = (t.time_at(col), t.time_at(col + 1));
        state.drag = Some(t0);
        select(state, (t0, t1));
        return Action::Redraw;
    }
    if !contains(r.main, x, y) {
        return Action::None;
    }
    let row = y.checked_sub(r.list_top()).map(usize::from);
    match state.view {
        View::Flat => {
            if let Some(i) = row.map(|i| i + state.flat.pos.offset)
                && i < state.flat.rows.len()
            {
                if i == state.flat.pos.cursor {
                    open(state);
                } else {
                    state.flat.pos.cursor = i;
                }
            }
        }
        View::Threads if state.diff.is_some() => {}
        View::Threads => {
            if let Some(i) = row.map(|i| i + state.threads.pos.offset)
                && i < state.thread_rows().len()
            {
                if i == state.threads.pos.cursor {
                    open(state);
                } else {
                    state.threads.pos.cursor = i;
                }
            }
        }
        View::Callers => {
            let height = usize::from(r.list_height());
            let first = callers::first_line(state, height);
            let line = row.and_then(|i| callers::lines(state).get(first + i).copied());
            if let Some(callers::Line::Row(i)) = line {
                if i == state.callers.pos.cursor {
                    open(state);
                } else {
                    state.callers.pos.cursor = i;
                }
            }
        }
        View::Flame => {
            if let Some(n) = flame::hit(state, x, y) {
                let (_, cur) = flame::root_and_cursor(state);
                if n == cur {
                    open(state);
                } else {
                    state.flame.cursor = state.path_of(n);
                }
            }
        }
        View::Stream => {}
    }
    Action::Redraw
}
