//! A flight recorder's history read as one capture: the directory's segments
//! (`hotspot_format::segment`'s names), oldest first, each opened as any capture file is
//! (a FIFO or device named like a segment is refused), merged into one capture in memory
//! by `hotspot_format::merge` (ids mapped, definitions written once). The opener
//! ([`crate::file::open_capture`]) hands a directory here, so `report`, `info`, `diff` and
//! the views read a history as they read a file; `snapshot` writes a window of it.
//!
//! The views follow a history as it grows ([`Growing`]): the same merge, fed the newest
//! segment block by block as the recorder writes it, and each newer segment once it
//! appears, into one growing capture's bytes that [`crate::file::Tail`] reads as it reads
//! a growing file.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use hotspot_format::merge::{Merged, Merger, Window};
use hotspot_format::{Follower, FormatError, Scrubbed};

use crate::error::ReplayError;
use crate::pipe::Pipe;

/// The segment files in `dir`, oldest first; an error if there are none.
pub fn segments(dir: &Path) -> Result<Vec<PathBuf>, ReplayError> {
    let out = listing(dir)?;
    if out.is_empty() {
        return Err(ReplayError::NotAFile(dir.to_path_buf()));
    }
    Ok(out)
}

/// The segment files in `dir`, oldest first, maybe none.
fn listing(dir: &Path) -> Result<Vec<PathBuf>, ReplayError> {
    let io = |source| ReplayError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        if hotspot_format::segment::is_name(&entry.file_name().to_string_lossy()) {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}

/// Every segment mapped, oldest first: what a reader that needs them all at once (a
/// snapshot places its window on the whole history before merging) holds as the page
/// cache's, not its own memory, whatever the history's size. A segment removed by the
/// recorder's budget between the listing and the mapping is left out; any other failure
/// names the segment.
pub fn map_segments(dir: &Path) -> Result<Vec<memmap2::Mmap>, ReplayError> {
    let mut out = Vec::new();
    for path in segments(dir)? {
        let Some(file) = open_segment(&path)? else {
            continue;
        };
        // SAFETY: read-only and private; the recorder only appends to a segment (what it
        // adds past the mapped length is not seen) and removes whole files, which leaves
        // a mapping valid. A file truncated under us by something else would fault,
        // mmap's known hazard (as `export::Scan` maps a capture).
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|source| ReplayError::Io {
            path: path.clone(),
            source,
        })?;
        out.push(map);
    }
    Ok(out)
}

