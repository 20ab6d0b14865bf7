//! A capture file on disk: the one place a path is opened for reading, and the tail of a
//! file still being written. [`open`] refuses what is not a regular file before anything
//! is read and names the file in every error; [`Capture::open`](crate::Capture::open)
//! reads what it opens whole, [`Scan::open`](crate::export::Scan::open) maps it, and
//! [`Tail`] follows it as it grows (`view FILE`, and live mode, where the recorder writes
//! the file being read).

use std::fs::{File, Metadata, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use hotspot_format::{Event, Follower, FormatError};

use crate::error::ReplayError;

/// Opens the capture file at `path` for reading, with its metadata: a directory, device,
/// pipe or socket is refused (never mapped or read: `/dev/zero` has no end), and an I/O
/// error names the file. Checked on the file opened, not the path, so nothing can swap
/// it in between; opened non-blocking, since opening a FIFO to read waits for a writer
/// that may never come (a regular file's reads ignore the flag).
pub fn open(path: &Path) -> Result<(File, Metadata), ReplayError> {
    let io = |source| ReplayError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    ReplayError::check_file(path, &meta)?;
    Ok((file, meta))
}

/// A capture file being read as it grows.
#[derive(Debug)]
pub struct Tail {
    follower: Follower<File>,
}

impl Tail {
    /// Opens the file at `path` to follow it from its start.
    pub fn open(path: &Path) -> Result<Tail, ReplayError> {
        let (file, _) = open(path)?;
        Ok(Tail {
            follower: Follower::new(file),
        })
    }

    /// Blocks that landed since the last call.
    pub fn poll(&mut self) -> Result<Vec<Event>, FormatError> {
        self.follower.poll()
    }

    /// More bytes are waiting than the last poll took in.
    pub fn behind(&self) -> bool {
        self.follower.behind()
    }

    /// The file header has landed.
    pub fn has_header(&self) -> bool {
        self.follower.header().is_some()
    }

    /// The end marker was read: nothing more will come.
    pub fn finished(&self) -> bool {
        self.follower.finished()
    }
}
