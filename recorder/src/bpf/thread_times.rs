//! `--off-cpu`'s per-thread times as the kernel keeps them (`struct hs_thread` in
//! `ebpf/sample.h`): decoding, and closing the interval in progress at the recording's end.

use hotspot_format::ThreadState;
use zerocopy::{FromBytes, Immutable, KnownLayout};

/// Size of [`RawThread`].
pub const THREAD_SIZE: usize = 72;

// HS_STATE_* in ebpf/sample.h (1..=3 are the capture's state codes too).
const STATE_ON_CPU: u32 = 0;

/// Byte-for-byte mirror of `struct hs_thread` in `ebpf/sample.h`: the value of the
/// `threads` map and the body of a thread-times record.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, FromBytes, KnownLayout, Immutable)]
pub struct RawThread {
    /// Accounted from (monotonic ns): the session start, or the thread's start if later.
    pub first_ns: u64,
    /// Accounted to: its last switch (its exit in a record).
    pub last_ns: u64,
    pub on_cpu_ns: u64,
    pub sleeping_ns: u64,
    pub uninterruptible_ns: u64,
    pub runnable_ns: u64,
    /// Blocked time not yet in an off-CPU sample.
    pub pending_ns: u64,
    pub tgid: u32,
    /// `HS_STATE_*` since `last_ns`: 0 on the CPU, else the capture's state code.
    pub state: u32,
    /// At its last switch out, the kernel total that splits an interval whose switch in
    /// is not seen: `sched_info.run_delay` if it left runnable, else `se.sum_exec_runtime`.
    pub total_ns: u64,
}

const _: () = assert!(size_of::<RawThread>() == THREAD_SIZE);

/// One thread's exact times, as the recorder writes them (a `ThreadTimes` record).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RawThreadTimes {
    pub tid: u32,
    pub pid: u32,
    pub first_ns: u64,
    pub last_ns: u64,
    pub on_cpu_ns: u64,
    pub sleeping_ns: u64,
    pub uninterruptible_ns: u64,
    pub runnable_ns: u64,
    /// `last_ns` is the thread's exit (not the end of the recording).
    pub exited: bool,
}

/// Why a `threads` value or thread-times record does not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ThreadTimesError {
    #[error("BPF thread times of {len} bytes, not {THREAD_SIZE}")]
    Length { len: usize },
    #[error("BPF thread times with unknown state {0}")]
    State(u32),
    #[error("BPF thread times that do not add up: {0:?}")]
    Inconsistent(RawThread),
}

impl RawThread {
    /// Decodes one (from a record's body or a map value), checking what the kernel side
    /// guarantees: a known state and totals that add up to `last - first`.
    pub fn parse(bytes: &[u8]) -> Result<RawThread, ThreadTimesError> {
        let t = RawThread::read_from_bytes(bytes)
            .map_err(|_| ThreadTimesError::Length { len: bytes.len() })?;
        if t.state > 3 {
            return Err(ThreadTimesError::State(t.state));
        }
        let sum = [
            t.on_cpu_ns,
            t.sleeping_ns,
            t.uninterruptible_ns,
            t.runnable_ns,
        ]
        .iter()
        .try_fold(0u64, |a, &b| a.checked_add(b));
        if t.last_ns < t.first_ns || sum != Some(t.last_ns - t.first_ns) {
            return Err(ThreadTimesError::Inconsistent(t));
        }
        Ok(t)
    }

