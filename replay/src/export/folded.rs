//! Folded stacks (`a;b;c N`, root first, one line per distinct stack of function names,
//! sorted), the input format of flame-graph tools. Written line by line: the text repeats
//! every name once per stack it is on, so it can be far larger than the capture.

use std::cmp::Ordering;
use std::io::{self, Write};
use std::sync::Arc;

use super::slice::Slice;
use super::{ExportError, ExportOptions};
use crate::sanitize::{Shown, display};

/// One folded line: the displayed names, root first, and the samples.
pub(crate) type Line = (Vec<Arc<str>>, u64);

/// The selected samples as folded lines, sorted as their text sorts, lines whose text is
/// the same merged; their counts add up to the report's total. Names longer than
/// `max_name` bytes are cut (with `…`). Each distinct name is displayed once and shared.
pub(crate) fn lines(slice: &Slice, max_name: usize) -> Vec<Line> {
    let mut shown = Shown::default();
    let mut out: Vec<Line> = slice
        .stacks()
        .into_iter()
        .map(|(stack, n)| {
            let names = stack
                .iter()
                .map(|f| shown.get(&f.function, |s| shown_name(s, max_name)))
                .collect();
            (names, n)
        })
        .collect();
    out.sort_by(|a, b| cmp_joined(&a.0, &b.0));
    out.dedup_by(|later, kept| {
        let same = later.0 == kept.0;
        if same {
            kept.1 += later.1;
        }
        same
    });
    out
}

/// A name as folded text shows it: sanitised, `;` (the separator) replaced, capped.
pub(crate) fn shown_name(name: &str, max: usize) -> Arc<str> {
    let mut s = display(name).replace(';', ":");
    if s.len() > max {
        let cut = s.floor_char_boundary(max);
        s.truncate(cut);
        s.push('…');
    }
    s.into()
}

/// Orders two stacks as the texts `a.join(";")` and `b.join(";")` order, without
/// building them. Names hold no `;`, so at the first pair of names that differ, either
/// neither is a prefix of the other (the names decide), or the shorter one's next byte
/// in the text is `;` (or the end) against a byte of the longer name that is not `;`.
pub(crate) fn cmp_joined(a: &[Arc<str>], b: &[Arc<str>]) -> Ordering {
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        if Arc::ptr_eq(x, y) || x == y {
            continue;
        }
        let (xb, yb) = (x.as_bytes(), y.as_bytes());
        if let Some(k) = xb.iter().zip(yb).position(|(p, q)| p != q) {
            return xb[k].cmp(&yb[k]);
        }
        // One is a proper prefix of the other.
        return if xb.len() < yb.len() {
            let next = (i + 1 < a.len()).then_some(b';');
            next.cmp(&Some(yb[xb.len()]))
        } else {
            let next = (i + 1 < b.len()).then_some(b';');
            Some(xb[yb.len()]).cmp(&next)
        };
    }
    a.len().cmp(&b.len())
}

/// Writes `names` joined by `;`.
pub(crate) fn write_stack(w: &mut dyn Write, names: &[Arc<str>]) -> io::Result<()> {
    for (i, n) in names.iter().enumerate() {
        if i > 0 {
            w.write_all(b";")?;
        }
        w.write_all(n.as_bytes())?;
    }
    Ok(())
}

/// Writes the selected samples as folded lines.
pub fn write(slice: &Slice, _: &ExportOptions, w: &mut dyn Write) -> Result<(), ExportError> {
    for (names, n) in lines(slice, usize::MAX) {
        write_stack(w, &names)?;
        writeln!(w, " {n}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(names: &[&str]) -> Vec<Arc<str>> {
        names.iter().map(|&n| Arc::from(n)).collect()
    }

    #[test]
    fn stacks_order_as_their_joined_text() {
        let stacks = [
            v(&["a"]),
            v(&["a", "b"]),
            v(&["a1"]),
            v(&["a", "1"]),
            v(&["a!", "b"]),
            v(&["ab"]),
            v(&["a", "b", "c"]),
            v(&["b"]),
            v(&["a~"]),
            v(&[]),
            v(&["a", "ba"]),
            v(&["a", "b:"]),
        ];
        for x in &stacks {
            for y in &stacks {
                assert_eq!(
                    cmp_joined(x, y),
                    x.join(";").cmp(&y.join(";")),
                    "{x:?} vs {y:?}"
                );
            }
        }
    }

    #[test]
    fn long_names_are_cut_at_a_character_boundary() {
        let s = shown_name(&"é".repeat(10), 5);
        assert_eq!(&*s, "éé…");
        assert_eq!(&*shown_name("a;b", 100), "a:b");
    }
}
