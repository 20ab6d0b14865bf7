//! The live side of recording this machine: the machine as the core's [`Host`]
//! ([`ProcHost`]: `/proc`, `/sys`, the kernel's names), its clocks and header facts
//! ([`machine`]), and the session that puts a recording together ([`session`]: the BPF
//! sampler loaded, targets started, header written, privileges dropped).
//!
//! [`Host`]: crate::host::Host

mod elf_bytes;
pub mod flight;
pub mod history;
pub mod kernel_names;
pub mod machine;
pub mod marks;
pub mod proc_host;
pub mod proc_maps;
pub mod session;

pub use proc_host::{ProcHost, process_exists};
