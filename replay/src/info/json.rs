//! `info --json`: the `hotspot-info` document (`docs/json-schema.md`).

use std::collections::BTreeMap;

use serde::Serialize;

use super::coverage::{Coverage, coverage};
use super::{Facts, kind_name, off_cpu, personal};
use crate::export::scan::Scan;
use crate::export::summary::{CaptureInfo, Session, capture_info_of, session_of};
use crate::sanitize::display;

#[derive(Serialize)]
struct Counts {
    samples: u64,
    kernel_samples: u64,
    lost: u64,
    lost_mappings: u64,
    processes: usize,
    threads: usize,
    stacks: usize,
    frames: usize,
    modules: usize,
    symbols: usize,
    blocks: u64,
}

#[derive(Serialize)]
struct Ending {
    clean: bool,
    truncated: Option<Damage>,
    corrupt: Vec<Damage>,
    last_sample_s: Option<f64>,
}

#[derive(Serialize)]
struct Damage {
    offset: u64,
    bytes: u64,
    reason: Option<String>,
}

#[derive(Serialize)]
struct Thread {
    tid: u32,
    pid: u32,
    name: String,
    samples: u64,
}

#[derive(Serialize)]
struct Process {
    pid: u32,
    ppid: u32,
    name: String,
    command_line: Vec<String>,
    exited: bool,
}

#[derive(Serialize)]
struct KindRow {
    kind: String,
    records: u64,
    raw_bytes: Option<u64>,
    disk_bytes: Option<u64>,
}

#[derive(Serialize)]
struct SizeInfo {
    file: u64,
    file_header: Option<u64>,
    damaged: Option<u64>,
    unattributed: Option<u64>,
    records: Vec<KindRow>,
}

/// A feature the recording went without (format 1.4).
#[derive(Serialize)]
struct FeatureOffJson {
    feature: u32,
    /// `None` for a code this reader does not know.
    name: Option<&'static str>,
    instead: String,
    reason: String,
}

/// An interpreter the recorder recognised, and how its frames fared (format 1.5, kind 22).
#[derive(Serialize)]
struct InterpreterJson {
    pid: u32,
    start_ns: u64,
    /// The process's name, empty when no record names it.
    name: String,
    language: &'static str,
    path: String,
    version: String,
    /// `walked` or `unsupported`.
    status: &'static str,
    /// Why it was not walked; `None` when it was.
    reason: Option<String>,
    samples: u64,
    merged: u64,
    mismatched: u64,
    without_frames: u64,
    unresolved_frames: u64,
    cut: u64,
}

fn interpreters(c: &crate::capture::Capture) -> Vec<InterpreterJson> {
    use hotspot_format::{InterpreterStatus, Language};
    c.interpreters
        .values()
        .map(|p| {
            let (status, reason) = match &p.status {
                InterpreterStatus::Walked => ("walked", None),
                InterpreterStatus::Unsupported { reason } => ("unsupported", Some(display(reason))),
            };
            InterpreterJson {
                pid: p.pid,
                start_ns: p.start_ns,
                name: c
                    .processes
                    .get(&p.pid)
                    .map(|proc| display(&proc.name))
                    .unwrap_or_default(),
                language: match p.language {
                    Language::Python => "python",
                },
                path: display(&p.path),
                version: display(&p.version),
                status,
                reason,
                samples: p.samples,
                merged: p.merged,
                mismatched: p.mismatched,
                without_frames: p.without_frames,
                unresolved_frames: p.unresolved_frames,
                cut: p.cut,
            }
        })
        .collect()
}

#[derive(Serialize)]
struct Document {
    schema: &'static str,
    version: u32,
    capture: CaptureInfo,
    session: Option<Session>,
    duration_s: f64,
    counts: Counts,
    processes: Vec<Process>,
    threads: Vec<Thread>,
    /// Only when the recording went without something (format 1.4).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    features_off: Vec<FeatureOffJson>,
    /// Only when the recorder recognised an interpreter (format 1.5).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    interpreters: Vec<InterpreterJson>,
    /// Formats from 1.3 on only.
    #[serde(skip_serializing_if = "Option::is_none")]
    off_cpu: Option<off_cpu::OffCpuJson>,
    coverage: Coverage,
    unwinding: crate::unwinding::Completeness,
    ending: Ending,
    unknown_kinds: BTreeMap<u32, u64>,
    size: SizeInfo,
    /// What the capture holds about the machine and its people (any format).
    personal: personal::Personal,
    /// What was scrubbed before the capture was written (format 1.6); `null`: nothing.
    scrubbed: Option<hotspot_format::Scrubbed>,
    marks: Vec<personal::MarkJson>,
}

