//! Marks dropped into a flight recorder's directory (`hotspot mark DIR TEXT`): one small
//! file each, `mark-<monotonic ns>-<pid>.txt` holding the time on its first line and the
//! text after it, written under a hidden name and renamed, so a recorder never reads half
//! of one. The recorder writing the current segment takes them at each block and writes
//! them as `Mark` records; a mark dropped while no segment is being written is taken by
//! the next one, with its own time.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use hotspot_format::Mark;
use hotspot_format::limits::MAX_MARK_BYTES;

use crate::error::RecorderError;

const PREFIX: &str = "mark-";
const SUFFIX: &str = ".txt";

/// Now on CLOCK_MONOTONIC, the samples' clock.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    }
    u64::try_from(ts.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(ts.tv_nsec).unwrap_or(0)
}

/// The text a mark keeps: at most [`MAX_MARK_BYTES`], cut at a character boundary.
fn capped(text: &str) -> &str {
    let mut at = text.len().min(MAX_MARK_BYTES);
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    &text[..at]
}

/// Drops a mark reading `text` at `time_ns` into `dir`; returns its file.
pub fn drop_mark(dir: &Path, time_ns: u64, text: &str) -> Result<PathBuf, RecorderError> {
    let name = format!("{PREFIX}{time_ns:020}-{}{SUFFIX}", std::process::id());
    let tmp = dir.join(format!(".{name}.tmp"));
    let path = dir.join(name);
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| RecorderError::Io { path: p, source }
    };
    std::fs::write(&tmp, format!("{time_ns}\n{}", capped(text))).map_err(io(&tmp))?;
    std::fs::rename(&tmp, &path).map_err(io(&path))?;
    Ok(path)
}

/// Takes (reads and removes) the marks waiting in `dir`, oldest first. A file that is not
/// a mark is left alone; one that cannot be read is left for the next look.
pub fn take(dir: &Path) -> Vec<Mark> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .map(|n| n.to_string_lossy())
                .is_some_and(|n| n.starts_with(PREFIX) && n.ends_with(SUFFIX))
        })
        .collect();
    names.sort();
    let mut out = Vec::new();
    for path in names {
        if let Some(mark) = read(&path)
            && std::fs::remove_file(&path).is_ok()
        {
            out.push(mark);
        }
    }
    out
}

/// One mark file: a regular file (never through a link), small, time then text.
fn read(path: &Path) -> Option<Mark> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    f.take(MAX_MARK_BYTES as u64 + 32)
        .read_to_end(&mut bytes)
        .ok()?;
    let s = String::from_utf8_lossy(&bytes);
    let (time, text) = s.split_once('\n')?;
    Some(Mark {
        time_ns: time.trim().parse().ok()?,
        text: capped(text).to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropped_marks_are_taken_once_in_time_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        drop_mark(dir.path(), 20, "second").expect("dropped");
        drop_mark(dir.path(), 10, "deploy 4.2").expect("dropped");
        std::fs::write(dir.path().join("seg-1.hsp"), "not a mark").expect("written");
        std::fs::write(dir.path().join("mark-x.txt"), "garbage").expect("written");
        let got = take(dir.path());
        assert_eq!(
            got,
            [
                Mark {
                    time_ns: 10,
                    text: "deploy 4.2".into()
                },
                Mark {
                    time_ns: 20,
                    text: "second".into()
                }
            ]
        );
        assert!(take(dir.path()).is_empty());
        assert!(dir.path().join("seg-1.hsp").exists());
        // Unreadable as a mark: left where it is, not taken.
        assert!(dir.path().join("mark-x.txt").exists());
        let long = "é".repeat(MAX_MARK_BYTES);
        drop_mark(dir.path(), 30, &long).expect("dropped");
        let got = take(dir.path());
        assert!(got[0].text.len() <= MAX_MARK_BYTES && got[0].text.len() > MAX_MARK_BYTES - 2);
    }
}
