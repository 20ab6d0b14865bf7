//! Which records are definitions, and their identity, so that the writer knows what to repeat
//! and readers can drop the repetitions ("first one wins", see `SPEC.md`).

use std::collections::HashSet;

use crate::records::Record;

/// Identity of a definition record: two definitions with the same key are the same fact, and
/// a reader keeps the first it sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DefKey {
    Session,
    String(u32),
    /// `(pid, start_ns)`: a new `start_ns` for the same pid is a new version (exec).
    Process(u32, u64),
    /// `(tid, time_ns)`: a new `time_ns` for the same tid is a new version (rename).
    Thread(u32, u64),
    Module(u32),
    Frame(u32),
    Stack(u32),
    /// Keyed by frame id.
    Symbol(u32),
    Unwinding,
    OffCpu,
    /// Keyed by feature code.
    FeatureOff(u32),
    /// Keyed by module id.
    InterpreterModule(u32),
    Scrubbed,
}

/// The definition key of `record`, or `None` for records that are not definitions
/// (samples, exits, losses, index, end).
pub fn def_key(record: &Record) -> Option<DefKey> {
    Some(match record {
        Record::Session(_) => DefKey::Session,
        Record::String { id, .. } => DefKey::String(*id),
        Record::Process(p) => DefKey::Process(p.pid, p.start_ns),
        Record::Thread(t) => DefKey::Thread(t.tid, t.time_ns),
        Record::Module(m) => DefKey::Module(m.id),
        Record::Frame(f) => DefKey::Frame(f.id),
        Record::Stack(s) => DefKey::Stack(s.id),
        Record::Symbol(s) => DefKey::Symbol(s.frame),
        Record::Unwinding(_) => DefKey::Unwinding,
        Record::OffCpu(_) => DefKey::OffCpu,
        Record::FeatureOff(f) => DefKey::FeatureOff(f.feature),
        Record::InterpreterModule(m) => DefKey::InterpreterModule(m.module),
        Record::Scrubbed(_) => DefKey::Scrubbed,
        Record::ProcessExit(_)
        | Record::Samples(_)
        | Record::Lost(_)
        | Record::LostMappings(_)
        | Record::OffCpuSamples(_)
        | Record::ThreadTimes(_)
        | Record::LostOffCpu(_)
        | Record::InterpreterProcess(_)
        | Record::Mark(_)
        | Record::Index(_)
        | Record::End(_) => return None,
    })
}

/// Remembers the definitions seen so far.
#[derive(Debug, Default, Clone)]
pub struct Dedup {
    seen: HashSet<DefKey>,
}

impl Dedup {
    pub fn new() -> Self {
        Self::default()
    }

    /// True when `record` should be kept: it is not a definition, or the first with its key.
    pub fn keep(&mut self, record: &Record) -> bool {
        match def_key(record) {
            Some(key) => self.seen.insert(key),
            None => true,
        }
    }
}
