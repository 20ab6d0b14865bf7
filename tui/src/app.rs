//! The event loops: the profile views over a (possibly growing) capture, and the process
//! table. Each turn: take in new blocks, refold if needed, draw, wait for input.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ratatui::backend::IntoCrossterm;
use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{self, Event as TermEvent};
use ratatui::crossterm::style::{
    Attribute, Print, ResetColor, SetAttribute, SetBackgroundColor, SetForegroundColor,
};
use ratatui::crossterm::{cursor::MoveTo, queue};
use ratatui::layout::Rect;
use ratatui::style::Modifier;

use hotspot_replay::error::ReplayError;

use super::diff::Compare;
use super::input::{Action, handle, handle_mouse};
use super::links::hyperlink;
use super::links::link::{Osc8, osc52};
use super::model::Data;
use super::render::draw;
use super::state::{Options, State};
use super::terminal::Term;
use super::views::chrome::NOTICE_FOR;
use super::views::picker::{self, PickAction, Picker, ProcRow};
use hotspot_replay::file::Tail;

/// How often a growing capture is polled.
const POLL_EVERY: Duration = Duration::from_millis(200);
/// How often the process table refreshes itself.
const RELOAD_EVERY: Duration = Duration::from_secs(2);

/// Errors of the views.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    #[error("terminal")]
    Terminal(#[from] std::io::Error),
    #[error(transparent)]
    Capture(#[from] ReplayError),
}

/// Terminal input or output, or `None` when it failed because the terminal went away (the hang-up
/// watcher sets `stop` and makes input fail, since crossterm would read EOF forever).
fn input<T>(r: std::io::Result<T>, stop: &AtomicBool) -> std::io::Result<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(_) if stop.load(Ordering::SeqCst) => Ok(None),
        Err(e) => Err(e),
    }
}

/// How often the views redraw while a big capture is still being read in.
const CATCH_UP_DRAW: Duration = Duration::from_millis(100);

fn size(term: &Term) -> Rect {
    let s = term.terminal.size().unwrap_or_default();
    Rect::new(0, 0, s.width, s.height)
}

/// Shows the capture at `path` until the user quits or `stop` is set.
pub fn view(
    term: &mut Term,
    tail: Tail,
    path: &Path,
    opts: Options,
    stop: &AtomicBool,
) -> Result<(), TuiError> {
    view_against(term, tail, path, opts, None, stop)
}

/// [`view`], in diff mode when `base` is given: the capture at `path` (the new one, which
/// may still grow) compared with the base.
pub fn view_against(
    term: &mut Term,
    mut tail: Tail,
    path: &Path,
    opts: Options,
    base: Option<Compare>,
    stop: &AtomicBool,
) -> Result<(), TuiError> {
    let mut data = Data::default();
    data.capture.path = path.to_path_buf();
    let mut state = State::new(data, opts, size(term));
    state.diff = base;
    let mut dirty = true;
    let mut next_poll = Instant::now();
    let mut notice_shown = false;
    let mut last_draw: Option<Instant> = None;
    loop {
        let now = Instant::now();
        let mut busy = false;
        let base_pending = state.diff.as_ref().is_some_and(|c| c.source.is_some());
        if now >= next_poll && (!state.finished || base_pending) {
            let events = tail.poll().map_err(|e| e.with_path(path))?;
            busy = !events.is_empty() || tail.behind();
            dirty |= state.data.apply(events);
            let dirs = state.opts.symbol_dirs.clone();
            dirty |= state.data.resymbolize(&dirs);
            state.finished = tail.finished();
            if let Some(c) = state.diff.as_mut() {
                let (changed, more) = c.poll(&dirs)?;
                dirty |= changed;
                busy |= more;
            }
            let no_header = !tail.has_header();
            dirty |= state.finished || state.no_header != no_header;
            state.no_header = no_header;
            next_poll = if busy { now } else { now + POLL_EVERY };
        }
        // Redraw once when a notice expires.
        let notice_live = state
            .notice
            .as_ref()
            .is_some_and(|(_, at)| now.saturating_duration_since(*at) < NOTICE_FOR);
        if notice_shown && !notice_live {
            dirty = true;
        }
        notice_shown = notice_live;
        // Catching up with a big file: draw the first frame at once, then at most every
        // 100 ms until it has been read, rather than refolding after every poll.
        let due =
            !busy || last_draw.is_none_or(|t: Instant| now.duration_since(t) >= CATCH_UP_DRAW);
        if dirty && due {
            last_draw = Some(now);
            state.refresh();
            let Some(frame) = input(
                term.terminal.draw(|f| draw(&state, f.buffer_mut(), now)),
                stop,
            )?
            else {
                return Ok(());
            };
            let drawn = frame.buffer.clone();
            if state.opts.links.is_some() {
                overlay_links(term, &state, &drawn)?;
            }
            dirty = false;
        }
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        let wait = if busy {
            Duration::ZERO
        } else if state.finished {
            // Nothing more will arrive: wait for input (waking only to expire notices)
            // instead of spinning on a deadline already past.
            Duration::from_millis(100)
        } else {
            next_poll
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(100))
        };
        let Some(ready) = input(event::poll(wait), stop)? else {
            return Ok(());
        };
        if !ready {
            continue;
        }
        let now = Instant::now();
        let Some(ev) = input(event::read(), stop)? else {
            return Ok(());
        };
        let action = match ev {
            TermEvent::Key(k) => handle(&mut state, k, now),
            TermEvent::Mouse(m) => handle_mouse(&mut state, m, now),
            TermEvent::Resize(w, h) => {
                state.size = Rect::new(0, 0, w, h);
                Action::Redraw
            }
            _ => Action::None,
        };
        match action {
            Action::Quit => return Ok(()),
            Action::Copy(text) => {
                let mut out = std::io::stdout();
                write!(out, "{}", osc52(&text))?;
                out.flush()?;
                dirty = true;
            }
            Action::Redraw => dirty = true,
            Action::None => {}
        }
    }
}

