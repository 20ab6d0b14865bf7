//! Headless outputs of a capture for scripts, CI and other tools' viewers: one streaming
//! pass over the file ([`scan`]), the user's filters ([`selection`], with times as
//! [`crate::time`] reads them) applied to it, giving a [`Slice`](mod@slice) of the
//! profile model that any other source of a model can give too, and a writer per format
//! ([`format`](mod@format)), all with one signature ([`Writer`]); the comparison of two selections is
//! [`diff`], with one signature too ([`DiffWriter`]).

pub mod diff;
pub mod error;
pub mod folded;
pub mod format;
pub mod json;
pub mod pprof;
pub mod scan;
pub mod selection;
pub mod slice;
pub mod speedscope;
pub mod split;
pub mod summary;
pub mod svg;
pub mod text;

use std::io::Write;

pub use error::ExportError;
pub use format::{DiffFormat, Format};
pub use scan::{Scan, ScanOptions};
pub use selection::Selection;
pub use slice::Slice;

/// What an output is asked for beyond the selection.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ExportOptions {
    /// How many functions the ranked outputs list (text and JSON reports, diff text and
    /// JSON); `None`: the text forms show [`DEFAULT_TOP`], JSON every function. The other
    /// formats keep every stack and ignore it.
    pub top: Option<usize>,
    /// What a diff compares and how sure it must be ([`diff::DiffOptions`]); the reports
    /// ignore it.
    pub diff: diff::DiffOptions,
}

/// Rows a text table shows when `--top` is not given.
pub const DEFAULT_TOP: usize = 30;

/// The contract every report format's `write` follows: the selected samples, written to
/// `out` as they are produced (an output can be far larger than the capture).
pub type Writer = fn(&Slice, &ExportOptions, &mut dyn Write) -> Result<(), ExportError>;

/// The same for an output comparing two selections (`base`, then `new`).
pub type DiffWriter = fn(&Slice, &Slice, &ExportOptions, &mut dyn Write) -> Result<(), ExportError>;

/// `100 * part / whole`, rounded to two decimals (0 for an empty whole): every
/// percentage the JSON documents carry.
pub(crate) fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        return 0.0;
    }
    (10_000.0 * part as f64 / whole as f64).round() / 100.0
}
