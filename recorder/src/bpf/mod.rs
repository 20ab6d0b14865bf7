//! Everything kernel-facing: the BPF sampler behind the narrow [`EventSource`] seam, and the decoder of its records.

mod btf_subset;
mod caps;
mod error;
mod ksym;
mod mapping_events;
pub mod perf_records;
pub mod raw;
mod sampler;
mod time_order;

pub use error::BpfError;
pub use ksym::BpfKernelSymbols;
pub use raw::{RawError, RawEvent, RawSample, StackEnd, UserRegs, parse_event};
pub use sampler::{BpfSampler, EventSource, SamplerOptions, ring_bytes_for};
