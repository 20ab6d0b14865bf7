//! `--off-cpu`'s per-thread times as a source hands them over, with the interval in
//! progress still open, and closing that interval at an exit or at the recording's end.

use hotspot_format::{ThreadState, ThreadTimes};

/// One thread's exact times up to its last switch (`last_ns`), and the state it has been
/// in since. The four totals add up to `last_ns - first_ns` (a source checks that before
/// handing times over; [`OpenThreadTimes::adds_up`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenThreadTimes {
    /// The thread's process.
    pub pid: u32,
    /// Accounted from (monotonic ns): the session start, or the thread's start if later.
    pub first_ns: u64,
    /// Accounted to: its last switch (its exit in an [`Event::ThreadTimes`](super::Event)).
    pub last_ns: u64,
    pub on_cpu_ns: u64,
    pub sleeping_ns: u64,
    pub uninterruptible_ns: u64,
    pub runnable_ns: u64,
    /// Blocked time not yet in an off-CPU sample (less than a period): not in the
    /// capture, but what lets a test check that every period blocked was sampled.
    pub pending_ns: u64,
    /// Its state since `last_ns`: `None` on the CPU.
    pub state: Option<ThreadState>,
}

impl OpenThreadTimes {
    /// The four totals add up to `last_ns - first_ns` (without overflowing).
    pub fn adds_up(&self) -> bool {
        let sum = [
            self.on_cpu_ns,
            self.sleeping_ns,
            self.uninterruptible_ns,
            self.runnable_ns,
        ]
        .iter()
        .try_fold(0u64, |a, &b| a.checked_add(b));
        self.last_ns >= self.first_ns && sum == Some(self.last_ns - self.first_ns)
    }

    /// The times of thread `tid`, accounted to `end_ns`: the state it has been in since
    /// its last switch is extended to `end_ns` (a thread alive at the end), or cut back
    /// to it (an exit record the kernel wrote after accounting stopped at `end_ns`:
    /// the switches since were not seen, so that state is what it was in). `exited`
    /// only when its exit came before `end_ns`.
    pub fn closed_at(&self, tid: u32, end_ns: u64, exited: bool) -> ThreadTimes {
        let mut t = *self;
        let exited = exited && t.last_ns <= end_ns;
        let end = end_ns.max(t.first_ns);
        // The state since the last switch first, then the others.
        let first = t.state.map_or(0, |s| usize::from(s.code()).min(3));
        let mut totals = [
            &mut t.on_cpu_ns,
            &mut t.sleeping_ns,
            &mut t.uninterruptible_ns,
            &mut t.runnable_ns,
        ];
        totals.swap(0, first);
        if end >= t.last_ns {
            *totals[0] += end - t.last_ns;
        } else {
            // The totals add up to last - first (see `adds_up`), so taking the part cut
            // off from the state it was in, and should that not hold it all (an end
            // before that state began), from the others, leaves end - first.
            let mut over = t.last_ns - end;
            for total in totals {
                let take = over.min(*total);
                *total -= take;
                over -= take;
            }
        }
        ThreadTimes {
            tid,
            pid: t.pid,
            first_ns: t.first_ns,
            last_ns: end,
            on_cpu_ns: t.on_cpu_ns,
            sleeping_ns: t.sleeping_ns,
            uninterruptible_ns: t.uninterruptible_ns,
            runnable_ns: t.runnable_ns,
            exited,
        }
    }
}

