//! Small drawing helpers shared by the views: clipped text, percentages, bars, numbers.

use ratatui::buffer::Buffer;
use ratatui::style::Style;

/// Writes `text` at (x, y), clipped to `width` columns (and to the buffer).
pub fn put(buf: &mut Buffer, x: u16, y: u16, width: u16, text: &str, style: Style) -> u16 {
    let area = buf.area;
    if y >= area.y + area.height || x >= area.x + area.width {
        return x;
    }
    let width = width.min(area.x + area.width - x);
    buf.set_stringn(x, y, text, usize::from(width), style).0
}

/// `n` of `total` as a percentage with two decimals.
pub fn pct(n: u64, total: u64) -> String {
    format!("{:.2}%", 100.0 * n as f64 / total.max(1) as f64)
}

/// A horizontal bar of `width` cells filled to `frac`, in eighths.
pub fn bar(frac: f64, width: usize) -> String {
    const EIGHTHS: [char; 8] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];
    let eighths = (frac.clamp(0.0, 1.0) * (width * 8) as f64).round() as usize;
    let mut s = String::with_capacity(width * 3);
    for i in 0..width {
        let cell = eighths.saturating_sub(i * 8).min(8);
        s.push(if cell == 8 { '█' } else { EIGHTHS[cell] });
    }
    s
}

/// `1234567` → `1,234,567`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Seconds with a precision that suits the span they are part of.
pub fn secs(ns: u64, span_ns: u64) -> String {
    let s = ns as f64 / 1e9;
    if span_ns >= 100_000_000_000 {
        format!("{s:.0}s")
    } else if span_ns >= 10_000_000_000 {
        format!("{s:.1}s")
    } else {
        format!("{s:.2}s")
    }
}

/// An instant as seconds from time 0 (negative before it), with [`secs`]'s precision; an
/// instant that rounds to zero has no sign (a session header written a few ms after the
/// first sample must not print `-0.00s`).
pub fn at(offset_ns: i128, span_ns: u64) -> String {
    let text = secs(
        u64::try_from(offset_ns.unsigned_abs()).unwrap_or(u64::MAX),
        span_ns,
    );
    if offset_ns < 0 && text.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
        format!("-{text}")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_fill_in_eighths() {
        assert_eq!(bar(0.0, 3), "   ");
        assert_eq!(bar(1.0, 3), "███");
        assert_eq!(bar(0.5, 2), "█ ");
        assert_eq!(bar(0.5, 1), "▌");
        assert_eq!(bar(1.0 / 16.0, 1), "▏");
    }

    #[test]
    fn numbers() {
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(12), "12");
        assert_eq!(pct(1, 3), "33.33%");
        assert_eq!(secs(1_500_000_000, 6_000_000_000), "1.50s");
        assert_eq!(at(1_500_000_000, 6_000_000_000), "1.50s");
        assert_eq!(at(-1_500_000_000, 6_000_000_000), "-1.50s");
        assert_eq!(at(-3_000_000, 6_000_000_000), "0.00s");
    }
}
