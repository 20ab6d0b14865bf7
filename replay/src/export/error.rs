//! Errors of the headless outputs: one line each, naming the problem and, where there is
//! one, what to do instead. The cause of a failed render is its `source()`.

use crate::error::ReplayError;
use crate::time::TimeError;

impl ExportError {
    /// The I/O error behind a failed write, if that is what this is.
    pub fn io(&self) -> Option<&std::io::Error> {
        match self {
            ExportError::Io(e) | ExportError::Render { source: e, .. } => Some(e),
            _ => None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The capture could not be opened or is not one this version reads.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// A `--from`/`--to` that cannot be placed, or a window that holds nothing.
    #[error(transparent)]
    Time(#[from] TimeError),
    /// `--thread`/`--tid` names a thread the capture does not have.
    #[error("unknown thread {0}")]
    UnknownThread(String),
    /// `--pid` names a process the capture does not have.
    #[error("unknown process {0}")]
    UnknownProcess(String),
    /// A flame graph of nothing: the capture, or what the filters keep, has no samples.
    #[error(
        "{0}: no samples to draw a flame graph of (`hotspot info` shows what the capture \
         holds; widen --from/--to or the thread filters)"
    )]
    NoSamples(String),
    /// `--metric off-cpu` or `wall` on a capture recorded without off-CPU time: an empty
    /// report would read as "no thread ever waited".
    #[error("{0} has no off-CPU data: record with --off-cpu (or use --metric cpu)")]
    NoOffCpu(String),
    /// An output too large to produce within its memory bound.
    #[error("{0}")]
    TooLarge(String),
    /// Writing a streamed output failed (a closed pipe, a full disk). Transparent, so
    /// the message is the system's and the chain reaches the `io::Error`.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// An exporter's output could not be produced.
    #[error("{what}")]
    Render {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
}
