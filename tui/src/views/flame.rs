//! The flame graph as an icicle: root on top, width = inclusive share, frames merged by
//! function, hottest branch leftmost (the call tree's child order).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Modifier;

use crate::model::Fold;
use hotspot_replay::kind::FrameKind;
use hotspot_replay::model::aggregate::Tree;
use hotspot_replay::sanitize::display;

use crate::state::State;
use crate::views::draw::{pct, put};

/// One frame drawn: `depth` rows below the shown root, columns `x..x + w`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bar {
    pub node: usize,
    pub depth: u16,
    pub x: u16,
    pub w: u16,
}

/// Lays out the subtree of `root` over `width` columns and `rows` rows. Frames narrower
/// than a column are left out (with everything below them).
pub fn layout(tree: &Tree, root: usize, width: u16, rows: u16) -> Vec<Bar> {
    let mut out = Vec::new();
    if tree.nodes.get(root).is_none_or(|n| n.total == 0) || width == 0 || rows == 0 {
        return out;
    }
    let mut stack = vec![(root, 0.0f64, f64::from(width), 0u16)];
    while let Some((node, x0, w, depth)) = stack.pop() {
        let (a, b) = (x0.round() as u16, (x0 + w).round() as u16);
        if b <= a || depth >= rows {
            continue;
        }
        out.push(Bar {
            node,
            depth,
            x: a,
            w: b - a,
        });
        let n = &tree.nodes[node];
        let mut x = x0;
        let mut kids = Vec::new();
        for &c in &n.children {
            let cw = w * tree.nodes[c].total as f64 / n.total.max(1) as f64;
            kids.push((c, x, cw, depth + 1));
            x += cw;
        }
        stack.extend(kids.into_iter().rev());
    }
    out.sort_by_key(|b| (b.depth, b.x));
    out
}

/// The area the bars are drawn in: the main area less a breadcrumb line on top and two
/// detail lines at the bottom.
pub fn bars_area(main: Rect) -> Rect {
    Rect::new(
        main.x,
        main.y + 1.min(main.height),
        main.width,
        main.height.saturating_sub(3),
    )
}

/// The root shown (the innermost zoom) and the cursor's node.
pub fn root_and_cursor(state: &State) -> (usize, usize) {
    let root = state.flame.zoom.last().map_or(0, |p| state.resolve(p));
    let cursor = if state.flame.cursor.is_empty() {
        root
    } else {
        state.resolve(&state.flame.cursor)
    };
    (root, cursor)
}

/// The node the details line describes: under the mouse, else under the cursor.
pub fn shown_node(state: &State) -> Option<usize> {
    state.fold()?;
    let (_, cursor) = root_and_cursor(state);
    let hover = state.flame.hover.as_ref().map(|p| state.resolve(p));
    Some(hover.unwrap_or(cursor))
}

/// Row of the details line (the function name, module and source) in the main area.
pub fn details_y(main: Rect) -> u16 {
    main.y + main.height.saturating_sub(2)
}

/// The bars as laid out for the current state and screen.
pub fn current_layout(state: &State) -> Vec<Bar> {
    let Some(f) = state.fold() else {
        return Vec::new();
    };
    let area = bars_area(state.regions().main);
    let (root, _) = root_and_cursor(state);
    layout(&f.tree, root, area.width, area.height)
}

/// The node drawn at screen position (x, y), if any.
pub fn hit(state: &State, x: u16, y: u16) -> Option<usize> {
    let area = bars_area(state.regions().main);
    if y < area.y || x < area.x {
        return None;
    }
    let (dx, dy) = (x - area.x, y - area.y);
    current_layout(state)
        .into_iter()
        .find(|b| b.depth == dy && dx >= b.x && dx < b.x + b.w)
        .map(|b| b.node)
}

fn label(fold: &Fold, node: usize) -> String {
    match fold.key(node) {
        Some(k) => display(&k.function),
        None => "all".to_string(),
    }
}

