//! hotspot's recorder: turns samples of live processes into a capture.
//!
//! Two sides of one seam. The core ([`convert`], driven by [`recording`]) turns
//! [`event::Event`]s from any [`source::EventSource`] into a capture, asking a
//! [`host::Host`] what the events do not say; it knows nothing of BPF or `/proc`. The
//! live side supplies both for this machine: the BPF sampler ([`bpf`]), the machine as a
//! host ([`live::ProcHost`]), and the recording session that sets them up
//! ([`live::session`]).

pub mod bpf;
pub mod capture_file;
pub mod convert;
pub(crate) mod error;
pub mod event;
pub mod host;
pub mod launch;
pub mod live;
pub(crate) mod name_cache;
pub mod privilege;
pub mod recording;
pub(crate) mod sink;
pub mod source;
pub(crate) mod symbol_worker;

pub use convert::{ConvertConfig, Counts, Held, Totals};
pub use error::RecorderError;
pub use recording::{Progress, RecordConfig, Recorder, Segments, StopReason, Summary, run};
