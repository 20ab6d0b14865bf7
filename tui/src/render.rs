//! Drawing a whole screen from the state: read-only, so the same state always draws the
//! same screen (what the snapshot tests rely on).

use std::time::Instant;

use ratatui::buffer::Buffer;

use super::state::{State, View};
use super::views::{self, callers, chrome, flame, flat, stream, threads, timeline};

/// Draws every part of the screen into `buf` (whose area is the terminal).
pub fn draw(state: &State, buf: &mut Buffer, now: Instant) {
    let r = state.regions();
    chrome::header(state, r.header, buf);
    let diff = state.diff.is_some();
    match state.view {
        View::Flat if diff => views::diff::flat(state, r.main, buf),
        View::Callers if diff => views::diff::callers(state, r.main, buf),
        View::Threads if diff => views::diff::threads(state, r.main, buf),
        View::Flat => flat::render(state, r.main, buf),
        View::Callers => callers::render(state, r.main, buf),
        View::Flame => flame::render(state, r.main, buf),
        View::Stream => stream::render(state, r.main, buf),
        View::Threads => threads::render(state, r.main, buf),
    }
    timeline::render(state, r.timeline, buf);
    chrome::footer(state, r.footer, buf, now);
    if state.help {
        chrome::help(state, buf.area, buf);
    }
}