/// A segment's bytes, or `None` if the recorder's budget removed it since it was listed.
fn read_segment(path: &Path) -> Result<Option<Vec<u8>>, ReplayError> {
    let Some(mut file) = open_segment(path)? else {
        return Ok(None);
    };
    let mut data = Vec::new();
    file.read_to_end(&mut data)
        .map_err(|source| ReplayError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(Some(data))
}

/// A segment opened (as any capture file is), or `None` if it is gone.
fn open_segment(path: &Path) -> Result<Option<File>, ReplayError> {
    match crate::file::open(path) {
        Ok((file, _)) => Ok(Some(file)),
        Err(ReplayError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The history in `dir` as one capture's bytes: what lies in `window`, scrubbed of
/// `scrub` when given.
///
/// One segment is read at a time and let go of once merged: the reader holds the merged
/// capture and the segment being read, not the whole history twice.
pub fn merged(
    dir: &Path,
    window: Window,
    scrub: Option<Scrubbed>,
) -> Result<(Vec<u8>, Merged), ReplayError> {
    let format = |source| ReplayError::Format {
        path: dir.to_path_buf(),
        source,
    };
    let mut merger = Merger::new(Vec::new(), window, scrub);
    for path in segments(dir)? {
        if let Some(data) = read_segment(&path)? {
            merger.segment(&data).map_err(format)?;
        }
    }
    merger.finish().map_err(format)
}

/// A history read as it grows, merged into one capture's bytes written to a [`Pipe`]:
/// the segments there at opening whole, as [`merged`] reads them, then the newest one
/// block by block as it lands ([`Follower`]), and each newer segment once it appears.
///
/// The recorder starts a segment once the previous one's recorder has exited
/// (`src/flight.rs`), so a segment is complete when a newer one appears: the one followed
/// is then read to its end (a SIGKILLed recorder's unfinished last block is never
/// returned by the follower, so it is left out), segments between are read whole, and
/// the newest is followed. Segments the recorder's budget removes are never read again:
/// what they held stays in the merge (and in a view), since a view shows the history it
/// has read, not only what is still on disk.
#[derive(Debug)]
pub struct Growing {
    dir: PathBuf,
    merger: Merger<Pipe>,
    /// The segment followed, with its path.
    current: Option<(PathBuf, Follower<File>)>,
    /// The newest segment taken (read or followed): later names are new.
    last: Option<PathBuf>,
}

impl Growing {
    /// Opens the history in `dir` (an error if it holds no segment) and merges what it
    /// holds now; returns the pipe's reading end.
    pub fn open(dir: &Path) -> Result<(Growing, Pipe), ReplayError> {
        let pipe = Pipe::new();
        let mut g = Growing {
            dir: dir.to_path_buf(),
            merger: Merger::new(pipe.clone(), Window::default(), None),
            current: None,
            last: None,
        };
        let mut all = segments(dir)?;
        let newest = all.pop();
        g.take(all, newest)?;
        g.merger.flush().map_err(|e| g.format(e))?;
        Ok((g, pipe))
    }

    /// Reads what the history gained since the last call into the pipe: the followed
    /// segment's new blocks (a bounded amount, as a follower reads), and any newer
    /// segment. True when more is already there to read.
    pub fn pump(&mut self) -> Result<bool, ReplayError> {
        let mut newer: Vec<PathBuf> = listing(&self.dir)?
            .into_iter()
            .filter(|p| self.last.as_ref().is_none_or(|l| p > l))
            .collect();
        let behind = match newer.pop() {
            Some(newest) => {
                self.drain()?;
                self.take(newer, Some(newest))?;
                true
            }
            None => self.step()?,
        };
        self.merger.flush().map_err(|e| self.format(e))?;
        Ok(behind)
    }

    /// What was merged so far.
    pub fn stats(&self) -> Merged {
        self.merger.stats()
    }

    /// Takes complete segments `whole` (read whole), then follows `newest`.
    fn take(&mut self, whole: Vec<PathBuf>, newest: Option<PathBuf>) -> Result<(), ReplayError> {
        for path in whole {
            if let Some(data) = read_segment(&path)? {
                self.merger
                    .segment(&data)
                    .map_err(|source| ReplayError::Format {
                        path: path.clone(),
                        source,
                    })?;
            }
            self.last = Some(path);
        }
        if let Some(path) = newest {
            self.current = open_segment(&path)?.map(|f| (path.clone(), Follower::new(f)));
            if self.current.is_some() {
                self.merger.follow_segment();
            }
            self.last = Some(path);
            self.step()?;
        }
        Ok(())
    }

    /// Reads the followed segment to its end (it is complete).
    fn drain(&mut self) -> Result<(), ReplayError> {
        while self.step()? {}
        self.current = None;
        Ok(())
    }

    /// One read of the followed segment into the merge; true when more is waiting.
    fn step(&mut self) -> Result<bool, ReplayError> {
        let Some((path, follower)) = self.current.as_mut() else {
            return Ok(false);
        };
        let events = follower.poll().map_err(|source| ReplayError::Format {
            path: path.clone(),
            source,
        })?;
        for event in events {
            self.merger
                .block(event)
                .map_err(|source| ReplayError::Format {
                    path: self.dir.clone(),
                    source,
                })?;
        }
        Ok(follower.behind())
    }

    fn format(&self, source: FormatError) -> ReplayError {
        ReplayError::Format {
            path: self.dir.clone(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::BTreeMap;

    use hotspot_format::{
        Frame, FrameAddr, Module, ModuleKind, Process, Record, Sample, SessionHeader, SourceLoc,
        Stack, Symbol, Thread, Writer,
    };

    use super::*;
    use crate::Capture;
    use crate::file::Tail;

    const S: u64 = 1_000_000_000;

    /// A segment's writer: segment `k` (named for its start, `k` seconds in) whose module,
    /// frame and stack 0 are `lib{k}`'s `work{k}`: the same ids as every other segment's,
    /// meaning something else, as separate recorder processes write them.
    fn segment(dir: &Path, k: u64) -> Writer<File> {
        let path = dir.join(hotspot_format::segment::name(u128::from(
            1_000_000 + k * 1000,
        )));
        let session = SessionHeader {
            host: "box".into(),
            freq_hz: 100,
            all_processes: true,
            start_mono_ns: k * S,
            ..SessionHeader::default()
        };
        let mut w = Writer::new(File::create(path).unwrap(), session).unwrap();
        w.push(Record::Module(Module {
            id: 0,
            kind: ModuleKind::Elf,
            path: format!("/usr/lib/lib{k}.so"),
            build_id: vec![k as u8],
        }))
        .unwrap();
        let function = w.intern(&format!("work{k}"));
        w.push(Record::Frame(Frame {
            id: 0,
            module: 0,
            addr: FrameAddr::FileOffset(0x1000),
        }))
        .unwrap();
        w.push(Record::Symbol(Symbol {
            frame: 0,
            function,
            loc: SourceLoc::default(),
            inlined: Vec::new(),
        }))
        .unwrap();
        w.push(Record::Stack(Stack {
            id: 0,
            frames: vec![0],
        }))
        .unwrap();
        w.push(Record::Process(Process {
            pid: 10,
            ppid: 1,
            name: "app".into(),
            cmdline: vec!["app".into()],
            exe: "/usr/bin/app".into(),
            start_ns: 0,
        }))
        .unwrap();
        w.push(Record::Thread(Thread {
            tid: 10,
            pid: 10,
            name: "app".into(),
            time_ns: 0,
        }))
        .unwrap();
        w
    }

    /// `n` samples of stack 0 from `from` ms into segment `k`, written out as a block.
    fn samples(w: &mut Writer<File>, k: u64, from: u64, n: u64) {
        for i in from..from + n {
            w.push_sample(Sample {
                time_ns: k * S + i * 1_000_000,
                tid: 10,
                cpu: 0,
                stack: 0,
            })
            .unwrap();
        }
        w.flush_block().unwrap();
    }

    /// Samples per leaf function name.
    fn by_function(c: &Capture) -> BTreeMap<String, usize> {
        let mut out = BTreeMap::new();
        for s in &c.samples {
            let frame = c.stacks[&s.stack][0];
            let name = c.string(c.symbols[&frame].function).unwrap().to_string();
            *out.entry(name).or_insert(0) += 1;
        }
        out
    }

    /// Polls `tail` until it has nothing more, folding what it returns into `c`.
    fn catch_up(tail: &mut Tail, c: &mut Capture) {
        loop {
            let events = tail.poll().unwrap();
            let more = !events.is_empty() || tail.behind();
            for e in events {
                c.apply(e);
            }
            if !more {
                return;
            }
        }
    }

    fn counts(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
        pairs.iter().map(|&(n, c)| (n.to_string(), c)).collect()
    }

    #[test]
    fn a_history_is_followed_through_its_newest_segment_and_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let mut w1 = segment(dir.path(), 1);
        samples(&mut w1, 1, 0, 10);
        w1.finish(0, 2 * S, 0).unwrap();
        // Segment 2 is being written: one block has landed.
        let mut w2 = segment(dir.path(), 2);
        samples(&mut w2, 2, 0, 5);

        let mut tail = Tail::open(dir.path()).unwrap();
        let mut seen = Capture::default();
        catch_up(&mut tail, &mut seen);
        assert_eq!(by_function(&seen), counts(&[("work1", 10), ("work2", 5)]));

        // More of segment 2 lands: followed.
        samples(&mut w2, 2, 5, 7);
        catch_up(&mut tail, &mut seen);
        assert_eq!(by_function(&seen), counts(&[("work1", 10), ("work2", 12)]));

        // Segment 2 ends with a last block; segment 3 starts after the view opened.
        samples(&mut w2, 2, 12, 3);
        w2.finish(0, 3 * S, 0).unwrap();
        let mut w3 = segment(dir.path(), 3);
        samples(&mut w3, 3, 0, 4);
        // What the history reads as one capture now, before the budget removes segment 1.
        let whole = by_function(&Capture::open(dir.path()).unwrap());
        std::fs::remove_file(dir.path().join(hotspot_format::segment::name(1_001_000))).unwrap();
        catch_up(&mut tail, &mut seen);
        let followed = by_function(&seen);
        assert_eq!(
            followed,
            counts(&[("work1", 10), ("work2", 15), ("work3", 4)])
        );
        // Followed block by block, the history merges as it does whole.
        assert_eq!(followed, whole);
        assert!(seen.end.is_none(), "a followed history never ends");

        // With its first segment gone the history still opens, and is still followed.
        samples(&mut w3, 3, 4, 6);
        catch_up(&mut tail, &mut seen);
        assert_eq!(by_function(&seen)["work3"], 10);
        let mut again = Capture::default();
        let mut fresh = Tail::open(dir.path()).unwrap();
        catch_up(&mut fresh, &mut again);
        assert_eq!(by_function(&again), counts(&[("work2", 15), ("work3", 10)]));
    }

    #[test]
    fn a_history_whose_only_segment_has_no_block_yet_waits_for_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::File::create(dir.path().join(hotspot_format::segment::name(5))).unwrap();
        let mut tail = Tail::open(dir.path()).unwrap();
        let mut seen = Capture::default();
        catch_up(&mut tail, &mut seen);
        assert!(!tail.has_header() && seen.samples.is_empty());
        // A newer segment's blocks arrive.
        let mut w = segment(dir.path(), 1);
        samples(&mut w, 1, 0, 3);
        catch_up(&mut tail, &mut seen);
        assert!(tail.has_header());
        assert_eq!(by_function(&seen), counts(&[("work1", 3)]));
    }

    #[test]
    fn a_segment_that_is_no_capture_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = segment(dir.path(), 1);
        samples(&mut w, 1, 0, 3);
        let mut tail = Tail::open(dir.path()).unwrap();
        let mut seen = Capture::default();
        catch_up(&mut tail, &mut seen);
        let junk = dir.path().join(hotspot_format::segment::name(9_999_999));
        std::fs::write(&junk, vec![0x55u8; 4096]).unwrap();
        let err = tail.poll().unwrap_err().to_string();
        assert!(err.contains(&junk.display().to_string()), "{err}");
    }
}
