//! Hard limits a reader enforces on untrusted captures, and the writer respects so that its
//! output always passes them (see `SPEC.md`, "Limits").

use crate::error::{FormatError, RecordError};
use crate::records::{InterpreterStatus, Record};

/// Largest compressed payload a block may declare.
pub const MAX_PAYLOAD_BYTES: u32 = 16 << 20;
/// Largest decompressed payload a block may declare; also the decompression buffer bound.
pub const MAX_RAW_BYTES: u32 = 64 << 20;
/// Longest string (and byte string, such as a build id) inside any record.
pub const MAX_STRING_BYTES: usize = 64 << 10;
/// Most frames in one stack: 1,024 user frames from the CFI unwinder, the marker that
/// says why a stack stopped short, and 127 kernel frames fit (1.0 allowed 1024).
pub const MAX_STACK_FRAMES: usize = 2048;
/// Most samples in one `Samples` record.
pub const MAX_BATCH_SAMPLES: u32 = 1_000_000;
/// Most samples in one block, over all its `Samples` records: bounds what one block can
/// make a reader allocate (24 bytes a sample).
pub const MAX_BLOCK_SAMPLES: u64 = 1_000_000;
/// Most records in one block, of known and unknown kinds alike: bounds the decoded
/// `Vec<Record>` a tiny, highly compressible block could otherwise inflate to, and the
/// time spent skipping records of unknown kinds.
pub const MAX_BLOCK_RECORDS: usize = 262_144;
/// Most distinct unknown record kinds in one block (a newer minor version adds a handful).
pub const MAX_UNKNOWN_KINDS: usize = 1024;
/// Largest record body the writer accepts; with its ~1 MiB block target this keeps every
/// payload far below [`MAX_PAYLOAD_BYTES`] and [`MAX_RAW_BYTES`].
pub const MAX_RECORD_BODY: usize = 4 << 20;

/// Longest mark text hotspot writes (a reader accepts any string up to
/// [`MAX_STRING_BYTES`]): a mark names an event, it does not carry a log.
pub const MAX_MARK_BYTES: usize = 1024;

/// A field over its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exceeded {
    pub what: &'static str,
    pub value: u64,
    pub max: u64,
}

impl From<Exceeded> for RecordError {
    fn from(e: Exceeded) -> Self {
        RecordError::Limit {
            what: e.what,
            value: e.value,
            max: e.max,
        }
    }
}

impl From<Exceeded> for FormatError {
    fn from(e: Exceeded) -> Self {
        FormatError::Limit {
            what: e.what,
            value: e.value,
            max: e.max,
        }
    }
}

fn check_len(what: &'static str, len: usize, max: usize) -> Result<(), Exceeded> {
    if len > max {
        Err(Exceeded {
            what,
            value: len as u64,
            max: max as u64,
        })
    } else {
        Ok(())
    }
}

fn check_str(what: &'static str, s: &str) -> Result<(), Exceeded> {
    check_len(what, s.len(), MAX_STRING_BYTES)
}

/// Checks the per-field limits of one record (string lengths, stack depth, batch size).
pub fn check_record(record: &Record) -> Result<(), Exceeded> {
    match record {
        Record::Session(s) => {
            check_str("session host", &s.host)?;
            check_str("session kernel release", &s.kernel_release)?;
            check_str("session arch", &s.arch)?;
            check_str("session recorder version", &s.recorder_version)?;
            s.command_line
                .iter()
                .try_for_each(|a| check_str("session command-line argument", a))
        }
        Record::String { text, .. } => check_str("string", text),
        Record::Process(p) => {
            check_str("process name", &p.name)?;
            check_str("process exe", &p.exe)?;
            p.cmdline
                .iter()
                .try_for_each(|a| check_str("process command-line argument", a))
        }
        Record::Thread(t) => check_str("thread name", &t.name),
        Record::Mark(m) => check_str("mark text", &m.text),
        Record::Module(m) => {
            check_str("module path", &m.path)?;
            check_len("module build id", m.build_id.len(), MAX_STRING_BYTES)
        }
        Record::Stack(s) => check_len("stack depth", s.frames.len(), MAX_STACK_FRAMES),
        Record::Samples(b) => check_len(
            "samples in a batch",
            b.samples.len(),
            MAX_BATCH_SAMPLES as usize,
        ),
        Record::OffCpuSamples(b) => check_len(
            "off-CPU samples in a batch",
            b.samples.len(),
            MAX_BATCH_SAMPLES as usize,
        ),
        Record::InterpreterProcess(p) => {
            check_str("interpreter path", &p.path)?;
            check_str("interpreter version", &p.version)?;
            match &p.status {
                InterpreterStatus::Walked => Ok(()),
                InterpreterStatus::Unsupported { reason } => {
                    check_str("interpreter status reason", reason)
                }
            }
        }
        Record::FeatureOff(f) => {
            check_str("feature-off instead", &f.instead)?;
            check_str("feature-off reason", &f.reason)
        }
        Record::Frame(_)
        | Record::InterpreterModule(_)
        | Record::Symbol(_)
        | Record::ProcessExit(_)
        | Record::Lost(_)
        | Record::Index(_)
        | Record::End(_)
        | Record::Unwinding(_)
        | Record::LostMappings(_)
        | Record::OffCpu(_)
        | Record::ThreadTimes(_)
        | Record::LostOffCpu(_)
        | Record::Scrubbed(_) => Ok(()),
    }
}
