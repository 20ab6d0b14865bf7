//! The capture summary every document carries (file, format version, size, how it ended,
//! the recording session), in the form the JSON schemas give it; shared by `report`,
//! `info` and the other outputs' titles.

use serde::Serialize;

use crate::capture::Capture;
use crate::metric::Metric;
use crate::sanitize::display;
use crate::time::rfc3339;

#[derive(Serialize)]
pub(crate) struct CaptureInfo {
    pub file: String,
    pub format_version: String,
    pub size_bytes: u64,
    pub ending: &'static str,
}

#[derive(Serialize)]
pub(crate) struct Session {
    pub host: String,
    pub kernel_release: String,
    pub arch: String,
    pub cpus: u32,
    pub freq_hz: u32,
    pub period_ns: u64,
    pub command_line: Vec<String>,
    pub start_utc: String,
    pub start_wall_ns: u64,
    pub start_mono_ns: u64,
    pub recorder_version: String,
}

/// A mark (`hotspot mark`) in a JSON document.
#[derive(Debug, Clone, Serialize)]
pub struct MarkJson {
    pub time_ns: u64,
    /// Seconds from time 0 (see [`crate::clock`]), as the timeline counts them.
    pub time_s: f64,
    pub text: String,
}

/// The capture's marks in file order, placed on `clock`.
pub(crate) fn marks_of(c: &Capture, clock: Option<crate::clock::Clock>) -> Vec<MarkJson> {
    c.marks
        .iter()
        .map(|m| MarkJson {
            time_ns: m.time_ns,
            time_s: (clock.map_or(0.0, |k| k.offset_s(m.time_ns)) * 1e9).round() / 1e9,
            text: display(&m.text),
        })
        .collect()
}

pub(crate) fn capture_info_of(c: &Capture) -> CaptureInfo {
    CaptureInfo {
        file: display(
            &c.path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        ),
        format_version: format!("{}.{}", c.version.0, c.version.1),
        size_bytes: c.file_size,
        ending: match (&c.end, c.truncated) {
            (Some(_), None) => "clean",
            (_, Some(_)) => "truncated",
            (None, None) => "cut",
        },
    }
}

pub(crate) fn session_of(c: &Capture) -> Option<Session> {
    c.session.as_ref().map(|s| Session {
        host: display(&s.host),
        kernel_release: display(&s.kernel_release),
        arch: display(&s.arch),
        cpus: s.cpus,
        freq_hz: s.freq_hz,
        period_ns: c.period_ns(Metric::Cpu),
        command_line: s.command_line.iter().map(|a| display(a)).collect(),
        start_utc: rfc3339(i128::from(s.start_wall_ns)),
        start_wall_ns: s.start_wall_ns,
        start_mono_ns: s.start_mono_ns,
        recorder_version: display(&s.recorder_version),
    })
}
