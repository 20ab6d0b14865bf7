//! Where the recording core's events come from: the seam between a source (the live BPF
//! sampler, a scripted one in tests, later an importer) and the core that turns them
//! into a capture. A source hands over [`Event`]s in time order and the counts of what it
//! lost; the core knows nothing else of it.

use std::time::Duration;

use crate::error::RecorderError;
use crate::event::{Event, OpenThreadTimes};

/// A stream of events, drained by the recording loop.
pub trait EventSource {
    /// Waits up to `timeout` for events (without spinning), then moves every one that is
    /// ready into `out`, in time order.
    fn poll(&mut self, timeout: Duration, out: &mut Vec<Event>) -> Result<(), RecorderError>;
    /// Samples the source dropped, per CPU, cumulative since the start.
    fn lost_per_cpu(&mut self) -> Result<Vec<u64>, RecorderError>;
    /// Stops taking samples; what is already buffered can still be polled. After it the
    /// lost counters no longer move, so a final read of them is exact.
    fn stop_sampling(&mut self) -> Result<(), RecorderError> {
        Ok(())
    }
    /// Mapping events dropped, cumulative since the start.
    fn lost_mapping_events(&mut self) -> u64 {
        0
    }
    /// `--off-cpu`: off-CPU samples and thread-times records dropped, cumulative.
    fn lost_off_cpu(&mut self) -> Result<u64, RecorderError> {
        Ok(0)
    }
    /// `--off-cpu`: when thread times stopped being accounted (monotonic ns; set by
    /// [`EventSource::stop_sampling`]).
    fn accounting_end(&self) -> Option<u64> {
        None
    }
    /// `--off-cpu`: the times of the threads still alive (tid, times), taken out of the
    /// source: called once, after `stop_sampling`.
    fn take_thread_times(&mut self) -> Result<Vec<(u32, OpenThreadTimes)>, RecorderError> {
        Ok(Vec::new())
    }
    /// `--off-cpu`: the times of the threads alive now, left in the source, which goes on
    /// accounting them (a flight recorder's segment ends).
    fn thread_times_now(&mut self) -> Result<Vec<(u32, OpenThreadTimes)>, RecorderError> {
        Ok(Vec::new())
    }
    /// Walks the Python frames of process `pid` from now on, as `entry` says (the 48
    /// bytes of `hs_python_proc`: `_PyRuntime`'s address, the walk description, glibc's
    /// thread-specific data), or no longer (`None`). A source that cannot walk Python
    /// ignores it: its samples carry no Python frames.
    fn walk_python(&mut self, pid: u32, entry: Option<&[u8; 48]>) -> Result<(), RecorderError> {
        let _ = (pid, entry);
        Ok(())
    }
}
