//! Errors of the replay side: one line each, naming the file and what to do.

use std::path::PathBuf;

use hotspot_format::FormatError;

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0} is a directory, not a capture file")]
    NotAFile(PathBuf),
    #[error("{path}: {source}")]
    Format {
        path: PathBuf,
        #[source]
        source: FormatError,
    },
    #[error(transparent)]
    Bytes(#[from] FormatError),
}

impl ReplayError {
    /// Names the file in an error that came from bytes.
    pub fn with_path(self, path: &std::path::Path) -> ReplayError {
        match self {
            ReplayError::Bytes(source) => ReplayError::Format {
                path: path.to_path_buf(),
                source,
            },
            other => other,
        }
    }
}
