//! The stream: time runs left to right over the selection, each column shows the
//! dominant stack of its time bucket (root on top), and identical frames in adjacent
//! columns merge, so phases read as bands.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use hotspot_replay::names::FrameName;
use hotspot_replay::sanitize::display;

use crate::state::State;
use crate::views::draw::put;

/// A run of columns `x..x + w` showing the same frame (with the same callers) at `depth`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Band {
    pub depth: u16,
    pub x: u16,
    pub w: u16,
    pub frame: FrameName,
}

/// Merges the stream's columns into bands, `rows` deep.
pub fn bands(columns: &[Option<u32>], stacks: &[Vec<FrameName>], rows: u16) -> Vec<Band> {
    let mut out = Vec::new();
    for depth in 0..rows {
        let d = usize::from(depth);
        let mut c = 0;
        while c < columns.len() {
            let Some(stack) = columns[c].and_then(|s| stacks.get(s as usize)) else {
                c += 1;
                continue;
            };
            let Some(frame) = stack.get(d) else {
                c += 1;
                continue;
            };
            let mut end = c + 1;
            while end < columns.len() {
                let same = columns[end]
                    .and_then(|s| stacks.get(s as usize))
                    .is_some_and(|o| o.len() > d && same_prefix(o, stack, d));
                if !same {
                    break;
                }
                end += 1;
            }
            out.push(Band {
                depth,
                x: c as u16,
                w: (end - c) as u16,
                frame: frame.clone(),
            });
            c = end;
        }
    }
    out
}

/// True if two stacks agree on functions from the root down to `depth`.
fn same_prefix(a: &[FrameName], b: &[FrameName], depth: usize) -> bool {
    (0..=depth).all(|i| {
        let (x, y) = (&a[i], &b[i]);
        x.function == y.function && x.module == y.module && x.kind == y.kind
    })
}

pub fn render(state: &State, area: Rect, buf: &mut Buffer) {
    let pal = state.opts.palette;
    let (from, to) = state.selected().unwrap_or((0, 0));
    let span = state.span().map_or(1, |(a, b)| b - a);
    let per_bucket = (to - from) / state.cache.stream.buckets.max(1) as u64;
    put(
        buf,
        area.x,
        area.y,
        area.width,
        &format!(
            "Stream · {} – {} · the dominant stack of each {} of time, root on top",
            state.label_at(from, span),
            state.label_at(to, span),
            crate::views::draw::secs(per_bucket, per_bucket),
        ),
        pal.title(),
    );
    let s = &state.cache.stream;
    let body = Rect::new(
        area.x,
        area.y + 1,
        area.width,
        area.height.saturating_sub(1),
    );
    for b in bands(&s.columns, &s.stacks, body.height) {
        let x = body.x + b.x;
        let y = body.y + b.depth;
        let style = pal.frame(b.frame.kind, &b.frame.function);
        buf.set_style(Rect::new(x, y, b.w.min(body.width - b.x), 1), style);
        let text = if b.w >= 2 {
            display(&b.frame.function)
        } else {
            "▏".into()
        };
        put(buf, x, y, b.w, &text, style);
    }
    if s.columns.iter().all(Option::is_none) {
        put(
            buf,
            body.x + 2,
            body.y,
            body.width.saturating_sub(2),
            "no samples in the selection",
            pal.dim(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hotspot_replay::kind::FrameKind;

    fn f(n: &str) -> FrameName {
        FrameName {
            function: n.into(),
            module: "m".into(),
            file: None,
            line: 0,
            kind: FrameKind::User,
        }
    }

    #[test]
    fn adjacent_identical_frames_merge_into_bands() {
        let stacks = vec![
            vec![f("main"), f("one"), f("leaf1")],
            vec![f("main"), f("two"), f("leaf1")],
        ];
        let cols = vec![Some(0), Some(0), None, Some(1), Some(1)];
        let b = bands(&cols, &stacks, 3);
        let at = |d: u16| -> Vec<(u16, u16, String)> {
            b.iter()
                .filter(|x| x.depth == d)
                .map(|x| (x.x, x.w, x.frame.function.to_string()))
                .collect()
        };
        assert_eq!(at(0), vec![(0, 2, "main".into()), (3, 2, "main".into())]);
        // Same leaf name under different callers stays two bands.
        assert_eq!(at(2), vec![(0, 2, "leaf1".into()), (3, 2, "leaf1".into())]);
    }
}
