//! Why a file could not be used for symbols. Each message names the file and what was
//! being done; the cause is the `#[source]`, not repeated in the message.

use std::path::PathBuf;

/// A failure to read or symbolise one file. Callers decide how much it costs: a module
/// whose file cannot be read keeps its frames unnamed, never fails a recording.
#[derive(Debug, thiserror::Error)]
pub enum SymbolsError {
    /// The file could not be opened or read.
    #[error("reading {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is not an ELF object `object` can parse.
    #[error("{path} is not a readable ELF file")]
    NotElf {
        path: PathBuf,
        #[source]
        source: object::Error,
    },
    /// blazesym could not symbolise addresses in the file.
    #[error("symbolising addresses in {path}")]
    Symbolize {
        path: PathBuf,
        #[source]
        source: blazesym::Error,
    },
}
