//! Everything kernel-facing: the BPF sampler, the live [`EventSource`] (its ring and the
//! kernel's mapping events, merged in time order), and the decoder of its records.
//!
//! [`EventSource`]: crate::source::EventSource

pub mod abi;
mod btf_subset;
mod caps;
pub mod decode;
mod error;
mod forced_refusal;
mod load;
mod mapping_events;
mod off_cpu;
mod off_cpu_attach;
pub mod perf_records;
mod programs;
mod ring_size;
mod sampler;
mod time_order;

pub use decode::{DecodeError, parse_event};
pub use error::BpfError;
pub use forced_refusal::VARIABLE as TEST_REFUSE_VARIABLE;
pub use load::{DEFAULT_PYTHON_FRAMES, SamplerOptions};
pub use off_cpu::ProgramStats;
pub use ring_size::ring_bytes_for;
pub use sampler::BpfSampler;
