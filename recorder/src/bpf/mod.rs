//! Everything kernel-facing: the BPF sampler behind the narrow [`EventSource`] seam, and the decoder of its records.

mod btf_subset;
mod caps;
mod error;
mod mapping_events;
mod off_cpu;
mod off_cpu_attach;
pub mod perf_records;
mod programs;
pub mod raw;
mod ring_size;
mod sampler;
pub mod thread_times;
mod time_order;

pub use error::BpfError;
pub use off_cpu::ProgramStats;
pub use raw::{RawError, RawEvent, RawOffCpu, RawSample, StackEnd, UserRegs, parse_event};
pub use ring_size::ring_bytes_for;
pub use sampler::{BpfSampler, EventSource, SamplerOptions};
pub use thread_times::{RawThread, RawThreadTimes};
