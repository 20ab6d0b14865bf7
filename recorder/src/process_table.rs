//! Processes and threads of the targets: names, command lines, and which of them still
//! has to be written to the capture. (Their mappings: [`crate::mapping_table`].)

// Looked up for every sample: a fast hash matters here.
use rustc_hash::FxHashMap as HashMap;
use std::path::{Path, PathBuf};

use hotspot_format::{Process, Thread};

/// A process the recorder has seen samples from.
#[derive(Debug)]
pub struct ProcessEntry {
    /// Monotonic ns when its /proc entry was read (and written to the capture).
    pub info_read_ns: u64,
}

/// What the recorder knows of a thread: enough to notice a rename, or its tid reused by
/// another process (tids are recycled; with many short-lived threads, soon).
#[derive(Debug, Clone)]
struct ThreadEntry {
    pid: u32,
    name: String,
}

/// The processes and threads seen so far.
#[derive(Debug)]
pub struct ProcessTable {
    proc_root: PathBuf,
    procs: HashMap<u32, ProcessEntry>,
    threads: HashMap<u32, ThreadEntry>,
}

impl ProcessTable {
    pub fn new(proc_root: impl Into<PathBuf>) -> Self {
        ProcessTable {
            proc_root: proc_root.into(),
            procs: HashMap::default(),
            threads: HashMap::default(),
        }
    }

    pub fn proc_root(&self) -> &Path {
        &self.proc_root
    }

    /// The entry for `pid`, reading /proc the first time; the returned record is
    /// `Some` when the process is new and must be written.
    pub fn ensure(
        &mut self,
        pid: u32,
        comm: &str,
        now_ns: u64,
    ) -> (&mut ProcessEntry, Option<Process>) {
        let mut new = None;
        let root = self.proc_root.clone();
        let entry = self.procs.entry(pid).or_insert_with(|| {
            new = Some(read_process(&root, pid, comm, now_ns));
            ProcessEntry {
                info_read_ns: crate::session::monotonic_ns(),
            }
        });
        (entry, new)
    }

    /// The process replaced its image: new name and command line. Returns the record to
    /// write.
    /// `None` when the entry was already read after the exec (the recorder tracked a
    /// command it started right after exec'ing it): the new image is what it holds.
    pub fn exec(&mut self, pid: u32, comm: &str, now_ns: u64) -> Option<Process> {
        if self
            .procs
            .get(&pid)
            .is_some_and(|e| e.info_read_ns > now_ns)
        {
            return None;
        }
        self.procs.remove(&pid);
        let (_, rec) = self.ensure(pid, comm, now_ns);
        rec
    }

    /// Notes a sample's thread; returns the record to write when the thread is new,
    /// renamed since it was last seen, or its tid now belongs to another process.
    pub fn thread_seen(&mut self, tid: u32, pid: u32, comm: &str, now_ns: u64) -> Option<Thread> {
        match self.threads.get_mut(&tid) {
            Some(t) if t.name == comm && t.pid == pid => None,
            Some(t) => {
                t.name = comm.to_string();
                t.pid = pid;
                Some(thread(tid, pid, comm, now_ns))
            }
            None => {
                self.threads.insert(
                    tid,
                    ThreadEntry {
                        pid,
                        name: comm.to_string(),
                    },
                );
                Some(thread(tid, pid, comm, now_ns))
            }
        }
    }

    pub fn process_count(&self) -> usize {
        self.procs.len()
    }

    pub fn thread_count(&self) -> usize {
        self.threads.len()
    }
}

fn thread(tid: u32, pid: u32, name: &str, time_ns: u64) -> Thread {
    Thread {
        tid,
        pid,
        name: name.to_string(),
        time_ns,
    }
}

/// Reads what /proc says about `pid`; fields of a process that is already gone stay
/// empty, with the sampled `comm` as its name.
pub fn read_process(proc_root: &Path, pid: u32, comm: &str, now_ns: u64) -> Process {
    let dir = proc_root.join(pid.to_string());
    let name = std::fs::read_to_string(dir.join("comm"))
        .map(|s| s.trim_end_matches('\n').to_string())
        .unwrap_or_else(|_| comm.to_string());
    let cmdline = std::fs::read(dir.join("cmdline"))
        .map(|b| split_cmdline(&b))
        .unwrap_or_default();
    let exe = std::fs::read_link(dir.join("exe"))
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ppid = std::fs::read_to_string(dir.join("stat"))
        .ok()
        .and_then(|s| parse_ppid(&s))
        .unwrap_or(0);
    Process {
        pid,
        ppid,
        name,
        cmdline,
        exe,
        start_ns: now_ns,
    }
}

fn split_cmdline(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

/// `pid (comm) state ppid …`: comm may hold spaces and parentheses, so parse from the
/// last ')'.
fn parse_ppid(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_ascii_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ppid_survives_odd_comms() {
        assert_eq!(parse_ppid("42 (a) b) c) R 7 42 42 0"), Some(7));
        assert_eq!(parse_ppid("garbage"), None);
    }

    #[test]
    fn cmdline_splits_on_nul() {
        assert_eq!(split_cmdline(b"ls\0-l\0a b\0"), vec!["ls", "-l", "a b"]);
    }

    #[test]
    fn threads_are_reported_when_new_or_renamed() {
        let mut t = ProcessTable::new("/proc");
        assert!(t.thread_seen(5, 1, "a", 0).is_some());
        assert!(t.thread_seen(5, 1, "a", 1).is_none());
        let renamed = t.thread_seen(5, 1, "b", 2).expect("rename is reported");
        assert_eq!((renamed.name.as_str(), renamed.time_ns), ("b", 2));
        let reused = t
            .thread_seen(5, 9, "b", 3)
            .expect("a reused tid is reported");
        assert_eq!((reused.pid, reused.time_ns), (9, 3));
        assert!(t.thread_seen(5, 9, "b", 4).is_none());
    }

    #[test]
    fn an_exec_is_written_unless_the_process_was_read_after_it() {
        let me = std::process::id();
        let mut t = ProcessTable::new("/proc");
        let (entry, _) = t.ensure(me, "x", 0);
        let read = entry.info_read_ns;
        let rec = t
            .exec(me, "x", read + 1)
            .expect("an exec after the read is written");
        assert_eq!(rec.pid, me);
        // Read again by that exec: an exec event older than the read is already in it.
        let read = t.ensure(me, "x", 0).0.info_read_ns;
        assert!(t.exec(me, "x", read - 1).is_none());
    }

    #[test]
    fn reads_our_own_process() {
        let me = std::process::id();
        let mut t = ProcessTable::new("/proc");
        let (_, new) = t.ensure(me, "x", 0);
        let new = new.expect("first sight is new");
        assert_eq!(new.pid, me);
        assert!(!new.exe.is_empty());
        assert!(t.ensure(me, "x", 1).1.is_none());
    }
}
