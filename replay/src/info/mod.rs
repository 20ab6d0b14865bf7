//! `hotspot info`: what a capture is, how much it holds, how much of it has names, whether
//! it is whole, and what its bytes are spent on; with off-CPU data, each thread's time
//! on and off the CPU (`off_cpu.rs`). The text report is here; symbol coverage is
//! `coverage.rs`, the JSON document `json.rs`.

mod coverage;
mod json;
mod off_cpu;
pub mod personal;

pub use coverage::{Coverage, ModuleCoverage, coverage, hint};
pub use json::{json_of, scan_json};

use std::fmt::Write;

use hotspot_format::records::kind;

use crate::capture::Capture;
use crate::export::pct;
use crate::export::scan::{Scan, Sizes};
use crate::kind::FrameKind;
use crate::sanitize::display;
use crate::tally::Tally;

/// What `info` reports on: a capture's definitions and its samples tallied per stack
/// and thread (by a [`Scan`] as it read the file, or over a [`Capture`] in memory).
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    pub capture: &'a Capture,
    /// info reads the whole file: the tally's window is everything.
    pub counts: &'a Tally,
    /// Known only when read by a [`Scan`].
    pub sizes: Option<&'a Sizes>,
}

impl<'a> Facts<'a> {
    pub fn of_scan(scan: &'a Scan) -> Facts<'a> {
        Facts {
            capture: &scan.capture,
            counts: &scan.counts,
            sizes: Some(&scan.sizes),
        }
    }

    /// The facts of a capture in memory, with `counts` its [`Tally::of_samples`].
    pub fn of_capture(capture: &'a Capture, counts: &'a Tally) -> Facts<'a> {
        Facts {
            capture,
            counts,
            sizes: None,
        }
    }

    fn duration_s(&self) -> f64 {
        self.counts.span.map_or(0.0, |(a, b)| (b - a) as f64 / 1e9)
    }

    /// Samples taken in kernel mode (their leaf frame is in the kernel).
    fn kernel_samples(&self) -> u64 {
        let c = self.capture;
        self.counts
            .stack_samples
            .iter()
            .filter(|(stack, _)| {
                c.stacks
                    .get(stack)
                    .and_then(|fs| fs.first())
                    .is_some_and(|&f| FrameKind::of(c, f).is_kernel())
            })
            .map(|(_, n)| n)
            .sum()
    }

    /// Seconds from time 0 (see [`crate::clock`]) to `t`.
    fn offset_s(&self, t: u64) -> f64 {
        self.counts.clock.map_or(0.0, |c| c.offset_s(t))
    }
}

/// `YYYY-MM-DD HH:MM:SS UTC` from Unix ns, without a time-zone database.
pub fn utc(ns: u64) -> String {
    let s = crate::time::rfc3339(i128::from(ns));
    // "2024-02-29T12:34:56.000Z" → "2024-02-29 12:34:56 UTC"
    format!("{} {} UTC", &s[..10], &s[11..19])
}

fn kind_name(k: u32) -> String {
    kind::ALL
        .iter()
        .find(|(n, _)| *n == k)
        .map_or_else(|| format!("kind {k}"), |(_, name)| (*name).to_string())
}

/// Whether the file ended with the writer's end marker, and if not, where it stops.
fn ending(f: &Facts) -> String {
    let c = f.capture;
    let last = f
        .counts
        .span
        .map(|(_, b)| format!("; the last sample is at {:.3} s", f.offset_s(b)))
        .unwrap_or_default();
    match (&c.end, c.truncated) {
        (Some(_), None) => "clean (end marker present)".to_string(),
        (Some(_), Some((off, n))) => {
            format!("end marker present, but {n} trailing bytes at offset {off} were dropped")
        }
        (None, Some((off, n))) => format!(
            "truncated: the writer stopped mid-block; {n} bytes dropped at offset {off}{last}"
        ),
        (None, None) => {
            format!("cut: no end marker (the recorder was killed or is still writing){last}")
        }
    }
}

/// The text report of a capture read into memory.
pub fn text(c: &Capture) -> String {
    let counts = Tally::of_samples(c);
    text_of(&Facts::of_capture(c, &counts))
}

/// The text report of a scanned capture.
pub fn scan_text(scan: &Scan) -> String {
    text_of(&Facts::of_scan(scan))
}

