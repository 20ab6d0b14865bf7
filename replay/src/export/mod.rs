//! Headless outputs of a capture for scripts, CI and other tools' viewers: one streaming
//! pass over the file ([`scan`]), the user's filters ([`selection`], [`time`]) applied to
//! it ([`slice`](mod@slice)), and a writer per format. The text report is [`crate::report`], the
//! comparison of two captures [`crate::diff`].

pub mod error;
pub mod folded;
pub mod json;
pub mod pprof;
pub mod progress;
pub mod scan;
pub mod selection;
pub mod slice;
pub mod speedscope;
pub mod svg;
pub mod time;

pub use error::ExportError;
pub use scan::{Scan, ScanOptions};
pub use selection::Selection;
pub use slice::Slice;
pub use time::TimeSpec;
