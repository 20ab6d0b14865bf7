//! Making names from a capture safe to print: a capture from a ticket is untrusted, and
//! a symbol or thread name must not be able to drive the terminal.

use std::collections::HashMap;
use std::sync::Arc;

/// Replaces control characters (C0, DEL, C1), bidirectional overrides and isolates,
/// invisible characters (zero-width spaces and joiners, other default-ignorable code
/// points) and line or paragraph separators with visible `\xNN` / `\u{NNNN}` escapes, and
/// caps the length.
pub fn display(s: &str) -> String {
    const MAX: usize = 4096;
    // Most names need nothing: one pass to check, one copy.
    if s.len() <= MAX && !s.chars().any(needs_escape) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len().min(MAX));
    for c in s.chars() {
        if out.len() >= MAX {
            out.push('…');
            break;
        }
        let u = c as u32;
        if u < 0x20 || u == 0x7f {
            out.push_str(&format!("\\x{u:02x}"));
        } else if (0x80..0xa0).contains(&u) || is_bidi_control(u) || is_invisible(u) {
            out.push_str(&format!("\\u{{{u:04x}}}"));
        } else {
            out.push(c);
        }
    }
    out
}

/// Sanitised copies of a capture's names, each made once. A capture's names are shared
/// `Arc`s, so copies are keyed by allocation; each entry keeps its `Arc`, so no key can be
/// freed and reused while the cache lives.
#[derive(Default)]
pub(crate) struct Shown {
    names: HashMap<*const u8, (Arc<str>, Arc<str>)>,
}

impl Shown {
    /// `name` as `make` shows it, made on first sight only.
    pub fn get(&mut self, name: &Arc<str>, make: impl FnOnce(&str) -> Arc<str>) -> Arc<str> {
        let (_, shown) = self
            .names
            .entry(name.as_ptr())
            .or_insert_with(|| (name.clone(), make(name)));
        shown.clone()
    }
}

fn needs_escape(c: char) -> bool {
    let u = c as u32;
    u < 0x20 || (0x7f..0xa0).contains(&u) || (u >= 0xad && (is_bidi_control(u) || is_invisible(u)))
}

fn is_bidi_control(u: u32) -> bool {
    matches!(u, 0x061c | 0x200e | 0x200f | 0x202a..=0x202e | 0x2066..=0x2069)
}

/// Characters that draw nothing (or break a line) yet change what a terminal shows:
/// Unicode's default-ignorable code points, and the line and paragraph separators.
fn is_invisible(u: u32) -> bool {
    matches!(
        u,
        0x00ad
            | 0x034f
            | 0x115f
            | 0x1160
            | 0x17b4
            | 0x17b5
            | 0x180b..=0x180f
            | 0x200b..=0x200d
            | 0x2028
            | 0x2029
            | 0x2060..=0x206f
            | 0x3164
            | 0xfe00..=0xfe0f
            | 0xfeff
            | 0xffa0
            | 0xfff0..=0xfffb
            | 0x1bca0..=0x1bca3
            | 0x1d173..=0x1d17a
            | 0xe0000..=0xe0fff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        let s = display("a\x1b[31mred\x07\u{9b}x\u{202e}y\n");
        assert!(
            !s.chars().any(|c| c.is_control() || c == '\u{202e}'),
            "{s:?}"
        );
        assert_eq!(s, "a\\x1b[31mred\\x07\\u{009b}x\\u{202e}y\\x0a");
    }

    #[test]
    fn invisible_characters_are_escaped() {
        let s = display("a\u{200b}b\u{200d}c\u{2060}d\u{feff}e\u{2028}f\u{2029}g\u{e0041}h\u{ad}i");
        assert_eq!(
            s,
            "a\\u{200b}b\\u{200d}c\\u{2060}d\\u{feff}e\\u{2028}f\\u{2029}g\\u{e0041}h\\u{00ad}i"
        );
    }

    #[test]
    fn plain_names_pass_through() {
        assert_eq!(display("std::vec::Vec<T>::push"), "std::vec::Vec<T>::push");
        assert_eq!(display("名前"), "名前");
    }

    #[test]
    fn long_names_are_capped() {
        assert!(display(&"x".repeat(100_000)).len() < 5000);
    }
}
