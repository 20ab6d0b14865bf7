//! What the pipeline tests share: a scripted event source and a stand-in for `/proc`, so
//! the recording core is driven as the live recorder drives it, without root.

#![allow(dead_code)] // each test file uses its own part

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use hotspot_format::Record;
use hotspot_recorder::event::{Comm, Event, OpenThreadTimes};
use hotspot_recorder::live::ProcHost;
use hotspot_recorder::source::EventSource;
use hotspot_recorder::{RecordConfig, RecorderError, Summary};

/// Replays a script of event batches, one batch per poll, with the counts a source keeps.
#[derive(Debug, Default)]
pub struct ScriptedSource {
    pub script: VecDeque<Vec<Event>>,
    /// Samples lost per CPU, cumulative.
    pub lost: Vec<u64>,
    /// Off-CPU records lost, cumulative: while sampling, and once stopped.
    pub lost_off_cpu: [u64; 2],
    /// The threads left at the end, handed over once sampling stopped.
    pub live: Vec<(u32, OpenThreadTimes)>,
    /// What each read of the live threads at a segment's end finds, in turn; `live` once
    /// these are used up.
    pub live_reads: VecDeque<Vec<(u32, OpenThreadTimes)>>,
    /// When accounting stopped, told once sampling stopped.
    pub accounting_end: Option<u64>,
    pub stopped: bool,
    /// Waits this long before handing over each batch (a flight recorder's segments then
    /// end between batches).
    pub pace: Duration,
}

impl ScriptedSource {
    pub fn new(script: Vec<Vec<Event>>) -> Self {
        ScriptedSource {
            script: script.into(),
            ..ScriptedSource::default()
        }
    }
}

impl EventSource for ScriptedSource {
    fn poll(&mut self, timeout: Duration, out: &mut Vec<Event>) -> Result<(), RecorderError> {
        match self.script.pop_front() {
            Some(batch) => {
                std::thread::sleep(self.pace);
                out.extend(batch);
            }
            None => std::thread::sleep(timeout.min(Duration::from_millis(10))),
        }
        Ok(())
    }
    fn lost_per_cpu(&mut self) -> Result<Vec<u64>, RecorderError> {
        Ok(self.lost.clone())
    }
    fn stop_sampling(&mut self) -> Result<(), RecorderError> {
        self.stopped = true;
        Ok(())
    }
    fn lost_off_cpu(&mut self) -> Result<u64, RecorderError> {
        Ok(self.lost_off_cpu[usize::from(self.stopped)])
    }
    fn accounting_end(&self) -> Option<u64> {
        self.accounting_end.filter(|_| self.stopped)
    }
    fn take_thread_times(&mut self) -> Result<Vec<(u32, OpenThreadTimes)>, RecorderError> {
        assert!(self.stopped, "thread times taken before sampling stopped");
        Ok(std::mem::take(&mut self.live))
    }
    fn thread_times_now(&mut self) -> Result<Vec<(u32, OpenThreadTimes)>, RecorderError> {
        assert!(
            !self.stopped,
            "thread times read at a segment's end after sampling stopped"
        );
        Ok(self
            .live_reads
            .pop_front()
            .unwrap_or_else(|| self.live.clone()))
    }
}

/// A /proc stand-in: our own process under its real pid, plus a made-up kallsyms.
pub fn fake_proc(dir: &Path, kallsyms: &str) {
    let me = std::process::id();
    std::os::unix::fs::symlink(format!("/proc/{me}"), dir.join(me.to_string()))
        .expect("symlink pid");
    std::os::unix::fs::symlink("/proc/self", dir.join("self")).expect("symlink self");
    std::fs::write(dir.join("kallsyms"), kallsyms).expect("kallsyms");
}

/// A thread name as the kernel keeps it.
pub fn comm(name: &str) -> Comm {
    let mut c = [0u8; 16];
    c[..name.len()].copy_from_slice(name.as_bytes());
    c
}

/// Records `source` into memory as the live recorder would, with `proc_dir` standing in
/// for `/proc` (and `proc_dir/sys` for `/sys`).
pub fn record(
    source: &mut ScriptedSource,
    cfg: &RecordConfig,
    proc_dir: &Path,
    stop: &AtomicBool,
) -> (Summary, Vec<u8>) {
    let writer = hotspot_format::Writer::new(Vec::new(), Default::default()).expect("writer");
    let host = ProcHost::new(proc_dir, proc_dir.join("sys"));
    hotspot_recorder::run(source, writer, cfg, Box::new(host), stop, &mut |_| {}).expect("records")
}

/// A capture's strings by their id, from its String records.
pub fn strings(records: &[Record]) -> HashMap<u32, String> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::String { id, text } => Some((*id, text.clone())),
            _ => None,
        })
        .collect()
}
