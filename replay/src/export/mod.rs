//! Headless outputs of a capture for scripts, CI and other tools' viewers: one streaming
//! pass over the file ([`scan`]), the user's filters ([`selection`], [`time`]) applied to
//! it ([`slice`](mod@slice)), and a writer per format, all with one signature ([`Writer`]); the
//! comparison of two captures is [`diff`], with one signature too ([`DiffWriter`]).

pub mod diff;
pub mod error;
pub mod folded;
pub mod json;
pub mod pprof;
pub mod progress;
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
pub use scan::{Scan, ScanOptions};
pub use selection::Selection;
pub use slice::Slice;

/// What an output is asked for beyond the selection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportOptions {
    /// How many functions the ranked outputs list (text and JSON reports, diff text and
    /// JSON); `None`: the text forms show [`DEFAULT_TOP`], JSON every function. The other
    /// formats keep every stack and ignore it.
    pub top: Option<usize>,
}

/// Rows a text table shows when `--top` is not given.
pub const DEFAULT_TOP: usize = 30;

/// The contract every report format's `write` follows: the selected samples, written to
/// `out` as they are produced (an output can be far larger than the capture).
pub type Writer = fn(&Slice, &ExportOptions, &mut dyn Write) -> Result<(), ExportError>;

/// The same for an output comparing two selections (`base`, then `new`).
pub type DiffWriter = fn(&Slice, &Slice, &ExportOptions, &mut dyn Write) -> Result<(), ExportError>;

/// `hotspot report`'s formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Folded,
    Svg,
    Pprof,
    Speedscope,
}

impl Format {
    /// The writer of this format.
    pub fn writer(self) -> Writer {
        match self {
            Format::Text => text::write,
            Format::Json => json::write,
            Format::Folded => folded::write,
            Format::Svg => svg::write,
            Format::Pprof => pprof::write,
            Format::Speedscope => speedscope::write,
        }
    }

    /// Writes `slice` in this format.
    pub fn write(
        self,
        slice: &Slice,
        options: &ExportOptions,
        out: &mut dyn Write,
    ) -> Result<(), ExportError> {
        self.writer()(slice, options, out)
    }

    /// [`Format::write`] into memory.
    pub fn render(self, slice: &Slice, options: &ExportOptions) -> Result<Vec<u8>, ExportError> {
        let mut out = Vec::new();
        self.write(slice, options, &mut out)?;
        Ok(out)
    }

    /// Whether the output is binary (never for a terminal).
    pub fn is_binary(self) -> bool {
        self == Format::Pprof
    }

    /// Whether [`ExportOptions::top`] means anything to this format.
    pub fn is_ranked(self) -> bool {
        matches!(self, Format::Text | Format::Json)
    }

    /// Whether the scan must keep the samples' time order (see [`ScanOptions`]).
    pub fn needs_order(self) -> bool {
        self == Format::Speedscope
    }
}

/// `hotspot diff`'s formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffFormat {
    Text,
    Json,
    Folded,
}

impl DiffFormat {
    /// The writer of this format.
    pub fn writer(self) -> DiffWriter {
        match self {
            DiffFormat::Text => diff::write_text,
            DiffFormat::Json => diff::write_json,
            DiffFormat::Folded => diff::write_folded,
        }
    }

    /// Writes the comparison of `base` and `new` in this format.
    pub fn write(
        self,
        base: &Slice,
        new: &Slice,
        options: &ExportOptions,
        out: &mut dyn Write,
    ) -> Result<(), ExportError> {
        self.writer()(base, new, options, out)
    }

    /// [`DiffFormat::write`] into memory.
    pub fn render(
        self,
        base: &Slice,
        new: &Slice,
        options: &ExportOptions,
    ) -> Result<Vec<u8>, ExportError> {
        let mut out = Vec::new();
        self.write(base, new, options, &mut out)?;
        Ok(out)
    }
}

/// `100 * part / whole`, rounded to two decimals (0 for an empty whole): every
/// percentage the JSON documents carry.
pub(crate) fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        return 0.0;
    }
    (10_000.0 * part as f64 / whole as f64).round() / 100.0
}
