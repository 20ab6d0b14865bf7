//! The hotspot capture format: pure bytes in, records out. No file system, no BPF, no TUI.
//!
//! `SPEC.md` at the repository root describes every byte; this crate is its reference
//! implementation. Write with [`Writer`], read a whole capture with [`Reader`] (or
//! [`read_all`]), tail a growing one with [`Follower`].

pub mod block;
pub mod codec;
pub mod columns;
pub mod definitions;
pub mod diagnostics;
pub mod error;
pub mod follower;
pub mod header;
pub mod limits;
pub mod merge;
pub mod placeholder;
pub mod reader;
pub mod records;
pub mod rewrite;
pub mod scrub;
pub mod segment;
pub mod varint;
pub mod writer;

pub use diagnostics::{Diagnostics, read_all};
pub use error::{CorruptReason, FormatError};
pub use follower::Follower;
pub use header::FileHeader;
pub use reader::{Block, Event, Reader, find_index};
pub use records::*;
pub use writer::{BlockEvent, BlockObserver, Writer};
