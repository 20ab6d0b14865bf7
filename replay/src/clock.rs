//! Where time 0 is: one rule for every output that names an instant by its offset
//! (`--from`/`--to`, `info`'s times, the views' selection and stream labels).
//!
//! Time 0 is the session header's `start_mono_ns` when the capture has a header, else the
//! first sample read (in file order: a streaming reader must place `--from`/`--to` before
//! it has seen the rest). The views may draw a narrower extent than that (they skip an
//! implausible start: `Data::span` in `hotspot-tui`), but they label instants on
//! this clock, so `report --from 10` and the views' "10 s" are the same instant.

use hotspot_format::SessionHeader;

/// How a capture's monotonic clock relates to "the start" and to the calendar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    /// Monotonic ns of time 0: the session's start, else the first sample.
    pub start_mono_ns: u64,
    /// Unix ns at the same instant, when the session header says.
    pub start_wall_ns: Option<u64>,
}

impl Clock {
    /// The rule: the session's start when there is a session header, else the first
    /// sample; `None` when there is neither.
    pub fn of(session: Option<&SessionHeader>, first_sample_ns: Option<u64>) -> Option<Clock> {
        match (session, first_sample_ns) {
            (Some(s), _) => Some(Clock {
                start_mono_ns: s.start_mono_ns,
                start_wall_ns: Some(s.start_wall_ns),
            }),
            (None, Some(t)) => Some(Clock {
                start_mono_ns: t,
                start_wall_ns: None,
            }),
            (None, None) => None,
        }
    }

    /// Nanoseconds from time 0 to a monotonic time (negative before it).
    pub fn offset_ns(&self, mono_ns: u64) -> i128 {
        i128::from(mono_ns) - i128::from(self.start_mono_ns)
    }

    /// Seconds from time 0 to a monotonic time (negative before it).
    pub fn offset_s(&self, mono_ns: u64) -> f64 {
        self.offset_ns(mono_ns) as f64 / 1e9
    }

    /// Unix ns of a monotonic time.
    pub fn wall_ns(&self, mono_ns: u64) -> Option<i128> {
        self.start_wall_ns
            .map(|w| i128::from(w) + self.offset_ns(mono_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_start_wins_over_the_first_sample() {
        let s = SessionHeader {
            start_mono_ns: 5_000,
            start_wall_ns: 9_000,
            ..SessionHeader::default()
        };
        let c = Clock::of(Some(&s), Some(1_000_000)).expect("clock");
        assert_eq!(c.start_mono_ns, 5_000);
        assert_eq!(c.offset_ns(4_000), -1_000);
        assert_eq!(c.wall_ns(6_000), Some(10_000));
        let c = Clock::of(None, Some(1_000_000)).expect("clock");
        assert_eq!((c.start_mono_ns, c.start_wall_ns), (1_000_000, None));
        assert_eq!(Clock::of(None, None), None);
    }
}