/// Re-prints the function names of the flat view as OSC 8 hyperlinks, over what ratatui
/// drew, with the same colours (ratatui's cells cannot carry a hyperlink).
fn overlay_links(term: &mut Term, state: &State, buf: &Buffer) -> std::io::Result<()> {
    let out = term.terminal.backend_mut();
    for span in hyperlink::spans(state) {
        let cell = &buf[(span.x, span.y)];
        queue!(out, MoveTo(span.x, span.y))?;
        queue!(
            out,
            SetForegroundColor(cell.fg.into_crossterm()),
            SetBackgroundColor(cell.bg.into_crossterm())
        )?;
        if cell.modifier.contains(Modifier::BOLD) {
            queue!(out, SetAttribute(Attribute::Bold))?;
        }
        if cell.modifier.contains(Modifier::REVERSED) {
            queue!(out, SetAttribute(Attribute::Reverse))?;
        }
        queue!(
            out,
            Print(Osc8 {
                url: &span.url,
                text: &span.text
            }),
            SetAttribute(Attribute::Reset),
            ResetColor
        )?;
    }
    out.flush()
}

/// Shows the process table until a process is picked (its pid) or the user quits.
pub fn pick(
    term: &mut Term,
    palette: super::palette::Palette,
    load: &mut dyn FnMut() -> Vec<ProcRow>,
    stop: &AtomicBool,
) -> Result<Option<u32>, TuiError> {
    let mut p = Picker::new(load(), size(term), palette);
    let mut next_reload = Instant::now() + RELOAD_EVERY;
    let mut dirty = true;
    loop {
        if Instant::now() >= next_reload {
            p.set_rows(load());
            next_reload = Instant::now() + RELOAD_EVERY;
            dirty = true;
        }
        if dirty {
            term.terminal.draw(|f| picker::render(&p, f.buffer_mut()))?;
            dirty = false;
        }
        if stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let Some(ready) = input(event::poll(Duration::from_millis(100)), stop)? else {
            return Ok(None);
        };
        if !ready {
            continue;
        }
        let Some(ev) = input(event::read(), stop)? else {
            return Ok(None);
        };
        let action = match ev {
            TermEvent::Key(k) => picker::handle(&mut p, k),
            TermEvent::Mouse(m) => picker::handle_mouse(&mut p, m),
            TermEvent::Resize(w, h) => {
                p.size = Rect::new(0, 0, w, h);
                PickAction::Redraw
            }
            _ => PickAction::None,
        };
        match action {
            PickAction::Quit => return Ok(None),
            PickAction::Pick(pid) => return Ok(Some(pid)),
            PickAction::Reload => {
                p.set_rows(load());
                next_reload = Instant::now() + RELOAD_EVERY;
                dirty = true;
            }
            PickAction::Redraw => dirty = true,
            PickAction::None => {}
        }
    }
}
