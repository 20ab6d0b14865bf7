//! Where each part of the screen goes: one function of the terminal size, used both to
//! draw and to map a mouse position back to what was drawn there.

use ratatui::layout::Rect;

/// The screen's parts, top to bottom.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Regions {
    /// Target, mode, counts, notices; then the view tabs and the filters in force.
    pub header: Rect,
    /// The current view.
    pub main: Rect,
    /// The time strip: one line of labels, then the bars.
    pub timeline: Rect,
    /// Key hints.
    pub footer: Rect,
}

/// Rows of the timeline bars.
pub const TIMELINE_BARS: u16 = 3;

impl Regions {
    pub fn new(area: Rect) -> Regions {
        let header_h = area.height.min(2);
        let footer_h = area.height.saturating_sub(header_h).min(1);
        let timeline_h = area
            .height
            .saturating_sub(header_h + footer_h + 3)
            .min(TIMELINE_BARS + 1);
        let main_h = area.height - header_h - footer_h - timeline_h;
        let row = |y: u16, h: u16| Rect::new(area.x, area.y + y, area.width, h);
        Regions {
            header: row(0, header_h),
            main: row(header_h, main_h),
            timeline: row(header_h + main_h, timeline_h),
            footer: row(header_h + main_h + timeline_h, footer_h),
        }
    }

    /// Rows of a list view (the main area less its title and column header).
    pub fn list_height(&self) -> u16 {
        self.main.height.saturating_sub(2)
    }

    /// First row of list entries.
    pub fn list_top(&self) -> u16 {
        self.main.y + 2
    }

    /// The timeline's bars (below its label line).
    pub fn timeline_bars(&self) -> Rect {
        let t = self.timeline;
        Rect::new(
            t.x,
            t.y + 1.min(t.height),
            t.width,
            t.height.saturating_sub(1),
        )
    }
}

/// Columns before the lanes of the threads view in its off-CPU layout (its per-thread
/// times).
const LANE_X: u16 = 90;

/// Columns of the threads view's lanes in a main area `width` columns wide: what the view
/// draws and what the state computes the lanes for.
pub fn lane_width(width: u16) -> u16 {
    width.saturating_sub(LANE_X)
}

/// True if the point is inside the rectangle.
pub fn contains(r: Rect, x: u16, y: u16) -> bool {
    x >= r.x && x < r.x + r.width && y >= r.y && y < r.y + r.height
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_tile_the_screen() {
        let r = Regions::new(Rect::new(0, 0, 100, 30));
        assert_eq!(
            r.header.height + r.main.height + r.timeline.height + r.footer.height,
            30
        );
        assert_eq!(r.timeline.height, 4);
        assert_eq!(r.footer.y, 29);
        let tiny = Regions::new(Rect::new(0, 0, 10, 3));
        assert_eq!(
            tiny.header.height + tiny.main.height + tiny.timeline.height + tiny.footer.height,
            3
        );
    }
}
