//! The processes `hotspot live` offers to profile, read from /proc: those with an
//! executable (kernel threads have none), with CPU use since the previous reading.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use hotspot_tui::views::picker::ProcRow;

/// Reads /proc again on each call, remembering CPU times to turn them into a rate.
#[derive(Debug)]
pub struct ProcessList {
    root: PathBuf,
    ticks_per_sec: f64,
    /// pid → (utime + stime ticks, when read).
    last: HashMap<u32, (u64, Instant)>,
}

impl ProcessList {
    pub fn new(root: &Path) -> ProcessList {
        // SAFETY: sysconf has no memory-safety preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        ProcessList {
            root: root.to_path_buf(),
            ticks_per_sec: if hz > 0 { hz as f64 } else { 100.0 },
            last: HashMap::new(),
        }
    }

    /// Every process with an executable except hotspot itself.
    pub fn read(&mut self) -> Vec<ProcRow> {
        let me = std::process::id();
        let now = Instant::now();
        let mut rows = Vec::new();
        let mut seen = HashMap::new();
        let Ok(dir) = fs::read_dir(&self.root) else {
            return rows;
        };
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            if pid == me {
                continue;
            }
            let base = entry.path();
            // Kernel threads have no executable: readlink fails (ENOENT).
            if fs::read_link(base.join("exe")).is_err() {
                continue;
            }
            let name = fs::read_to_string(base.join("comm"))
                .map(|s| s.trim_end().to_string())
                .unwrap_or_default();
            let cmdline = fs::read(base.join("cmdline"))
                .map(|b| {
                    b.split(|&c| c == 0)
                        .filter(|a| !a.is_empty())
                        .map(|a| String::from_utf8_lossy(a).into_owned())
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .unwrap_or_default();
            let ticks = fs::read_to_string(base.join("stat"))
                .ok()
                .and_then(|s| cpu_ticks(&s))
                .unwrap_or(0);
            let cpu = match self.last.get(&pid) {
                Some(&(t0, at)) => {
                    let dt = now.duration_since(at).as_secs_f64();
                    if dt > 0.0 {
                        (ticks.saturating_sub(t0) as f64 / self.ticks_per_sec / dt * 100.0) as f32
                    } else {
                        0.0
                    }
                }
                None => 0.0,
            };
            seen.insert(pid, (ticks, now));
            rows.push(ProcRow {
                pid,
                name,
                cpu,
                cmdline,
            });
        }
        self.last = seen;
        rows
    }
}

/// utime + stime from /proc/PID/stat (fields 14 and 15; the name in field 2 may hold
/// spaces and parentheses, so fields are counted after its last ')').
fn cpu_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state).
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some(utime + stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_ticks_skip_odd_names() {
        let stat = "42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0 5 0 0";
        assert_eq!(cpu_ticks(stat), Some(10));
    }

    #[test]
    fn lists_this_test_process_parent_but_not_kernel_threads() {
        let mut l = ProcessList::new(Path::new("/proc"));
        let rows = l.read();
        assert!(
            rows.iter()
                .any(|r| r.pid == 1 || r.pid == std::os::unix::process::parent_id())
        );
        // kthreadd (pid 2) has no executable.
        assert!(!rows.iter().any(|r| r.pid == 2 && r.name == "kthreadd"));
    }
}