/// The JSON report of a scanned capture.
pub fn scan_json(scan: &Scan) -> String {
    json_of(&Facts::of_scan(scan))
}

/// The `hotspot-info` JSON document (see `docs/json-schema.md`), newline-terminated.
pub fn json_of(f: &Facts) -> String {
    let c = f.capture;
    let round = |x: f64| (x * 1e9).round() / 1e9;
    let size = match f.sizes {
        Some(s) => SizeInfo {
            file: s.file,
            file_header: Some(s.file_header),
            damaged: Some(s.damaged),
            unattributed: Some(s.unattributed),
            records: s
                .kinds
                .iter()
                .map(|(k, v)| KindRow {
                    kind: kind_name(*k),
                    records: v.records,
                    raw_bytes: Some(v.raw_bytes),
                    disk_bytes: Some(v.disk_bytes),
                })
                .collect(),
        },
        None => SizeInfo {
            file: c.file_size,
            file_header: None,
            damaged: None,
            unattributed: None,
            records: c
                .record_counts
                .iter()
                .map(|(k, n)| KindRow {
                    kind: kind_name(*k),
                    records: *n,
                    raw_bytes: None,
                    disk_bytes: None,
                })
                .collect(),
        },
    };
    let doc = Document {
        schema: "hotspot-info",
        version: 1,
        capture: capture_info_of(c),
        session: session_of(c),
        duration_s: round(f.duration_s()),
        counts: Counts {
            samples: f.counts.samples,
            kernel_samples: f.kernel_samples(),
            lost: c.lost,
            lost_mappings: c.lost_mappings,
            processes: c.processes.len(),
            threads: c.threads.len(),
            stacks: c.stacks.len(),
            frames: c.frames.len(),
            modules: c.modules.len(),
            symbols: c.symbols.len(),
            blocks: c.blocks,
        },
        processes: c
            .processes
            .values()
            .map(|p| Process {
                pid: p.pid,
                ppid: p.ppid,
                name: display(&p.name),
                command_line: p.cmdline.iter().map(|a| display(a)).collect(),
                exited: c.exits.contains_key(&p.pid),
            })
            .collect(),
        threads: c
            .threads
            .values()
            .map(|t| Thread {
                tid: t.tid,
                pid: t.pid,
                name: display(t.name()),
                samples: f.counts.thread_samples.get(&t.tid).copied().unwrap_or(0),
            })
            .collect(),
        features_off: c
            .features_off
            .iter()
            .map(|off| FeatureOffJson {
                feature: off.feature,
                name: hotspot_format::feature::name(off.feature),
                instead: display(&off.instead),
                reason: display(&off.reason),
            })
            .collect(),
        interpreters: interpreters(c),
        off_cpu: off_cpu::json(f),
        coverage: coverage(f),
        unwinding: {
            let mut u = crate::unwinding::completeness(c, &f.counts.tally);
            for p in &mut u.processes {
                p.name = display(&p.name);
                for r in &mut p.reasons {
                    r.reason = display(&r.reason);
                }
            }
            u
        },
        ending: Ending {
            clean: c.end.is_some() && c.truncated.is_none(),
            truncated: c.truncated.map(|(offset, bytes)| Damage {
                offset,
                bytes,
                reason: None,
            }),
            corrupt: c
                .corrupt
                .iter()
                .map(|d| Damage {
                    offset: d.offset,
                    bytes: d.bytes,
                    reason: Some(display(&d.what)),
                })
                .collect(),
            last_sample_s: f.counts.span.map(|(_, b)| round(f.offset_s(b))),
        },
        unknown_kinds: c.unknown_kinds.clone(),
        size,
        personal: personal::personal(c),
        scrubbed: c.scrubbed,
        marks: personal::marks_json(f),
    };
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
    s.push('\n');
    s
}
