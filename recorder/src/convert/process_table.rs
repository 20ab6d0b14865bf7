//! Processes and threads of the targets: names, command lines, and which of them still
//! has to be written to the capture, the current one of a flight recorder's segments
//! included (what the last one held is written again at the next's first sample).
//! (Their mappings: [`super::mapping_table`].)

// Looked up for every sample: a fast hash matters here.
use rustc_hash::FxHashMap as HashMap;

use hotspot_format::{Process, Thread};

use crate::host::Host;

/// A process the recorder has seen samples from.
#[derive(Debug)]
pub struct ProcessEntry {
    /// Monotonic ns when the host was asked about it (and it was written to the capture).
    pub info_read_ns: u64,
    /// The `start_ns` of its `Process` record: which version of the process it is.
    pub start_ns: u64,
    /// Its threads seen so far, to forget with it.
    tids: Vec<u32>,
    /// What was written of it, to write again in the next segment.
    record: Process,
    /// Written to the current capture.
    written: bool,
}

/// What the recorder knows of a thread: enough to notice a rename, or its tid reused by
/// another process (tids are recycled; with many short-lived threads, soon).
#[derive(Debug, Clone)]
struct ThreadEntry {
    pid: u32,
    name: String,
    /// Written to the current capture.
    written: bool,
}

/// The processes and threads seen so far.
#[derive(Debug, Default)]
pub struct ProcessTable {
    procs: HashMap<u32, ProcessEntry>,
    threads: HashMap<u32, ThreadEntry>,
    /// Processes and threads written to the current capture, forgotten ones included.
    seen_processes: usize,
    seen_threads: usize,
}

impl ProcessTable {
    /// The entry for `pid`, asking the host about it the first time; the returned
    /// record is `Some` when the process is new and must be written.
    pub fn ensure(
        &mut self,
        pid: u32,
        comm: &str,
        now_ns: u64,
        host: &mut dyn Host,
    ) -> (&mut ProcessEntry, Option<Process>) {
        let mut new = None;
        let seen = &mut self.seen_processes;
        let entry = self.procs.entry(pid).or_insert_with(|| {
            *seen += 1;
            let record = process(host, pid, comm, now_ns);
            new = Some(record.clone());
            ProcessEntry {
                info_read_ns: host.now_ns(),
                start_ns: now_ns,
                tids: Vec::new(),
                record,
                written: true,
            }
        });
        (entry, new)
    }

    /// The record of a known process not written to the current capture yet (a new
    /// segment began since); `None` when it was, or is not known. The same record, its
    /// `start_ns` included: the segments of a history hold one version of the process,
    /// which reading them together (`hotspot_format::merge`) keeps as one.
    pub fn rewrite(&mut self, pid: u32) -> Option<Process> {
        let e = self.procs.get_mut(&pid).filter(|e| !e.written)?;
        e.written = true;
        self.seen_processes += 1;
        Some(e.record.clone())
    }

    /// A new capture begins (the flight recorder's next segment): every process and
    /// thread is written again when next seen, and counted again.
    pub fn next_capture(&mut self) {
        for e in self.procs.values_mut() {
            e.written = false;
        }
        for t in self.threads.values_mut() {
            t.written = false;
        }
        self.seen_processes = 0;
        self.seen_threads = 0;
    }

    /// The process replaced its image: new name and command line. Returns the record to
    /// write.
    /// `None` when the entry was already read after the exec (the recorder tracked a
    /// command it started right after exec'ing it): the new image is what it holds.
    pub fn exec(
        &mut self,
        pid: u32,
        comm: &str,
        now_ns: u64,
        host: &mut dyn Host,
    ) -> Option<Process> {
        if self
            .procs
            .get(&pid)
            .is_some_and(|e| e.info_read_ns > now_ns)
        {
            return None;
        }
        // The threads stay: an exec keeps the process's threads' ids (the others are
        // gone, and forgotten with the process).
        let old = self.procs.remove(&pid);
        if old.is_some() {
            // The same process, under a new image: not one more.
            self.seen_processes -= 1;
        }
        let (entry, rec) = self.ensure(pid, comm, now_ns, host);
        entry.tids = old.map(|e| e.tids).unwrap_or_default();
        rec
    }

    /// Forgets `pid` and its threads (it exited, and no event of it is left to come):
    /// a process seen again under this pid is a new one, asked about and written anew.
    pub fn forget(&mut self, pid: u32) {
        let Some(e) = self.procs.remove(&pid) else {
            return;
        };
        for tid in e.tids {
            // A tid since reused by another process belongs to that one now.
            if self.threads.get(&tid).is_some_and(|t| t.pid == pid) {
                self.threads.remove(&tid);
            }
        }
    }

    /// Notes a sample's thread; returns the record to write when the thread is new,
    /// renamed since it was last seen, or its tid now belongs to another process.
    pub fn thread_seen(&mut self, tid: u32, pid: u32, comm: &str, now_ns: u64) -> Option<Thread> {
        match self.threads.get_mut(&tid) {
            Some(t) if t.name == comm && t.pid == pid && t.written => None,
            Some(t) => {
                t.name = comm.to_string();
                let rewrite = !std::mem::replace(&mut t.written, true);
                if t.pid != pid {
                    t.pid = pid;
                    self.seen_threads += 1;
                    self.note_tid(pid, tid);
                } else if rewrite {
                    self.seen_threads += 1;
                }
                Some(thread(tid, pid, comm, now_ns))
            }
            None => {
                self.seen_threads += 1;
                self.note_tid(pid, tid);
                self.threads.insert(
                    tid,
                    ThreadEntry {
                        pid,
                        name: comm.to_string(),
                        written: true,
                    },
                );
                Some(thread(tid, pid, comm, now_ns))
            }
        }
    }