/// `now`'s times after `before`, both the cumulative times of one thread (a flight
/// recorder's segment wrote `before` at its end): what the next segment holds of it,
/// from the boundary on. `now` itself when `before` is of another thread (its tid
/// reused since: accounted from another start).
///
/// A state can hold less in `now` than in `before`: at the boundary the thread was taken
/// to be in the state of its last seen switch, but its switch back in was not seen (the
/// BPF program's `close_unseen_run`, about once in 150 waits), and the next switch out
/// split that interval by the kernel's totals, giving the CPU part of what `before`
/// counted as waiting (measured: 1 of 12 flight recordings of the offcpu fixture in 1 s
/// segments, a spinner's last segment 23 ms over its span). That state then holds
/// nothing after the boundary, and its excess comes off the states that grew, the CPU
/// first, so the segment still adds up to its span and the history to the thread's
/// whole time; the excess stays where the earlier segment put it.
pub fn times_since(now: &ThreadTimes, before: &ThreadTimes) -> ThreadTimes {
    if before.pid != now.pid || before.first_ns != now.first_ns || before.last_ns > now.last_ns {
        return *now;
    }
    let pairs = [
        (now.on_cpu_ns, before.on_cpu_ns),
        (now.sleeping_ns, before.sleeping_ns),
        (now.uninterruptible_ns, before.uninterruptible_ns),
        (now.runnable_ns, before.runnable_ns),
    ];
    let mut totals = pairs.map(|(n, b)| n.saturating_sub(b));
    let mut over = pairs
        .iter()
        .fold(0u64, |o, &(n, b)| o.saturating_add(b.saturating_sub(n)));
    for total in &mut totals {
        let take = over.min(*total);
        *total -= take;
        over -= take;
    }
    let [on_cpu_ns, sleeping_ns, uninterruptible_ns, runnable_ns] = totals;
    ThreadTimes {
        first_ns: before.last_ns,
        on_cpu_ns,
        sleeping_ns,
        uninterruptible_ns,
        runnable_ns,
        ..*now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(state: Option<ThreadState>) -> OpenThreadTimes {
        OpenThreadTimes {
            pid: 42,
            first_ns: 1_000,
            last_ns: 11_000,
            on_cpu_ns: 4_000,
            sleeping_ns: 3_000,
            uninterruptible_ns: 2_000,
            runnable_ns: 1_000,
            pending_ns: 77,
            state,
        }
    }

    #[test]
    fn totals_must_add_up() {
        assert!(thread(None).adds_up());
        let mut off = thread(None);
        off.runnable_ns += 1;
        assert!(!off.adds_up());
        let mut huge = thread(None);
        huge.on_cpu_ns = u64::MAX;
        assert!(!huge.adds_up());
        let mut backwards = thread(None);
        backwards.first_ns = 20_000;
        assert!(!backwards.adds_up());
    }

    #[test]
    fn the_interval_in_progress_is_closed_at_the_end() {
        // Asleep since 11_000, the recording ends at 15_000.
        let c = thread(Some(ThreadState::Sleeping)).closed_at(7, 15_000, false);
        assert_eq!((c.tid, c.pid, c.last_ns, c.exited), (7, 42, 15_000, false));
        assert_eq!((c.on_cpu_ns, c.sleeping_ns), (4_000, 7_000));
        // On the CPU since then.
        let c = thread(None).closed_at(7, 15_000, false);
        assert_eq!((c.on_cpu_ns, c.sleeping_ns), (8_000, 3_000));
        let states = [None].into_iter().chain(ThreadState::ALL.map(Some));
        for state in states {
            for end in [500, 11_000, 15_000] {
                let c = thread(state).closed_at(7, end, true);
                let sum = c.on_cpu_ns + c.sleeping_ns + c.uninterruptible_ns + c.runnable_ns;
                assert_eq!(sum, c.last_ns - c.first_ns, "state {state:?} end {end}");
            }
        }
    }

    #[test]
    fn an_exit_after_the_end_is_cut_back_to_it() {
        // Exited at 11_000 on the CPU; accounting stopped at 9_000.
        let c = thread(None).closed_at(7, 9_000, true);
        assert_eq!((c.last_ns, c.on_cpu_ns, c.exited), (9_000, 2_000, false));
        // An exit before the end stays an exit.
        let c = thread(None).closed_at(7, 11_000, true);
        assert_eq!((c.last_ns, c.on_cpu_ns, c.exited), (11_000, 4_000, true));
    }

    #[test]
    fn a_segment_holds_the_times_after_the_last_boundary() {
        let t = thread(Some(ThreadState::Sleeping));
        let at_boundary = t.closed_at(5, 20_000, false);
        let mut later = t;
        later.last_ns = 30_000;
        // Asleep until the boundary, then on the CPU to its exit.
        later.sleeping_ns += 9_000;
        later.on_cpu_ns += 10_000;
        assert!(later.adds_up());
        let end = later.closed_at(5, 30_000, true);
        let next = times_since(&end, &at_boundary);
        assert_eq!(
            (next.first_ns, next.on_cpu_ns, next.sleeping_ns),
            (20_000, 10_000, 0)
        );
        let sum = next.on_cpu_ns + next.sleeping_ns + next.uninterruptible_ns + next.runnable_ns;
        assert_eq!(sum, next.last_ns - next.first_ns, "{next:?}");
        assert!(next.exited);
        // Another thread under the same tid: not cut.
        let mut other = end;
        other.first_ns = 25_000;
        assert_eq!(times_since(&other, &at_boundary), other);
    }

    #[test]
    fn a_state_that_shrank_since_the_boundary_gives_back_its_excess() {
        // At the boundary (20 µs) the thread was taken to wait in R since 12 µs; its
        // switch in at 14 µs was not seen, and its exit at 30 µs split the interval:
        // 2 µs in R, then on the CPU.
        let at_boundary = ThreadTimes {
            tid: 5,
            pid: 42,
            first_ns: 1_000,
            last_ns: 20_000,
            on_cpu_ns: 9_000,
            sleeping_ns: 2_000,
            uninterruptible_ns: 0,
            runnable_ns: 8_000,
            exited: false,
        };
        let end = ThreadTimes {
            last_ns: 30_000,
            on_cpu_ns: 25_000,
            runnable_ns: 2_000,
            exited: true,
            ..at_boundary
        };
        let next = times_since(&end, &at_boundary);
        assert_eq!(
            (next.on_cpu_ns, next.sleeping_ns, next.runnable_ns),
            (10_000, 0, 0),
            "{next:?}"
        );
        assert_eq!(next.on_cpu_ns, next.last_ns - next.first_ns);
    }
}
