//! The output formats, listed once: `report`'s ([`Format`]) and `diff`'s ([`DiffFormat`]),
//! each with the name `--format` takes, the line `--help` gives it and its writer. The
//! command line builds its choices from [`Format::ALL`] and [`DiffFormat::ALL`], and the
//! tests that walk every format read the same lists.

use std::fmt;
use std::io::Write;
use std::str::FromStr;

use super::{
    DiffWriter, ExportError, ExportOptions, Slice, Writer, diff, folded, json, pprof, speedscope,
    svg, text,
};

/// A `--format` value that names no format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown format '{0}'")]
pub struct UnknownFormat(pub String);

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
    /// Every format, in the order `--help` lists them.
    pub const ALL: [Format; 6] = [
        Format::Text,
        Format::Json,
        Format::Folded,
        Format::Svg,
        Format::Pprof,
        Format::Speedscope,
    ];

    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Folded => "folded",
            Format::Svg => "svg",
            Format::Pprof => "pprof",
            Format::Speedscope => "speedscope",
        }
    }

    /// What the format is, as `--help` says it.
    pub fn about(self) -> &'static str {
        match self {
            Format::Text => "The flat profile: top functions by self samples",
            Format::Json => "The `hotspot-report` JSON document (docs/json-schema.md)",
            Format::Folded => "`a;b;c N` lines for flame-graph tools",
            Format::Svg => "A self-contained interactive flame graph",
            Format::Pprof => "Gzipped profile.proto for go tool pprof, Pyroscope, Parca (binary)",
            Format::Speedscope => "speedscope's file format, one profile per thread",
        }
    }

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

    /// Whether the scan must keep the samples' time order (see [`ScanOptions`](super::ScanOptions)).
    pub fn needs_order(self) -> bool {
        self == Format::Speedscope
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Format, UnknownFormat> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| UnknownFormat(crate::sanitize::display(s)))
    }
}

/// `hotspot diff`'s formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffFormat {
    Text,
    Json,
    Folded,
    Svg,
}

impl DiffFormat {
    /// Every format, in the order `--help` lists them.
    pub const ALL: [DiffFormat; 4] = [
        DiffFormat::Text,
        DiffFormat::Json,
        DiffFormat::Folded,
        DiffFormat::Svg,
    ];

    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            DiffFormat::Text => "text",
            DiffFormat::Json => "json",
            DiffFormat::Folded => "folded",
            DiffFormat::Svg => "svg",
        }
    }

    /// What the format is, as `--help` says it.
    pub fn about(self) -> &'static str {
        match self {
            DiffFormat::Text => "Functions by change of share, largest first",
            DiffFormat::Json => "The `hotspot-diff` JSON document (docs/json-schema.md)",
            DiffFormat::Folded => "`stack count_base count_new` lines (differential flame graphs)",
            DiffFormat::Svg => {
                "A differential flame graph: width by the new capture, red grew, blue shrank"
            }
        }
    }

    /// The writer of this format.
    pub fn writer(self) -> DiffWriter {
        match self {
            DiffFormat::Text => diff::write_text,
            DiffFormat::Json => diff::write_json,
            DiffFormat::Folded => diff::write_folded,
            DiffFormat::Svg => diff::write_svg,
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

impl fmt::Display for DiffFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DiffFormat {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<DiffFormat, UnknownFormat> {
        DiffFormat::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| UnknownFormat(crate::sanitize::display(s)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back() {
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>(), Ok(f));
        }
        for f in DiffFormat::ALL {
            assert_eq!(f.name().parse::<DiffFormat>(), Ok(f));
        }
        assert_eq!(
            "pprof".parse::<DiffFormat>().map_err(|e| e.to_string()),
            Err("unknown format 'pprof'".to_string())
        );
    }
}
