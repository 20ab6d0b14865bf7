//! Where the views show a function whose source can be linked (`--repo`): the spans the
//! terminal loop overlays as OSC 8 hyperlinks after ratatui has drawn the frame. Positions
//! come from the views' own layout constants, and a test checks each span's text against
//! the drawn buffer, so a layout change cannot silently misplace a link.

use crate::State;
use crate::state::View;
use crate::views::callers::{self, Line};
use crate::views::flame;
use crate::views::flat::NAME_X;
use hotspot_replay::names::FunctionKey;
use hotspot_replay::sanitize::display;

/// Text drawn at (x, y) that links to `url`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkSpan {
    pub x: u16,
    pub y: u16,
    pub text: String,
    pub url: String,
}

/// The link spans of the current view (none without `--repo`).
pub fn spans(state: &State) -> Vec<LinkSpan> {
    let Some(base) = &state.opts.links else {
        return Vec::new();
    };
    if state.diff.is_some() {
        // The diff's rows are laid out differently; `o` still copies a link.
        return Vec::new();
    }
    let r = state.regions();
    let area = r.main;
    let end = area.x + area.width;
    let mut out = Vec::new();
    let mut push = |x: u16, y: u16, name: &str, url: Option<String>| {
        let Some(url) = url else { return };
        if x >= end || y >= area.y + area.height {
            return;
        }
        let text: String = display(name).chars().take(usize::from(end - x)).collect();
        if !text.is_empty() {
            out.push(LinkSpan { x, y, text, url });
        }
    };
    // The hottest line of a function in the current fold, as the flat view shows it.
    let hottest = |key: &FunctionKey| {
        let f = state.fold()?;
        let row = f.flat.iter().find(|r| &r.key == key)?;
        let (file, line) = row.hottest.as_ref()?;
        base.url(file, *line)
    };
    match state.view {
        View::Flat => {
            let top = state.flat.pos.offset;
            let height = usize::from(r.list_height());
            for (i, row) in state.flat_rows().iter().enumerate().skip(top).take(height) {
                let url = row.hottest.as_ref().and_then(|(f, l)| base.url(f, *l));
                let y = r.list_top() + (i - top) as u16;
                push(area.x + NAME_X, y, &row.key.function, url);
            }
        }
        View::Callers => {
            let Some(target) = &state.callers.target else {
                return out;
            };
            push(area.x, area.y, &target.function, hottest(target));
            let height = usize::from(area.height.saturating_sub(2));
            let first = callers::first_line(state, height);
            for (i, line) in callers::lines(state)
                .into_iter()
                .skip(first)
                .take(height)
                .enumerate()
            {
                let Line::Row(row) = line else { continue };
                let Some((key, _)) = state.callers_row(row) else {
                    continue;
                };
                let y = area.y + 2 + i as u16;
                push(area.x + callers::NAME_X, y, &key.function, hottest(key));
            }
        }
        View::Flame => {
            let Some(f) = state.fold() else { return out };
            let Some(node) = flame::shown_node(state) else {
                return out;
            };
            let (Some(key), Some((file, line))) = (f.key(node), f.line(node)) else {
                return out;
            };
            push(
                area.x,
                flame::details_y(area),
                &key.function,
                base.url(file, *line),
            );
        }
        View::Stream | View::Threads => {}
    }
    out
}