/// Draws the flame view into `area` (the main area).
pub fn render(state: &State, area: Rect, buf: &mut Buffer) {
    let Some(f) = state.fold() else { return };
    let tree = &f.tree;
    let pal = state.opts.palette;
    let (root, cursor) = root_and_cursor(state);
    // Breadcrumb: where the zoom is.
    let mut crumbs = vec!["all".to_string()];
    crumbs.extend(tree.path(root).iter().map(|&n| label(f, n)));
    let zoom = if root == 0 { "" } else { "  (esc: zoom out)" };
    let after = put(
        buf,
        area.x,
        area.y,
        area.width,
        &format!("Flame · {}{zoom}", crumbs.join(" › ")),
        pal.title(),
    );
    crate::views::diff::flame_legend(state, area, after, buf);
    let bars_area = bars_area(area);
    let hover = state.flame.hover.as_ref().map(|p| state.resolve(p));
    for b in layout(tree, root, bars_area.width, bars_area.height) {
        let name = label(f, b.node);
        let mut style = match f.key(b.node) {
            Some(k) => pal.frame(k.kind, &k.function),
            None => pal.frame(FrameKind::Marker, "all"),
        };
        // Diff mode: coloured by the change, and a glyph saying it without colour.
        let mut glyph = "";
        if let Some((diff_style, g)) = crate::views::diff::flame_frame(state, b.node) {
            style = diff_style.unwrap_or(style);
            glyph = g;
        }
        let name = format!("{glyph}{name}");
        if b.node == cursor {
            style = style.add_modifier(Modifier::REVERSED | Modifier::BOLD);
        } else if Some(b.node) == hover {
            style = style.add_modifier(Modifier::UNDERLINED);
        }
        let y = bars_area.y + b.depth;
        let x = bars_area.x + b.x;
        buf.set_style(Rect::new(x, y, b.w, 1), style);
        // A one-column frame shows its edge only; wider ones their name.
        let mut text: String = if b.w >= 2 {
            format!("{name:<width$}", width = usize::from(b.w))
        } else {
            "▏".into()
        };
        if state.opts.palette.mode == crate::palette::ColorMode::None && b.w >= 2 {
            text.replace_range(0..0, "▏");
        }
        put(buf, x, y, b.w, &text, style);
    }
    // Details of the frame under the mouse, else under the cursor.
    let shown = hover.unwrap_or(cursor);
    let n = &tree.nodes[shown];
    let total = tree.nodes[0].total.max(1);
    let src = f
        .line(shown)
        .map(|(file, line)| {
            format!(
                "{}:{line}",
                display(&hotspot_replay::capture::short_module(file))
            )
        })
        .unwrap_or_else(|| "no source line".into());
    let module = f.key(shown).map(|k| display(&k.module)).unwrap_or_default();
    let y = details_y(area);
    put(
        buf,
        area.x,
        y,
        area.width,
        &format!("{}  [{module}]  {src}", label(f, shown),),
        pal.title(),
    );
    if state.diff.is_some() {
        crate::views::diff::flame_details(state, shown, area, y + 1, buf);
        return;
    }
    put(
        buf,
        area.x,
        y + 1,
        area.width,
        &format!(
            "inclusive {} ({})  self {} ({})  depth {}  fan-out {}",
            n.total,
            pct(n.total, total),
            n.self_samples,
            pct(n.self_samples, total),
            tree.depth(shown),
            n.children.len()
        ),
        pal.dim(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use hotspot_replay::model::aggregate::TreeNode;

    /// root → main → (a: 30, b: 10).
    fn tree(a: u64, b: u64) -> Tree {
        let node = |func, parent, children: Vec<usize>, total| TreeNode {
            func,
            parent,
            children,
            total,
            self_samples: 0,
            line: None,
            lines: Vec::new(),
        };
        Tree {
            nodes: vec![
                node(None, None, vec![1], a + b),
                node(Some(0), Some(0), vec![2, 3], a + b),
                node(Some(1), Some(1), vec![], a),
                node(Some(2), Some(1), vec![], b),
            ],
        }
    }

    #[test]
    fn widths_follow_inclusive_share_hottest_left() {
        let t = tree(30, 10);
        let bars = layout(&t, 0, 40, 10);
        let row2: Vec<_> = bars.iter().filter(|b| b.depth == 2).collect();
        assert_eq!(row2.len(), 2);
        assert_eq!((row2[0].node, row2[0].x, row2[0].w), (2, 0, 30));
        assert_eq!((row2[1].node, row2[1].x, row2[1].w), (3, 30, 10));
    }

    #[test]
    fn narrow_frames_and_deep_rows_are_dropped() {
        let t = tree(999, 1);
        let bars = layout(&t, 0, 10, 2);
        assert!(bars.iter().all(|b| b.depth < 2));
        let bars = layout(&t, 0, 10, 5);
        assert_eq!(bars.iter().filter(|b| b.depth == 2).count(), 1);
    }
}