    /// The times of thread `tid`, accounted to `end_ns`: the state it has been in since
    /// its last switch is extended to `end_ns` (a thread alive at the end), or cut back
    /// to it (an exit record the kernel wrote after accounting stopped at `end_ns`:
    /// the switches since were not seen, so that state is what it was in). `exited`
    /// only when its exit came before `end_ns`.
    pub fn closed_at(&self, tid: u32, end_ns: u64, exited: bool) -> RawThreadTimes {
        let mut t = *self;
        let exited = exited && t.last_ns <= end_ns;
        let end = end_ns.max(t.first_ns);
        // The state since the last switch first, then the others.
        let first = match t.state {
            STATE_ON_CPU => 0,
            code => code.min(3) as usize,
        };
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
            // The kernel's totals add up to last - first (checked by `parse`), so taking
            // the part cut off from the state it was in, and should that not hold it all
            // (an end before that state began), from the others, leaves end - first.
            let mut over = t.last_ns - end;
            for total in totals {
                let take = over.min(*total);
                *total -= take;
                over -= take;
            }
        }
        RawThreadTimes {
            tid,
            pid: t.tgid,
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

/// The state of an off-CPU sample (`struct hs_off_cpu`'s state): never on-CPU.
pub fn off_cpu_state(code: u32) -> Option<ThreadState> {
    u8::try_from(code).ok().and_then(ThreadState::from_code)
}

impl RawThreadTimes {
    /// The capture record.
    pub fn record(&self) -> hotspot_format::ThreadTimes {
        hotspot_format::ThreadTimes {
            tid: self.tid,
            pid: self.pid,
            first_ns: self.first_ns,
            last_ns: self.last_ns,
            on_cpu_ns: self.on_cpu_ns,
            sleeping_ns: self.sleeping_ns,
            uninterruptible_ns: self.uninterruptible_ns,
            runnable_ns: self.runnable_ns,
            exited: self.exited,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(t: &RawThread) -> Vec<u8> {
        let mut b = Vec::new();
        for w in [
            t.first_ns,
            t.last_ns,
            t.on_cpu_ns,
            t.sleeping_ns,
            t.uninterruptible_ns,
            t.runnable_ns,
            t.pending_ns,
        ] {
            b.extend_from_slice(&w.to_ne_bytes());
        }
        b.extend_from_slice(&t.tgid.to_ne_bytes());
        b.extend_from_slice(&t.state.to_ne_bytes());
        b.extend_from_slice(&t.total_ns.to_ne_bytes());
        b
    }

    fn thread(state: u32) -> RawThread {
        RawThread {
            first_ns: 1_000,
            last_ns: 11_000,
            on_cpu_ns: 4_000,
            sleeping_ns: 3_000,
            uninterruptible_ns: 2_000,
            runnable_ns: 1_000,
            pending_ns: 77,
            tgid: 42,
            state,
            total_ns: 0,
        }
    }

    #[test]
    fn decodes_and_checks_the_sum() {
        let t = thread(1);
        assert_eq!(RawThread::parse(&bytes(&t)), Ok(t));
        assert_eq!(
            RawThread::parse(&bytes(&t)[..71]),
            Err(ThreadTimesError::Length { len: 71 })
        );
        assert_eq!(
            RawThread::parse(&bytes(&thread(4))),
            Err(ThreadTimesError::State(4))
        );
        let mut off = t;
        off.runnable_ns += 1;
        assert!(matches!(
            RawThread::parse(&bytes(&off)),
            Err(ThreadTimesError::Inconsistent(_))
        ));
        let mut huge = t;
        huge.on_cpu_ns = u64::MAX;
        assert!(RawThread::parse(&bytes(&huge)).is_err());
        let mut backwards = t;
        backwards.first_ns = 20_000;
        assert!(RawThread::parse(&bytes(&backwards)).is_err());
    }

    #[test]
    fn the_interval_in_progress_is_closed_at_the_end() {
        // Asleep since 11_000, the recording ends at 15_000.
        let c = thread(1).closed_at(7, 15_000, false);
        assert_eq!((c.tid, c.pid, c.last_ns, c.exited), (7, 42, 15_000, false));
        assert_eq!((c.on_cpu_ns, c.sleeping_ns), (4_000, 7_000));
        // On the CPU since then.
        let c = thread(0).closed_at(7, 15_000, false);
        assert_eq!((c.on_cpu_ns, c.sleeping_ns), (8_000, 3_000));
        for state in 0..=3 {
            for end in [500, 11_000, 15_000] {
                let c = thread(state).closed_at(7, end, true);
                let sum = c.on_cpu_ns + c.sleeping_ns + c.uninterruptible_ns + c.runnable_ns;
                assert_eq!(sum, c.last_ns - c.first_ns, "state {state} end {end}");
            }
        }
    }

    #[test]
    fn an_exit_after_the_end_is_cut_back_to_it() {
        // Exited at 11_000 on the CPU; accounting stopped at 9_000.
        let c = thread(0).closed_at(7, 9_000, true);
        assert_eq!((c.last_ns, c.on_cpu_ns, c.exited), (9_000, 2_000, false));
        // An exit before the end stays an exit.
        let c = thread(0).closed_at(7, 11_000, true);
        assert_eq!((c.last_ns, c.on_cpu_ns, c.exited), (11_000, 4_000, true));
    }

    #[test]
    fn states_decode_to_the_capture_codes() {
        assert_eq!(off_cpu_state(1), Some(ThreadState::Sleeping));
        assert_eq!(off_cpu_state(2), Some(ThreadState::Uninterruptible));
        assert_eq!(off_cpu_state(3), Some(ThreadState::Runnable));
        assert_eq!(off_cpu_state(0), None);
        assert_eq!(off_cpu_state(259), None);
    }
}
