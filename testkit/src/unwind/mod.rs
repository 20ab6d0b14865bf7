//! Test helpers for the unwinder: [`fuzz_check`] (what its fuzz target checks, replayed by
//! its regression test), [`craft`] (ELF files and CFI written byte by byte) and, with the
//! `unwind-dumps` feature, `dumps` (real stacks from C programs) and `oracle` (framehop).

// The dumps' processes and framehop's unwinder hold whole modules: printing them helps no
// failure message.
#![allow(missing_debug_implementations)]

pub mod craft;
#[cfg(feature = "unwind-dumps")]
pub mod dumps;
pub mod fuzz_check;
#[cfg(feature = "unwind-dumps")]
pub mod oracle;

#[cfg(feature = "unwind-dumps")]
pub use dumps::*;
