//! The recorder's one error type (the kernel seam's [`BpfError`] is one of its causes),
//! each a one-line message naming the problem and what to do. A message names what was
//! being done (and on which file); the cause, where there is one, is its `source()`,
//! which the binary joins after it: `PATH: Permission denied`.

use std::path::PathBuf;

use hotspot_format::FormatError;

use crate::bpf::BpfError;

#[derive(Debug, thiserror::Error)]
pub enum RecorderError {
    #[error(transparent)]
    Bpf(#[from] BpfError),
    #[error("writing the capture")]
    Format(#[from] FormatError),
    #[error("syncing {path}")]
    Sync {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "refusing to overwrite {0}: it exists and is not a hotspot capture (remove it or choose another -o)"
    )]
    NotACapture(PathBuf),
    #[error("{0} is a symbolic link: refusing to write a capture through it (choose another -o)")]
    Symlink(PathBuf),
    #[error("no process with pid {0} (check the pid with `ps -p {0}`)")]
    NoSuchProcess(u32),
    #[error("cannot start {cmd}")]
    Spawn {
        cmd: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Other(String),
}
