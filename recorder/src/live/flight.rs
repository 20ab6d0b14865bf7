//! A flight recorder's segments as one recording writes them (`record --keep/--max-size
//! -o DIR`): each segment a new capture file in the history's directory with its own
//! session header, the history's budgets applied before each one starts and at the end.
//! The recording itself is one (see [`crate::Recorder::run_segments`]): the BPF programs,
//! what is known of the processes and the symboliser are set up once, not per segment.

use std::collections::VecDeque;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use hotspot_format::{Scrubbed, Writer};

use super::history::{self, Budget};
use super::machine;
use super::session::Observer;
use crate::convert::Totals;
use crate::error::RecorderError;
use crate::recording::Segments;

/// Where and how a flight recorder keeps its history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flight {
    /// The history's directory (it must exist: see [`check_dir`]).
    pub dir: PathBuf,
    /// The time each segment covers.
    pub segment: Duration,
    pub budget: Budget,
}

/// What every segment's session header says besides its start.
pub(super) struct HeaderFacts {
    pub freq: u32,
    pub targets: Vec<u32>,
    pub all: bool,
    pub command_line: Vec<String>,
}

/// The segments of one recording.
pub(super) struct FlightSegments<'a> {
    flight: &'a Flight,
    facts: HeaderFacts,
    scrub: Option<Scrubbed>,
    observer: &'a mut dyn Observer,
    /// The largest segment so far: room is left for the next to be half as large again
    /// (segments of a steady load varied by ±20% here).
    largest: u64,
    /// The segments started and not yet ended, oldest first, with when each began (the
    /// next is started before the last ends: two at most).
    open: VecDeque<(PathBuf, Instant)>,
}

impl<'a> FlightSegments<'a> {
    pub fn new(
        flight: &'a Flight,
        facts: HeaderFacts,
        scrub: Option<Scrubbed>,
        observer: &'a mut dyn Observer,
    ) -> Self {
        FlightSegments {
            flight,
            facts,
            scrub,
            observer,
            largest: 0,
            open: VecDeque::new(),
        }
    }

    /// Applies the budgets to the finished segments (`next_bytes`: room for one to come).
    fn prune(&mut self, next_bytes: u64) -> Result<(), RecorderError> {
        let gone = history::prune(&self.flight.dir, &self.flight.budget, next_bytes)?;
        if !gone.is_empty() {
            self.observer.segments_removed(gone.len());
        }
        Ok(())
    }

    /// The recording ended: the budgets once more, with no segment to come.
    pub fn close(mut self) -> Result<(), RecorderError> {
        self.prune(0)
    }
}

impl Segments<File> for FlightSegments<'_> {
    fn length(&self) -> Duration {
        self.flight.segment
    }

    fn start(&mut self) -> Result<Writer<File>, RecorderError> {
        self.prune(self.largest + self.largest / 2)?;
        let f = &self.facts;
        let header = machine::header(
            Path::new("/proc"),
            f.freq,
            &f.targets,
            f.all,
            f.command_line.clone(),
        );
        let mut start = SystemTime::UNIX_EPOCH + Duration::from_nanos(header.start_wall_ns);
        let mut path = history::segment_path(&self.flight.dir, start);
        // Names are to the millisecond: a segment never replaces the one before.
        while std::fs::symlink_metadata(&path).is_ok() {
            start += Duration::from_millis(1);
            path = history::segment_path(&self.flight.dir, start);
        }
        // An empty file is what a recorder killed while opening it leaves.
        let file = crate::capture_file::open_capture(&path, |b| {
            b.is_empty() || b.starts_with(&hotspot_format::header::MAGIC)
        })?;
        let writer = match self.scrub {
            Some(what) => Writer::scrubbing(file, header, what)?,
            None => Writer::new(file, header)?,
        };
        self.open.push_back((path, Instant::now()));
        Ok(writer)
    }

    fn ended(&mut self, out: File, totals: &Totals) -> Result<(), RecorderError> {
        // Always set: the recording starts each segment it ends.
        let (path, began) = self
            .open
            .pop_front()
            .unwrap_or_else(|| (PathBuf::new(), Instant::now()));
        out.sync_all().map_err(|source| RecorderError::Sync {
            path: path.clone(),
            source,
        })?;
        let bytes = out.metadata().map_or(totals.bytes, |m| m.len());
        self.largest = self.largest.max(bytes);
        self.observer.segment_ended(&path, bytes, began.elapsed());
        Ok(())
    }
}

/// The history's directory must be the recorder's own: segments are created and removed
/// after privileges are dropped, when root no longer writes where modes forbid it.
pub fn check_dir(dir: &Path) -> Result<(), RecorderError> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(dir).map_err(|source| RecorderError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if !meta.is_dir() {
        return Err(RecorderError::Other(format!(
            "{} is not a directory: --keep and --max-size record into a directory of segments",
            dir.display()
        )));
    }
    if meta.uid() != me || meta.mode() & 0o300 != 0o300 {
        return Err(RecorderError::Other(format!(
            "{} must be a directory owned and writable by uid {me}, who records: the flight recorder writes its segments after giving up the right to write elsewhere (choose a new -o DIR and hotspot creates it)",
            dir.display()
        )));
    }
    Ok(())
}
