//! hotspot's recorder: turns BPF samples of live processes into a capture.

pub mod bpf;
pub mod capture_file;
pub(crate) mod error;
pub(crate) mod frame_table;
pub mod kernel_names;
pub mod launch;
pub(crate) mod mapping_table;
pub(crate) mod module_table;
pub(crate) mod normalizer;
pub mod privilege;
pub mod proc_maps;
pub(crate) mod process_table;
pub mod recording;
pub mod session;
pub(crate) mod sink;
pub(crate) mod symbols;
pub(crate) mod user_stack;

// The module cache's recorder side, by its old path: the unwinder's glue uses it.
pub(crate) use symbols::module_file;

pub use error::RecordError;
pub use recording::{Progress, RecordConfig, Recorder, StopReason, Summary, run};
