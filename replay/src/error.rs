//! Errors of the replay side: one line each, naming the file and what to do. A message names
//! the file (and what was being done); the cause, where there is one, is its `source()`,
//! which the binary joins after it: `x.hsp: not a hotspot capture: …`.

use std::path::PathBuf;

use hotspot_format::FormatError;

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("{path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{0} is a directory holding no flight-recorder segments (seg-*.hsp): give a capture \
         file, or the -o DIR of `hotspot record --keep`"
    )]
    NotAFile(PathBuf),
    /// A device, pipe or socket: never mapped or read whole (`/dev/zero` has no end).
    #[error("{0} is not a regular file (a device, pipe or socket): give a capture file")]
    NotRegular(PathBuf),
    #[error("{path}")]
    Format {
        path: PathBuf,
        #[source]
        source: FormatError,
    },
    #[error(transparent)]
    Bytes(#[from] FormatError),
}

impl ReplayError {
    /// Refuses what is not a regular file, before it is mapped or read.
    pub fn check_file(path: &std::path::Path, meta: &std::fs::Metadata) -> Result<(), ReplayError> {
        if meta.is_dir() {
            Err(ReplayError::NotAFile(path.to_path_buf()))
        } else if !meta.is_file() {
            Err(ReplayError::NotRegular(path.to_path_buf()))
        } else {
            Ok(())
        }
    }

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
