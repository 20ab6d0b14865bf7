//! `hotspot info`: what a capture is, how much it holds, how much of it has names, whether
//! it is whole, and what its bytes are spent on; with off-CPU data, each thread's time
//! on and off the CPU (`off_cpu.rs`).

mod off_cpu;

use std::collections::BTreeMap;
use std::fmt::Write;

use hotspot_format::records::kind;
use hotspot_format::{Module, ModuleId, ModuleKind};
use serde::Serialize;

use crate::capture::{Capture, short_module};
use crate::export::pct;
use crate::export::scan::{Scan, Sizes};
use crate::export::summary::{CaptureInfo, Session, capture_info_of, session_of};
use crate::names::{self, UNKNOWN};
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
                    .and_then(|f| c.frames.get(f))
                    .and_then(|f| c.modules.get(&f.module))
                    .is_some_and(|m| m.kind.is_kernel())
            })
            .map(|(_, n)| n)
            .sum()
    }

    /// Seconds from time 0 (see [`crate::clock`]) to `t`.
    fn offset_s(&self, t: u64) -> f64 {
        self.counts.clock.map_or(0.0, |c| c.offset_s(t))
    }
}

/// Symbol coverage of one module.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModuleCoverage {
    pub module: String,
    pub path: String,
    pub kind: &'static str,
    pub build_id: String,
    /// Samples whose leaf frame is in this module.
    pub samples: u64,
    /// Of those, samples whose leaf frame has a function name.
    pub named: u64,
    /// Distinct frames in this module, and how many of them have a name.
    pub frames: u64,
    pub named_frames: u64,
    /// What to do when the module has no names at all.
    pub hint: Option<String>,
}

/// Share of samples whose leaf frame has a name, overall and per module.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Coverage {
    pub samples: u64,
    pub named: u64,
    /// Busiest first.
    pub modules: Vec<ModuleCoverage>,
}

fn kind_label(k: ModuleKind) -> &'static str {
    match k {
        ModuleKind::Elf => "elf",
        ModuleKind::Kernel => "kernel",
        ModuleKind::KernelModule => "kernel-module",
        ModuleKind::Vdso => "vdso",
        ModuleKind::Jit => "jit",
    }
}

/// What would give a module without any symbols its names.
pub fn hint(m: &Module) -> String {
    let name = short_module(&m.path);
    match m.kind {
        ModuleKind::Kernel | ModuleKind::KernelModule => {
            "kernel symbols were hidden when recording: record as root, or set \
             kernel.kptr_restrict=0"
                .to_string()
        }
        ModuleKind::Jit => "anonymous executable memory (JIT code) without a perf map: the \
             runtime must write /tmp/perf-PID.map (e.g. node --perf-basic-prof)"
            .to_string(),
        ModuleKind::Vdso => "the vDSO has no symbols to give".to_string(),
        ModuleKind::Elf if m.path == "[unknown]" => "addresses in no mapping the recorder \
             knew of: a corrupt frame pointer, or mapping events the kernel dropped"
            .to_string(),
        ModuleKind::Elf if m.path.ends_with(" (deleted)") => "the file was deleted or \
             replaced after it was mapped and before hotspot could read it: keep it until \
             the recording ends"
            .to_string(),
        ModuleKind::Elf => {
            let glibc = [
                "libc.so",
                "libm.so",
                "ld-linux",
                "libpthread",
                "libdl.so",
                "librt.so",
            ];
            if glibc.iter().any(|g| name.starts_with(g)) {
                "install libc6-dbg (Debian/Ubuntu) before recording".to_string()
            } else if ["/usr/", "/lib", "/bin/", "/sbin/"]
                .iter()
                .any(|p| m.path.starts_with(p))
            {
                format!(
                    "a distribution file: install the debug symbols of the package that owns \
                     it (dpkg -S {}; Debian: its -dbgsym package) before recording",
                    display(&m.path)
                )
            } else {
                "stripped: build with -g and keep the symbols, or keep its .debug file next to \
                 it or under /usr/lib/debug/.build-id"
                    .to_string()
            }
        }
    }
}

