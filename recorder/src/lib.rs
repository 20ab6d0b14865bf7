//! hotspot's recorder: turns BPF samples of live processes into a capture.

pub mod bpf;
pub mod capture_file;
pub mod error;
pub mod frame_table;
pub mod kallsyms;
pub mod launch;
pub mod mapping_table;
pub mod module_file;
pub mod module_table;
pub mod normalizer;
pub mod privilege;
pub mod proc_maps;
pub mod process_table;
pub mod recording;
pub mod session;
pub mod sink;
pub mod symbolizer;
pub mod user_stack;

pub use error::RecordError;
pub use recording::{Progress, RecordConfig, Recorder, StopReason, Summary, run};