/// The text report.
pub fn text_of(f: &Facts) -> String {
    let c = f.capture;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "capture:    {} (format {}.{}, {} bytes)",
        display(&c.path.to_string_lossy()),
        c.version.0,
        c.version.1,
        c.file_size
    );
    if let Some(s) = &c.session {
        let _ = writeln!(
            o,
            "host:       {} ({} {}, {} CPUs, page size {})",
            display(&s.host),
            display(&s.arch),
            display(&s.kernel_release),
            s.cpus,
            s.page_size
        );
        let _ = writeln!(
            o,
            "recorded:   {} at {} Hz by hotspot {}",
            utc(s.start_wall_ns),
            s.freq_hz,
            display(&s.recorder_version)
        );
        let _ = writeln!(o, "command:    {}", display(&s.command_line.join(" ")));
        let targets = if s.all_processes {
            "all processes".to_string()
        } else {
            s.targets
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(o, "targets:    {targets}");
    } else {
        let _ = writeln!(o, "session:    missing (the header block was lost)");
    }
    for off in &c.features_off {
        let _ = writeln!(o, "off:        {}", display(&off.line()));
    }
    personal::text(&mut o, f);
    let _ = writeln!(
        o,
        "duration:   {:.3} s (first to last sample)",
        f.duration_s()
    );
    let k = f.kernel_samples();
    let _ = writeln!(
        o,
        "samples:    {} ({} in kernel mode, {} in user mode)",
        f.counts.samples,
        k,
        f.counts.samples - k
    );
    let _ = writeln!(o, "lost:       {}", c.lost);
    if c.lost_mappings > 0 {
        let _ = writeln!(
            o,
            "lost mapping events: {} (the kernel's ring was full: frames of the processes \
             they were about may be unnamed)",
            c.lost_mappings
        );
    }
    let _ = writeln!(o, "processes:  {}", c.processes.len());
    for p in c.processes.values() {
        let exit = if c.exits.contains_key(&p.pid) {
            ", exited"
        } else {
            ""
        };
        let _ = writeln!(
            o,
            "  {:>7} {}{exit}: {}",
            p.pid,
            display(&p.name),
            display(&p.cmdline.join(" "))
        );
    }
    let _ = writeln!(o, "threads:    {}", c.threads.len());
    let mut busiest: Vec<(u64, u32)> = f
        .counts
        .thread_samples
        .iter()
        .map(|(&t, &n)| (n, t))
        .collect();
    busiest.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for (n, tid) in busiest.iter().take(10) {
        let name = c.threads.get(tid).map_or("", |t| t.name());
        let _ = writeln!(
            o,
            "  {tid:>7} {:<16} {n:>8} samples ({:.1}%)",
            display(name),
            pct(*n, f.counts.samples)
        );
    }
    if busiest.len() > 10 {
        let _ = writeln!(o, "  … {} more threads with samples", busiest.len() - 10);
    }
    off_cpu::text(&mut o, f);
    unwinding_text(&mut o, &crate::unwinding::completeness(c, &f.counts.tally));
    interpreters_text(&mut o, c);
    let _ = writeln!(
        o,
        "stacks:     {} distinct, {} frames, {} modules, {} symbols",
        c.stacks.len(),
        c.frames.len(),
        c.modules.len(),
        c.symbols.len()
    );
    let cov = coverage(f);
    let _ = writeln!(
        o,
        "symbols:    {:.1}% of samples have a named leaf frame ({} of {})",
        pct(cov.named, cov.samples),
        cov.named,
        cov.samples
    );
    let width = cov
        .modules
        .iter()
        .map(|m| m.module.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(6, 32);
    for m in &cov.modules {
        let _ = write!(o, "  {:<width$} {:>8} samples", m.module, m.samples);
        if m.samples > 0 {
            let _ = write!(o, " ({:.1}% named)", pct(m.named, m.samples));
        }
        let _ = write!(o, ", {} of {} frames named", m.named_frames, m.frames);
        if let Some(h) = &m.hint {
            let _ = write!(o, "; no symbols: {h}");
        }
        o.push('\n');
    }
    let _ = writeln!(o, "blocks:     {}", c.blocks);
    let _ = writeln!(o, "ending:     {}", ending(f));
    for d in &c.corrupt {
        let _ = writeln!(
            o,
            "damage:     {} bytes skipped at offset {}: {}",
            d.bytes,
            d.offset,
            display(&d.what)
        );
    }
    for (k, n) in &c.unknown_kinds {
        let _ = writeln!(
            o,
            "note:       skipped {n} records of unknown kind {k} (written by a newer hotspot)"
        );
    }
    match f.sizes {
        Some(s) => size_text(&mut o, s),
        None => {
            let _ = writeln!(o, "records:");
            for (k, n) in &c.record_counts {
                let _ = writeln!(o, "  {:<12} {n:>8}", kind_name(*k));
            }
        }
    }
    o
}

/// The interpreters the recorder recognised (1.5): walked, with how their frames fared,
/// or not, with the reason.
fn interpreters_text(o: &mut String, c: &Capture) {
    use hotspot_format::InterpreterStatus;
    if c.interpreters.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "python:     {} interpreter processes",
        c.interpreters.len()
    );
    for p in c.interpreters.values() {
        let what = format!("{} {}", display(&p.path), display(&p.version));
        match &p.status {
            InterpreterStatus::Walked => {
                let _ = writeln!(
                    o,
                    "  {:>7} {what}: {} of {} samples with Python frames merged, {} mismatched (kept native), {} without Python, {} cut at the cap, {} unreadable frames",
                    p.pid,
                    p.merged,
                    p.samples,
                    p.mismatched,
                    p.without_frames,
                    p.cut,
                    p.unresolved_frames
                );
            }
            InterpreterStatus::Unsupported { reason } => {
                let _ = writeln!(o, "  {:>7} {what}: not walked: {}", p.pid, display(reason));
            }
        }
    }
}

