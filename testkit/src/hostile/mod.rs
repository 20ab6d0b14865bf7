//! Hostile captures, built with the format crate so that they are valid where they need
//! to be (checksums, compression) and reach deep into the readers: names made to drive a
//! terminal, ids out of range, self-references, duplicates, extreme times, limits at their
//! maxima and just over, decompression bombs, newer versions, and files that are not
//! captures at all.
//!
//! Used by `tests/hostile_e2e.rs` (the real binary), `tests/hostile_view_e2e.rs` (the views in
//! a terminal) and `replay/tests/{hostile_views,terminal_safety}.rs` (in-process); depends only
//! on hotspot-format.
//!
//! - [`build`]: the pieces (records, blocks, files, a small program and its samples);
//! - [`names`]: names made to drive a terminal, and a capture made of them;
//! - [`bombs`]: captures built to exhaust memory or time (inline expansion, deep stacks);
//! - [`cases`](mod@cases): every case, with what a correct reading must report.

pub mod bombs;
pub mod build;
pub mod cases;
pub mod names;

pub use crate::rng::Rng;
pub use bombs::{elf_bytes, many_deep_stacks, shared_prefix_stacks};
pub use build::{
    PERIOD, PID, T0, TID, batch, block_with, concat, crc32c, file, file_v, payload, program,
    raw_rec, rec, samples, session, written, zstd,
};
pub use cases::cases;
pub use names::{NASTY, nasty, nasty_names};

/// A hostile capture: a name for messages and the file's bytes.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    pub bytes: Vec<u8>,
    /// What a correct reading must report, when the case has a definite answer.
    pub expect: Expect,
}

/// What a case must give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// Opens; reports exactly this many samples.
    Samples(u64),
    /// Opens (a partial or odd capture); the sample count is not asserted.
    Opens,
    /// Refused with a one-line error holding this text.
    Error(&'static str),
    /// Either is acceptable (damage that may or may not leave a readable header).
    Any,
}

impl Case {
    pub fn new(name: impl Into<String>, bytes: Vec<u8>, expect: Expect) -> Case {
        Case {
            name: name.into(),
            bytes,
            expect,
        }
    }
}
