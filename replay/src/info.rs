//! `hotspot info`: what a capture is, how much it holds, and whether it is whole.

use std::fmt::Write;

use hotspot_format::records::kind;
use serde_json::json;

use crate::capture::Capture;
use crate::sanitize::display;

/// Seconds between the first and last sample.
fn duration_s(c: &Capture) -> f64 {
    c.time_range().map_or(0.0, |(a, b)| (b - a) as f64 / 1e9)
}

/// Whether the file ended with the writer's end marker, and if not, why.
fn ending(c: &Capture) -> String {
    match (&c.end, c.truncated) {
        (Some(_), None) => "clean (end marker present)".to_string(),
        (Some(_), Some((off, n))) => {
            format!("end marker present, but {n} trailing bytes at offset {off} were dropped")
        }
        (None, Some((off, n))) => {
            format!("truncated: the writer stopped mid-block; {n} bytes dropped at offset {off}")
        }
        (None, None) => {
            "cut: no end marker (the recorder was killed or is still writing)".to_string()
        }
    }
}

/// `YYYY-MM-DD HH:MM:SS UTC` from Unix ns, without a time-zone database.
pub fn utc(ns: u64) -> String {
    let secs = ns / 1_000_000_000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil-from-days (proleptic Gregorian), after Howard Hinnant's algorithm.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn kernel_samples(c: &Capture) -> u64 {
    let kernel_leaf = |stack: &u32| {
        c.stacks
            .get(stack)
            .and_then(|fs| fs.first())
            .and_then(|f| c.frames.get(f))
            .and_then(|f| c.modules.get(&f.module))
            .is_some_and(|m| m.kind.is_kernel())
    };
    c.samples.iter().filter(|s| kernel_leaf(&s.stack)).count() as u64
}

fn kind_name(k: u32) -> &'static str {
    kind::ALL
        .iter()
        .find(|(n, _)| *n == k)
        .map_or("unknown", |(_, name)| name)
}

/// The text report.
pub fn text(c: &Capture) -> String {
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
            s.arch,
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
    let _ = writeln!(o, "duration:   {:.3} s", duration_s(c));
    let k = kernel_samples(c);
    let _ = writeln!(
        o,
        "samples:    {} ({} in kernel mode, {} in user mode)",
        c.samples.len(),
        k,
        c.samples.len() as u64 - k
    );
    let _ = writeln!(o, "lost:       {}", c.lost);
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
    let _ = writeln!(
        o,
        "stacks:     {} distinct, {} frames, {} modules, {} symbols",
        c.stacks.len(),
        c.frames.len(),
        c.modules.len(),
        c.symbols.len()
    );
    let _ = writeln!(o, "blocks:     {}", c.blocks);
    let _ = writeln!(o, "ending:     {}", ending(c));
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
    o
}

/// The same as JSON.
pub fn json(c: &Capture) -> String {
    let session = c.session.as_ref().map(|s| {
        json!({
            "host": s.host, "kernel_release": s.kernel_release, "arch": s.arch, "cpus": s.cpus,
            "page_size": s.page_size, "freq_hz": s.freq_hz, "targets": s.targets,
            "all_processes": s.all_processes, "command_line": s.command_line,
            "start_wall_ns": s.start_wall_ns, "start_mono_ns": s.start_mono_ns,
            "start_utc": utc(s.start_wall_ns), "recorder_version": s.recorder_version,
        })
    });
    let records: serde_json::Map<String, serde_json::Value> = c
        .record_counts
        .iter()
        .map(|(k, n)| (kind_name(*k).to_string(), json!(n)))
        .collect();
    let v = json!({
        "schema": "hotspot-info/1",
        "file": c.path.to_string_lossy(),
        "file_size": c.file_size,
        "format_version": format!("{}.{}", c.version.0, c.version.1),
        "session": session,
        "duration_s": duration_s(c),
        "samples": c.samples.len(),
        "kernel_samples": kernel_samples(c),
        "lost": c.lost,
        "processes": c.processes.len(),
        "threads": c.threads.len(),
        "stacks": c.stacks.len(),
        "frames": c.frames.len(),
        "modules": c.modules.len(),
        "symbols": c.symbols.len(),
        "blocks": c.blocks,
        "clean_end": c.end.is_some(),
        "truncated": c.truncated.map(|(offset, bytes)| json!({"offset": offset, "bytes": bytes})),
        "corrupt": c.corrupt.iter().map(|d| json!({"offset": d.offset, "bytes": d.bytes, "reason": d.what})).collect::<Vec<_>>(),
        "records": records,
    });
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
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
}
