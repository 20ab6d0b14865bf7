//! A flight recorder's history: a directory of segments, each a whole capture of one
//! stretch of time (`seg-<start, Unix ms>.hsp`, so that name order is time order), and
//! the budgets that end the oldest ones. Both budgets hold; a segment goes as soon as
//! either says so:
//!
//! - **time** (`--keep`): a finished segment whose last write is older than the budget;
//! - **size** (`--max-size`): the oldest go while the finished ones, with room for the
//!   next segment (the caller's estimate of its size), would pass the budget, so the
//!   directory stays under it while the next segment is written.
//!
//! The newest finished segment is never removed by the size budget: a budget smaller than
//! one segment keeps the last one rather than nothing.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::error::RecorderError;

/// What a history keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Budget {
    /// Segments older than this go.
    pub keep: Option<Duration>,
    /// The directory's segments stay under this many bytes.
    pub max_bytes: Option<u64>,
}

/// One segment file of a history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub path: PathBuf,
    pub bytes: u64,
    /// Its last write.
    pub modified: SystemTime,
}

/// The path of a segment starting at `start` in `dir`.
pub fn segment_path(dir: &Path, start: SystemTime) -> PathBuf {
    let ms = start
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    dir.join(hotspot_format::segment::name(ms))
}

/// The segments in `dir`, oldest first (other files are left alone).
pub fn segments(dir: &Path) -> Result<Vec<Segment>, RecorderError> {
    let io = |source| RecorderError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !hotspot_format::segment::is_name(&name) {
            continue;
        }
        let meta = entry.metadata().map_err(io)?;
        if !meta.is_file() {
            continue;
        }
        out.push(Segment {
            path: entry.path(),
            bytes: meta.len(),
            modified: meta.modified().map_err(io)?,
        });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// Which of `finished` (oldest first) the budget ends at `now`, given that the next
/// segment may grow to `next_bytes`.
pub fn over_budget(
    finished: &[Segment],
    budget: &Budget,
    now: SystemTime,
    next_bytes: u64,
) -> Vec<PathBuf> {
    let mut gone = vec![false; finished.len()];
    if let Some(keep) = budget.keep {
        for (g, s) in gone.iter_mut().zip(finished) {
            *g = now.duration_since(s.modified).is_ok_and(|age| age > keep);
        }
    }
    if let Some(max) = budget.max_bytes {
        let mut total: u64 = finished
            .iter()
            .zip(&gone)
            .filter(|(_, g)| !**g)
            .map(|(s, _)| s.bytes)
            .sum::<u64>()
            + next_bytes;
        let newest = finished.len().saturating_sub(1);
        for (i, s) in finished.iter().enumerate().take(newest) {
            if total <= max {
                break;
            }
            if !gone[i] {
                gone[i] = true;
                total -= s.bytes;
            }
        }
    }
    finished
        .iter()
        .zip(gone)
        .filter(|(_, g)| *g)
        .map(|(s, _)| s.path.clone())
        .collect()
}

/// Removes the finished segments of `dir` that `budget` ends now; returns them.
pub fn prune(dir: &Path, budget: &Budget, next_bytes: u64) -> Result<Vec<PathBuf>, RecorderError> {
    let finished = segments(dir)?;
    let gone = over_budget(&finished, budget, SystemTime::now(), next_bytes);
    for path in &gone {
        match std::fs::remove_file(path) {
            Ok(()) => {}
            // Removed by someone else meanwhile: gone all the same.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(RecorderError::Io {
                    path: path.clone(),
                    source,
                });
            }
        }
    }
    Ok(gone)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(n: u64, bytes: u64, age_s: u64, now: SystemTime) -> Segment {
        Segment {
            path: PathBuf::from(format!("seg-{n:016}.hsp")),
            bytes,
            modified: now - Duration::from_secs(age_s),
        }
    }

    fn names(p: &[PathBuf]) -> Vec<String> {
        p.iter()
            .map(|p| p.to_string_lossy().trim_start_matches("seg-").to_string())
            .collect()
    }

    #[test]
    fn the_time_budget_ends_what_is_older() {
        let now = SystemTime::now();
        let s = [
            seg(1, 10, 400, now),
            seg(2, 10, 200, now),
            seg(3, 10, 10, now),
        ];
        let b = Budget {
            keep: Some(Duration::from_secs(300)),
            max_bytes: None,
        };
        assert_eq!(
            names(&over_budget(&s, &b, now, 0)),
            ["0000000000000001.hsp"]
        );
    }

    #[test]
    fn the_size_budget_leaves_room_for_the_next_segment_and_keeps_the_newest() {
        let now = SystemTime::now();
        let s = [
            seg(1, 100, 3, now),
            seg(2, 100, 2, now),
            seg(3, 100, 1, now),
        ];
        let b = Budget {
            keep: None,
            max_bytes: Some(300),
        };
        // 300 finished + 100 to come: the oldest goes.
        assert_eq!(
            names(&over_budget(&s, &b, now, 100)),
            ["0000000000000001.hsp"]
        );
        assert!(over_budget(&s, &b, now, 0).is_empty());
        // A budget below one segment keeps the newest only.
        let tiny = Budget {
            keep: None,
            max_bytes: Some(50),
        };
        assert_eq!(over_budget(&s, &tiny, now, 100).len(), 2);
        // Both budgets: the time ends the oldest, the size then the next.
        let both = Budget {
            keep: Some(Duration::from_millis(2500)),
            max_bytes: Some(150),
        };
        assert_eq!(
            names(&over_budget(&s, &both, now, 0)),
            ["0000000000000001.hsp", "0000000000000002.hsp"]
        );
    }

    #[test]
    fn prune_removes_files_and_leaves_others() {
        let dir = tempfile::tempdir().expect("tempdir");
        let now = SystemTime::now();
        for (i, age) in [(1u64, 100u64), (2, 50), (3, 1)] {
            let p = segment_path(dir.path(), now - Duration::from_secs(1000 - i));
            std::fs::write(&p, vec![0u8; 10]).expect("segment written");
            let f = std::fs::File::options()
                .write(true)
                .open(&p)
                .expect("segment opens");
            f.set_modified(now - Duration::from_secs(age))
                .expect("mtime set");
        }
        std::fs::write(dir.path().join("notes.txt"), "kept").expect("other file written");
        let b = Budget {
            keep: Some(Duration::from_secs(60)),
            max_bytes: None,
        };
        let gone = prune(dir.path(), &b, 0).expect("pruned");
        assert_eq!(gone.len(), 1);
        let left = segments(dir.path()).expect("listed");
        assert_eq!(left.len(), 2);
        assert!(left.iter().all(|s| s.path != gone[0]));
        assert!(dir.path().join("notes.txt").exists());
    }
}
