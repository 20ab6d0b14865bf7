//! hotspot's recorder: turns BPF samples of live processes into a capture.

pub mod bpf;