    /// `tid` is one of `pid`'s threads (a thread's process is ensured before it).
    fn note_tid(&mut self, pid: u32, tid: u32) {
        if let Some(e) = self.procs.get_mut(&pid) {
            e.tids.push(tid);
        }
    }

    /// The `start_ns` of `pid`'s current `Process` record (0: not seen).
    pub fn start_ns(&self, pid: u32) -> u64 {
        self.procs.get(&pid).map_or(0, |e| e.start_ns)
    }

    /// Processes and threads held now (the live ones, and those that just exited).
    pub fn process_count(&self) -> usize {
        self.procs.len()
    }

    pub fn thread_count(&self) -> usize {
        self.threads.len()
    }

    /// Processes and threads written to the current capture.
    pub fn processes_seen(&self) -> usize {
        self.seen_processes
    }

    pub fn threads_seen(&self) -> usize {
        self.seen_threads
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

/// What the host says about `pid`; fields of a process that is already gone stay
/// empty, with the sampled `comm` as its name.
fn process(host: &mut dyn Host, pid: u32, comm: &str, now_ns: u64) -> Process {
    let info = host.process(pid);
    Process {
        pid,
        ppid: info.ppid,
        name: info.name.unwrap_or_else(|| comm.to_string()),
        cmdline: info.cmdline,
        exe: info.exe,
        start_ns: now_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{FakeHost, ProcessInfo};

    #[test]
    fn threads_are_reported_when_new_or_renamed() {
        let mut t = ProcessTable::default();
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

    fn host() -> FakeHost {
        let mut host = FakeHost::default();
        host.processes.insert(
            7,
            ProcessInfo {
                name: Some("worker".into()),
                cmdline: vec!["./worker".into(), "-v".into()],
                exe: "/usr/bin/worker".into(),
                ppid: 1,
            },
        );
        host
    }

    #[test]
    fn an_exec_is_written_unless_the_process_was_read_after_it() {
        let mut t = ProcessTable::default();
        let host = &mut host();
        let (entry, _) = t.ensure(7, "x", 0, host);
        let read = entry.info_read_ns;
        let rec = t
            .exec(7, "x", read + 1, host)
            .expect("an exec after the read is written");
        assert_eq!(rec.pid, 7);
        // Read again by that exec: an exec event older than the read is already in it.
        let read = t.ensure(7, "x", 0, host).0.info_read_ns;
        assert!(t.exec(7, "x", read - 1, host).is_none());
    }

    #[test]
    fn a_process_is_asked_about_once() {
        let mut t = ProcessTable::default();
        let host = &mut host();
        let (_, new) = t.ensure(7, "x", 5, host);
        let new = new.expect("first sight is new");
        assert_eq!(
            (new.pid, new.ppid, new.name.as_str(), new.exe.as_str()),
            (7, 1, "worker", "/usr/bin/worker")
        );
        assert_eq!((new.cmdline.len(), new.start_ns), (2, 5));
        assert!(t.ensure(7, "x", 6, host).1.is_none());
        // One the host knows nothing of is named by its sampled thread.
        let (_, gone) = t.ensure(8, "short", 7, host);
        let gone = gone.expect("new");
        assert_eq!((gone.name.as_str(), gone.exe.as_str()), ("short", ""));
        assert_eq!(t.process_count(), 2);
    }

    #[test]
    fn a_forgotten_process_takes_its_threads_but_not_a_reused_tid() {
        let mut t = ProcessTable::default();
        let host = &mut host();
        t.ensure(7, "x", 0, host);
        t.ensure(8, "y", 0, host);
        t.thread_seen(7, 7, "x", 1);
        t.thread_seen(70, 7, "x", 1);
        // Tid 70 is reused by process 8 (process 7's thread exited).
        t.thread_seen(70, 8, "y", 2);
        t.forget(7);
        assert_eq!(
            (t.process_count(), t.thread_count()),
            (1, 1),
            "70 is 8's now"
        );
        assert!(t.thread_seen(70, 8, "y", 3).is_none());
        // The same pid again is a new process, written again.
        assert!(t.ensure(7, "x", 4, host).1.is_some());
        assert!(t.thread_seen(7, 7, "x", 4).is_some());
        assert_eq!((t.processes_seen(), t.threads_seen()), (3, 4));
    }

    #[test]
    fn the_next_capture_writes_known_processes_and_threads_again_once() {
        let mut t = ProcessTable::default();
        let host = &mut host();
        t.ensure(7, "x", 5, host);
        t.thread_seen(70, 7, "x", 5);
        assert!(t.rewrite(7).is_none(), "written in this capture already");
        t.next_capture();
        assert_eq!((t.processes_seen(), t.threads_seen()), (0, 0));
        // Known: not asked about again (the host may no longer know it)...
        assert!(t.ensure(7, "x", 10, host).1.is_none());
        host.processes.clear();
        // ...but written again, the same version of the process (its start).
        let again = t.rewrite(7).expect("written again");
        assert_eq!((again.name.as_str(), again.start_ns), ("worker", 5));
        assert_eq!(t.start_ns(7), 5);
        assert!(t.rewrite(7).is_none());
        let th = t.thread_seen(70, 7, "x", 10).expect("thread written again");
        assert_eq!(th.time_ns, 10);
        assert!(t.thread_seen(70, 7, "x", 11).is_none());
        assert_eq!((t.processes_seen(), t.threads_seen()), (1, 1));
    }
}
