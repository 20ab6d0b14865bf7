//! Folded stacks (`a;b;c N`, root first, one line per distinct stack of function names,
//! sorted), the input format of flame-graph tools.

use super::slice::Slice;
use crate::profile::{Folded, folded_text};

/// The selected samples as folded lines; their counts add up to the report's total.
pub fn text(slice: &Slice) -> String {
    let placed = Folded {
        stacks: slice.stacks(),
        total: slice.folded.total,
        unknown_stacks: 0,
    };
    folded_text(&placed)
}
