//! `--off-cpu`'s per-thread times as the kernel keeps them (`struct hs_thread`): the body
//! of a thread-times record and the value of the `threads` map.

use hotspot_format::ThreadState;
use zerocopy::FromBytes;

use super::super::abi::{HS_STATE_ON_CPU, HsThread};
use super::error::ThreadTimesError;
use crate::event::OpenThreadTimes;

/// Decodes one thread's times, checking what the kernel side guarantees: a known state
/// and totals that add up to `last - first`.
pub fn parse_thread(bytes: &[u8]) -> Result<OpenThreadTimes, ThreadTimesError> {
    let t = HsThread::read_from_bytes(bytes)
        .map_err(|_| ThreadTimesError::Length { len: bytes.len() })?;
    let state = match t.state {
        HS_STATE_ON_CPU => None,
        code => Some(off_cpu_state(code).ok_or(ThreadTimesError::State(code))?),
    };
    let times = OpenThreadTimes {
        pid: t.tgid,
        first_ns: t.first_ns,
        last_ns: t.last_ns,
        on_cpu_ns: t.on_cpu_ns,
        sleeping_ns: t.sleeping_ns,
        uninterruptible_ns: t.uninterruptible_ns,
        runnable_ns: t.runnable_ns,
        pending_ns: t.pending_ns,
        state,
    };
    if !times.adds_up() {
        return Err(ThreadTimesError::Inconsistent {
            first_ns: t.first_ns,
            last_ns: t.last_ns,
        });
    }
    Ok(times)
}

/// A waiting state (`HS_STATE_*` but on-CPU): the capture's state codes are the same.
pub fn off_cpu_state(code: u32) -> Option<ThreadState> {
    u8::try_from(code).ok().and_then(ThreadState::from_code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpf::abi::THREAD_SIZE;

    fn bytes(words: [u64; 7], tgid: u32, state: u32) -> Vec<u8> {
        let mut b = Vec::new();
        for w in words {
            b.extend_from_slice(&w.to_ne_bytes());
        }
        b.extend_from_slice(&tgid.to_ne_bytes());
        b.extend_from_slice(&state.to_ne_bytes());
        b.extend_from_slice(&99u64.to_ne_bytes()); // total_ns: the kernel side's own
        assert_eq!(b.len(), THREAD_SIZE);
        b
    }

    /// first, last, on-CPU, S, D, R, pending.
    const TIMES: [u64; 7] = [1_000, 11_000, 4_000, 3_000, 2_000, 1_000, 77];

    #[test]
    fn decodes_and_checks_the_sum() {
        let t = parse_thread(&bytes(TIMES, 42, 1)).expect("decodes");
        assert_eq!(
            t,
            OpenThreadTimes {
                pid: 42,
                first_ns: 1_000,
                last_ns: 11_000,
                on_cpu_ns: 4_000,
                sleeping_ns: 3_000,
                uninterruptible_ns: 2_000,
                runnable_ns: 1_000,
                pending_ns: 77,
                state: Some(ThreadState::Sleeping),
            }
        );
        assert_eq!(
            parse_thread(&bytes(TIMES, 42, 0)).map(|t| t.state),
            Ok(None)
        );
        assert_eq!(
            parse_thread(&bytes(TIMES, 42, 1)[..71]),
            Err(ThreadTimesError::Length { len: 71 })
        );
        assert_eq!(
            parse_thread(&bytes(TIMES, 42, 4)),
            Err(ThreadTimesError::State(4))
        );
        let mut off = TIMES;
        off[5] += 1;
        assert!(matches!(
            parse_thread(&bytes(off, 42, 1)),
            Err(ThreadTimesError::Inconsistent { .. })
        ));
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