/// A real name: neither `??` nor a `MODULE+0xADDR` placeholder.
fn is_named(function: &str) -> bool {
    function != UNKNOWN && !hotspot_format::placeholder::is_placeholder(function)
}

/// Symbol coverage of the samples' leaf frames.
pub fn coverage(f: &Facts) -> Coverage {
    let c = f.capture;
    let mut per_module: BTreeMap<ModuleId, (u64, u64)> = BTreeMap::new();
    let mut named_total = 0;
    let mut scratch = Vec::new();
    for (stack, &n) in f.counts.stack_samples.iter() {
        let Some(&leaf) = c.stacks.get(stack).and_then(|fs| fs.first()) else {
            continue;
        };
        let Some(frame) = c.frames.get(&leaf) else {
            continue;
        };
        scratch.clear();
        names::expand(c, leaf, &mut scratch);
        let named = scratch.first().is_some_and(|n| is_named(&n.function));
        let e = per_module.entry(frame.module).or_default();
        e.0 += n;
        if named {
            e.1 += n;
            named_total += n;
        }
    }
    let mut frames: BTreeMap<ModuleId, (u64, u64)> = BTreeMap::new();
    for (id, frame) in &c.frames {
        scratch.clear();
        names::expand(c, *id, &mut scratch);
        let e = frames.entry(frame.module).or_default();
        e.0 += 1;
        if scratch.first().is_some_and(|n| is_named(&n.function)) {
            e.1 += 1;
        }
    }
    let markers = c.unwinding.and_then(|u| u.markers);
    let mut modules: Vec<ModuleCoverage> = c
        .modules
        .values()
        .filter(|m| frames.contains_key(&m.id) && Some(m.id) != markers)
        .map(|m| {
            let (samples, named) = per_module.get(&m.id).copied().unwrap_or_default();
            let (nframes, named_frames) = frames.get(&m.id).copied().unwrap_or_default();
            ModuleCoverage {
                module: display(&match m.kind {
                    ModuleKind::Kernel => "[kernel]".to_string(),
                    _ => short_module(&m.path),
                }),
                path: display(&m.path),
                kind: kind_label(m.kind),
                build_id: m.build_id.iter().map(|b| format!("{b:02x}")).collect(),
                samples,
                named,
                frames: nframes,
                named_frames,
                hint: (named_frames == 0 && m.kind != ModuleKind::Vdso).then(|| hint(m)),
            }
        })
        .collect();
    modules.sort_by(|a, b| {
        b.samples
            .cmp(&a.samples)
            .then_with(|| a.module.cmp(&b.module))
            .then_with(|| a.path.cmp(&b.path))
    });
    Coverage {
        samples: f.counts.samples,
        named: named_total,
        modules,
    }
}

/// `YYYY-MM-DD HH:MM:SS UTC` from Unix ns, without a time-zone database.
pub fn utc(ns: u64) -> String {
    let s = crate::export::time::rfc3339(i128::from(ns));
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
    /// Formats from 1.3 on only.
    #[serde(skip_serializing_if = "Option::is_none")]
    off_cpu: Option<off_cpu::OffCpuJson>,
    coverage: Coverage,
    unwinding: crate::unwinding::Completeness,
    ending: Ending,
    unknown_kinds: BTreeMap<u32, u64>,
    size: SizeInfo,
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
    };
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_formats_known_instants() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_709_210_096_000_000_000), "2024-02-29 12:34:56 UTC");
    }

    #[test]
    fn glibc_without_symbols_suggests_libc6_dbg() {
        let m = Module {
            id: 1,
            kind: ModuleKind::Elf,
            path: "/usr/lib/x86_64-linux-gnu/libc.so.6".into(),
            build_id: vec![1, 2],
        };
        assert!(hint(&m).contains("libc6-dbg"));
        let m = Module {
            path: "/usr/lib/x86_64-linux-gnu/libz.so.1".into(),
            ..m
        };
        assert!(hint(&m).contains("dbgsym"));
        let m = Module {
            path: "/opt/app/server".into(),
            ..m
        };
        assert!(hint(&m).contains("-g"));
    }
}
