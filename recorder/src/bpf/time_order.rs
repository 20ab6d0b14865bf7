//! One time order for the two kernel streams (the BPF ring's samples and task events,
//! the perf rings' mapping events): a sample is handled after every mapping made before
//! it and before any made after it, so a process that exec'd keeps its old image's
//! samples under the old image.
//!
//! Each stream is in time order on its own (per CPU for the perf rings), but a drain
//! reads them one after the other. An event timed at T is in its ring a few
//! microseconds after T (both are written with preemption off), so once the rings have
//! been read, every event timed before the read began, less a margin, is there: those
//! go out, sorted; the rest wait for the next read.

use crate::event::Event;

/// How far behind the start of a read events are held back: far more than an event
/// takes to reach its ring (microseconds), little against a drain's 100 ms.
pub const MARGIN_NS: u64 = 10_000_000;

/// Events read but not handed out yet.
#[derive(Debug, Default)]
pub struct TimeOrder {
    held: Vec<Event>,
}

impl TimeOrder {
    pub fn push(&mut self, ev: Event) {
        self.held.push(ev);
    }

    /// True if some held event is timed at or before `through`.
    pub fn has_through(&self, through: u64) -> bool {
        self.held.iter().any(|e| e.time_ns() <= through)
    }

    /// The time of the oldest held exec or exit: the events the recorder acts on at once
    /// (a new program may be an interpreter to walk; a target's end may end the
    /// recording), which wake it, but go out only a margin after their time.
    pub fn oldest_prompt(&self) -> Option<u64> {
        self.held
            .iter()
            .filter(|e| matches!(e, Event::Exec { .. } | Event::Exit { .. }))
            .map(Event::time_ns)
            .min()
    }

    /// Moves every held event timed at or before `through` into `out`, oldest first
    /// (events with equal times keep the order they were read in).
    pub fn release(&mut self, through: u64, out: &mut Vec<Event>) {
        // Nearly sorted already (two or three sorted runs): the stable sort merges them.
        self.held.sort_by_key(Event::time_ns);
        let n = self.held.partition_point(|e| e.time_ns() <= through);
        out.extend(self.held.drain(..n));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exit(time_ns: u64, pid: u32) -> Event {
        Event::Exit { time_ns, pid }
    }

    #[test]
    fn events_go_out_in_time_order_up_to_the_cutoff() {
        let mut o = TimeOrder::default();
        for (t, pid) in [(5, 1), (1, 2), (9, 3), (5, 4), (3, 5)] {
            o.push(exit(t, pid));
        }
        assert!(o.has_through(1) && !o.has_through(0));
        let mut out = Vec::new();
        o.release(5, &mut out);
        assert_eq!(out, [exit(1, 2), exit(3, 5), exit(5, 1), exit(5, 4)]);
        out.clear();
        o.release(8, &mut out);
        assert!(out.is_empty() && o.has_through(9), "9 waits");
        o.release(u64::MAX, &mut out);
        assert_eq!(out, [exit(9, 3)]);
        assert!(!o.has_through(u64::MAX));
    }

    #[test]
    fn the_oldest_exec_or_exit_held_is_known_forks_aside() {
        let mut o = TimeOrder::default();
        assert_eq!(o.oldest_prompt(), None);
        o.push(Event::Fork {
            time_ns: 2,
            parent: 1,
            child: 2,
        });
        assert_eq!(o.oldest_prompt(), None, "a fork is not acted on at once");
        o.push(exit(7, 1));
        o.push(exit(4, 2));
        assert_eq!(o.oldest_prompt(), Some(4));
        let mut out = Vec::new();
        o.release(5, &mut out);
        assert_eq!(o.oldest_prompt(), Some(7));
    }
}
