//! Exited processes waiting to be forgotten: what the recorder holds per process (its
//! entry, threads and mappings) goes a grace period after its exit event, so that the
//! samples the exiting thread still takes in `do_exit` after that event (timed after it,
//! or read a little late) find the process as it was.

use std::collections::VecDeque;

// Looked up at every fork: a fast hash matters more than a hostile key here (pids are
// the kernel's).
use rustc_hash::FxHashMap as HashMap;

/// How long after its exit event a process is forgotten, in event time. A process's last
/// samples come within milliseconds of its exit event (the exiting thread's last
/// switches), and events are released in time order 10 ms behind their rings
/// (`bpf::time_order::MARGIN_NS`): a second is far more than either, and short enough
/// that a box starting a thousand processes a second holds a thousand departed ones.
pub const GRACE_NS: u64 = 1_000_000_000;

/// The processes that exited and are not forgotten yet, oldest exit first.
#[derive(Debug, Default)]
pub struct Departures {
    queue: VecDeque<(u32, u64)>,
    /// The exit time of each pid in `queue`, the latest one: an entry of the queue
    /// that does not match it was overtaken (the pid was reused, and exited again).
    exited: HashMap<u32, u64>,
}

impl Departures {
    /// `pid` exited at `time_ns`.
    pub fn exited(&mut self, pid: u32, time_ns: u64) {
        self.queue.push_back((pid, time_ns));
        self.exited.insert(pid, time_ns);
    }

    /// `pid` starts a new process (a fork reused it): true if an exited one still held
    /// it, which is to be forgotten now (every event of it came before this one).
    pub fn reused(&mut self, pid: u32) -> bool {
        self.exited.remove(&pid).is_some()
    }

    /// The pids whose grace period has passed at `now_ns`, to forget now.
    pub fn due(&mut self, now_ns: u64, out: &mut Vec<u32>) {
        while let Some(&(pid, t)) = self.queue.front() {
            if now_ns < t.saturating_add(GRACE_NS) {
                break;
            }
            self.queue.pop_front();
            if self.exited.get(&pid) == Some(&t) {
                self.exited.remove(&pid);
                out.push(pid);
            }
        }
    }

    /// Processes waiting.
    pub fn len(&self) -> usize {
        self.exited.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_due_after_the_grace_period_unless_its_pid_was_reused() {
        let mut d = Departures::default();
        let mut out = Vec::new();
        d.exited(5, 10);
        d.exited(6, 20);
        d.due(10 + GRACE_NS - 1, &mut out);
        assert!(out.is_empty(), "not before the grace period");
        assert!(d.reused(6), "6 was waiting");
        assert!(!d.reused(7));
        d.due(20 + GRACE_NS, &mut out);
        assert_eq!(out, [5], "6 was forgotten at its reuse");
        // Reused and exited again: only the second exit counts.
        d.exited(8, 30);
        assert!(d.reused(8));
        d.exited(8, 40);
        out.clear();
        d.due(30 + GRACE_NS, &mut out);
        assert!(out.is_empty());
        d.due(40 + GRACE_NS, &mut out);
        assert_eq!(out, [8]);
        assert_eq!(d.len(), 0);
        assert!(d.queue.is_empty());
    }
}
