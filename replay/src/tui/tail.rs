//! Reading the capture the views show, finished or still growing: the same follower for
//! `view FILE` and for live mode (where the recorder writes the file being read).

use std::fs::File;
use std::path::Path;

use hotspot_format::{Event, Follower, FormatError};

use crate::error::ReplayError;

/// A capture file being read as it grows.
#[derive(Debug)]
pub struct Tail {
    follower: Follower<File>,
}

impl Tail {
    pub fn open(path: &Path) -> Result<Tail, ReplayError> {
        let io = |source| ReplayError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(io)?;
        ReplayError::check_file(path, &file.metadata().map_err(io)?)?;
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
