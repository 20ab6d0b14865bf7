//! The hotspot capture format: pure bytes in, records out. No file system, no BPF, no TUI.

pub mod records;

pub use records::*;
