//! A capture file on disk: the one place a path is opened for reading, and the tail of a
//! file still being written. [`open`] refuses what is not a regular file before anything
//! is read and names the file in every error; [`Capture::open`](crate::Capture::open)
//! reads what it opens whole, [`Scan::open`](crate::export::Scan::open) maps it, and
//! [`Tail`] follows it as it grows (`view FILE` and `view DIR`, and live mode, where the
//! recorder writes the file being read).

use std::fs::{File, Metadata, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use hotspot_format::{Event, Follower};

use crate::error::ReplayError;
use crate::history::Growing;
use crate::pipe::Pipe;

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

/// What a path given as a capture holds.
#[derive(Debug)]
pub enum Source {
    /// A capture file, opened.
    File(File, Metadata),
    /// A flight recorder's history, merged into one capture's bytes ([`crate::history`]).
    History(Vec<u8>),
}

/// Opens what `path` names as one capture: a capture file (as [`open`] does), or a
/// directory of segments, read as one capture. Devices, pipes and sockets are refused,
/// as names and as segments.
pub fn open_capture(path: &Path) -> Result<Source, ReplayError> {
    if is_dir(path)? {
        let (data, _) = crate::history::merged(path, Default::default(), None)?;
        return Ok(Source::History(data));
    }
    let (file, meta) = open(path)?;
    Ok(Source::File(file, meta))
}

/// Whether `path` names a directory (a history's); an error names it.
fn is_dir(path: &Path) -> Result<bool, ReplayError> {
    std::fs::metadata(path)
        .map(|m| m.is_dir())
        .map_err(|source| ReplayError::Io {
            path: path.to_path_buf(),
            source,
        })
}

/// A capture being read as it grows: a file, or a history's directory, whose segments are
/// merged as they grow into one capture's bytes ([`Growing`]), read the same way.
#[derive(Debug)]
pub struct Tail {
    follower: Follower<Input>,
    history: Option<Growing>,
    /// The history has more to merge at once.
    history_behind: bool,
}

/// What a [`Tail`] reads.
#[derive(Debug)]
enum Input {
    File(File),
    Pipe(Pipe),
}

impl Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Input::File(f) => f.read(buf),
            Input::Pipe(p) => p.read(buf),
        }
    }
}

impl Seek for Input {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        match self {
            Input::File(f) => f.seek(pos),
            Input::Pipe(p) => p.seek(pos),
        }
    }
}

impl Tail {
    /// Opens the capture at `path` to follow it from its start: a file, or a history's
    /// directory (the segments there now, then the newest as it grows and the next ones).
    pub fn open(path: &Path) -> Result<Tail, ReplayError> {
        let (input, history) = if is_dir(path)? {
            let (history, pipe) = Growing::open(path)?;
            (Input::Pipe(pipe), Some(history))
        } else {
            (Input::File(open(path)?.0), None)
        };
        Ok(Tail {
            follower: Follower::new(input),
            history,
            history_behind: false,
        })
    }

    /// Blocks that landed since the last call. A history takes in what its segments
    /// gained once what it merged before has been read.
    pub fn poll(&mut self) -> Result<Vec<Event>, ReplayError> {
        if let Some(h) = self.history.as_mut()
            && !self.follower.behind()
        {
            self.history_behind = h.pump()?;
        }
        Ok(self.follower.poll()?)
    }

    /// More bytes are waiting than the last poll took in.
    pub fn behind(&self) -> bool {
        self.follower.behind() || self.history_behind
    }

    /// The file header has landed.
    pub fn has_header(&self) -> bool {
        self.follower.header().is_some()
    }

    /// The end marker was read: nothing more will come (never, for a history: a newer
    /// segment may always start).
    pub fn finished(&self) -> bool {
        self.follower.finished()
    }
}
