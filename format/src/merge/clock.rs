//! One clock for a history that spans reboots. Samples are timed on CLOCK_MONOTONIC,
//! which starts again at every boot: a flight recorder running as a service keeps the
//! segments of the boot before, whose times are then larger than the new boot's (or
//! overlap them). Each boot's segments are moved onto the oldest segment's clock by the
//! difference of their wall-minus-monotonic offsets, so a sample's UTC time reads the same
//! in the merged capture as in its segment, and times stay in order.

use crate::records::{Record, SessionHeader};

/// Places segments, oldest first, on the oldest one's monotonic clock.
#[derive(Debug, Default, Clone)]
pub struct BootClock {
    /// The oldest segment's wall minus monotonic time, ns.
    origin: Option<i128>,
    /// The current boot's wall minus monotonic time, ns.
    boot: i128,
    /// What the current boot's times are moved by.
    shift: u64,
    /// The latest time placed so far (after its shift).
    latest: u64,
}

/// How far apart two segments' wall-minus-monotonic offsets must be for a clock that went
/// back to be a reboot: within one boot they differ by the wall clock's adjustments
/// (milliseconds); across a reboot by the old boot's uptime and the time it was down.
const NEW_BOOT_NS: i128 = 1_000_000_000;

impl BootClock {
    pub fn new() -> Self {
        Self::default()
    }

    /// The shift for the next segment (or block of one followed), given its session header
    /// (`None`: not in these records; the current boot's shift holds) and the last time it
    /// holds, if any.
    ///
    /// Within one boot the monotonic clock never goes back, so a segment starting before
    /// the latest time placed, with another wall-minus-monotonic offset, is of a new boot.
    /// Its shift comes from the wall clock (the offsets' difference), and is at least what
    /// keeps it after everything placed: a wall clock set back across the reboot must not
    /// put it among the older boot's. Overlapping captures of one boot are not moved.
    pub fn place(&mut self, header: Option<&SessionHeader>, last: Option<u64>) -> u64 {
        if let Some(h) = header {
            let offset = i128::from(h.start_wall_ns) - i128::from(h.start_mono_ns);
            let start = h.start_mono_ns;
            match self.origin {
                None => {
                    self.origin = Some(offset);
                    self.boot = offset;
                }
                Some(origin)
                    if start.saturating_add(self.shift) < self.latest
                        && (offset - self.boot).abs() > NEW_BOOT_NS =>
                {
                    let by_wall = u64::try_from(offset - origin).unwrap_or(0);
                    let after = self.latest.saturating_add(1).saturating_sub(start);
                    self.boot = offset;
                    self.shift = by_wall.max(after);
                }
                Some(_) => {}
            }
        }
        if let Some(last) = last {
            self.latest = self.latest.max(last.saturating_add(self.shift));
        }
        self.shift
    }
}

/// The last monotonic time a segment's records hold (its session start included), or
/// `None` for a segment without any.
pub fn last_time(records: &[Record]) -> Option<u64> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Session(s) => Some(s.start_mono_ns),
            Record::Samples(b) => b.samples.iter().map(|s| s.time_ns).max(),
            Record::OffCpuSamples(b) => b.samples.iter().map(|s| s.sample.time_ns).max(),
            Record::End(e) => Some(e.end_mono_ns),
            Record::Mark(m) => Some(m.time_ns),
            _ => None,
        })
        .max()
}

/// Moves every monotonic time `record` holds `by` ns later.
pub fn shift(record: &mut Record, by: u64) {
    if by == 0 {
        return;
    }
    let add = |t: &mut u64| *t = t.saturating_add(by);
    match record {
        Record::Session(s) => add(&mut s.start_mono_ns),
        Record::Process(p) => add(&mut p.start_ns),
        Record::Thread(t) => add(&mut t.time_ns),
        Record::Samples(b) => b.samples.iter_mut().for_each(|s| add(&mut s.time_ns)),
        Record::OffCpuSamples(b) => b
            .samples
            .iter_mut()
            .for_each(|s| add(&mut s.sample.time_ns)),
        Record::Lost(l) => add(&mut l.time_ns),
        Record::LostMappings(l) => add(&mut l.time_ns),
        Record::LostOffCpu(l) => add(&mut l.time_ns),
        Record::ProcessExit(e) => add(&mut e.time_ns),
        Record::ThreadTimes(t) => {
            add(&mut t.first_ns);
            add(&mut t.last_ns);
        }
        Record::InterpreterProcess(p) => add(&mut p.start_ns),
        Record::Mark(m) => add(&mut m.time_ns),
        Record::End(e) => add(&mut e.end_mono_ns),
        // A merge drops a segment's index: its writer writes its own.
        Record::Index(_)
        | Record::String { .. }
        | Record::Module(_)
        | Record::Frame(_)
        | Record::Stack(_)
        | Record::Symbol(_)
        | Record::Unwinding(_)
        | Record::OffCpu(_)
        | Record::FeatureOff(_)
        | Record::InterpreterModule(_)
        | Record::Scrubbed(_) => {}
    }
}