fn unwinding_text(o: &mut String, u: &crate::unwinding::Completeness) {
    if !u.checked {
        let _ = writeln!(
            o,
            "unwinding:  frame pointers (the kernel's walk: code without frame pointers loses \
             callers, and stacks are not checked for completeness)"
        );
        return;
    }
    let _ = writeln!(
        o,
        "unwinding:  call-frame information over up to {} bytes of stack per sample",
        u.stack_cap
    );
    for p in u.processes.iter().take(10) {
        let _ = write!(
            o,
            "  {:>7} {:<16} {:.1}% of stacks complete ({} of {})",
            p.pid,
            display(&p.name),
            pct(p.complete, p.samples),
            p.complete,
            p.samples
        );
        for r in &p.reasons {
            let _ = write!(o, "; {} {}", r.samples, display(&r.reason));
        }
        o.push('\n');
    }
    if u.processes.len() > 10 {
        let _ = writeln!(
            o,
            "  … {} more processes with samples",
            u.processes.len() - 10
        );
    }
}

fn size_text(o: &mut String, s: &Sizes) {
    let blocks: u64 = s.kinds.values().map(|k| k.disk_bytes).sum::<u64>() + s.unattributed;
    let _ = writeln!(
        o,
        "size:       {} bytes = {} file header + {} in blocks + {} damaged",
        s.file, s.file_header, blocks, s.damaged
    );
    let _ = writeln!(
        o,
        "  (raw: the records' encoded bytes before compression, measured with the format's \
         codec; disk: each block's bytes, header included, split by its records' raw shares)"
    );
    let _ = writeln!(
        o,
        "  {:<12} {:>8} {:>12} {:>12} {:>6}",
        "record", "count", "raw bytes", "disk bytes", "disk%"
    );
    for (k, v) in &s.kinds {
        let _ = writeln!(
            o,
            "  {:<12} {:>8} {:>12} {:>12} {:>5.1}%",
            kind_name(*k),
            v.records,
            v.raw_bytes,
            v.disk_bytes,
            pct(v.disk_bytes, s.file)
        );
    }
    if s.unattributed > 0 {
        let _ = writeln!(
            o,
            "  {:<12} {:>8} {:>12} {:>12} {:>5.1}%",
            "(unknown)",
            "-",
            "-",
            s.unattributed,
            pct(s.unattributed, s.file)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_formats_known_instants() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_709_210_096_000_000_000), "2024-02-29 12:34:56 UTC");
    }
}
