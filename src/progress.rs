//! What a recording prints on stderr: its progress line (on a terminal), the warnings
//! the session went on despite, and the summary at the end.

use std::io::IsTerminal;
use std::path::Path;

use hotspot_recorder::launch::Ending;
use hotspot_recorder::live::session::{Observer, Warning};
use hotspot_recorder::{Progress, StopReason, Summary};

/// Prints what a `record` or headless `demo` session reports.
pub struct Printer {
    /// stderr is a terminal: a progress line is kept up to date on it.
    tty: bool,
    /// A progress line is on screen, to be cleared before anything else is printed.
    shown: bool,
    /// A flight recorder's segments are each told of in a line (`--log-segments`).
    segments: bool,
}

impl Printer {
    pub fn new() -> Self {
        Printer {
            tty: std::io::stderr().is_terminal(),
            shown: false,
            segments: false,
        }
    }

    /// Prints a line per finished segment and per budget removal (`--log-segments`).
    pub fn log_segments(self, on: bool) -> Self {
        Printer {
            segments: on,
            ..self
        }
    }

    /// Clears the progress line, if one is shown.
    pub fn clear(&mut self) {
        if self.shown {
            eprint!("\r\x1b[2K");
            self.shown = false;
        }
    }
}

impl Observer for Printer {
    fn progress(&mut self, p: &Progress) {
        if self.tty {
            eprint!("\r\x1b[2K{}", progress_line(p));
            self.shown = true;
        }
    }

    fn warning(&mut self, w: Warning) {
        self.clear();
        match w {
            Warning::PrivilegesKept(e) => {
                eprintln!("hotspot: warning: {}", crate::format_error(&e.into()));
            }
            Warning::LostCountsDiffer { kernel, capture } => eprintln!(
                "hotspot: warning: the kernel counted {kernel} lost samples, the capture holds {capture}"
            ),
            Warning::CommandEnded { pid, how, grace } => {
                let how = match how {
                    Ending::Killed => format!(
                        "ended it (SIGKILL: still running {:.0} s after SIGTERM)",
                        grace.as_secs_f64()
                    ),
                    Ending::Terminated | Ending::Exited => "ended it (SIGTERM)".to_string(),
                };
                eprintln!(
                    "hotspot: the command (pid {pid}) outlived the recording: {how}; --keep-running leaves it running"
                );
            }
            // --keep-running: the command goes on unprofiled; say so.
            Warning::CommandLeftRunning { pid } => eprintln!(
                "hotspot: the command (pid {pid}) is still running, no longer profiled (--keep-running)"
            ),
            Warning::FeatureOff(off) => eprintln!("hotspot: {}", off.line()),
        }
    }

    fn segment_ended(&mut self, path: &Path, bytes: u64, took: std::time::Duration) {
        if self.segments {
            self.clear();
            eprintln!(
                "hotspot: segment {}: {:.1} KiB in {:.1} s",
                hotspot_replay::sanitize::display(&path.to_string_lossy()),
                bytes as f64 / 1024.0,
                took.as_secs_f64()
            );
        }
    }

    fn segments_removed(&mut self, count: usize) {
        if self.segments {
            self.clear();
            eprintln!("hotspot: removed {count} old segments");
        }
    }
}

fn progress_line(p: &Progress) -> String {
    format!(
        "recording: {:.1} s, {} samples, {} lost, {} written",
        p.elapsed.as_secs_f64(),
        p.counts.samples,
        p.counts.lost,
        human_bytes(p.bytes)
    )
}

pub fn print_summary(s: &Summary, output: &Path) {
    let (t, c) = (&s.totals, &s.totals.counts);
    let size = std::fs::metadata(output)
        .map(|m| m.len())
        .unwrap_or(s.totals.bytes);
    let why = match s.reason {
        StopReason::Interrupted => "interrupted",
        StopReason::TargetsExited => "every target exited",
        StopReason::Duration => "duration reached",
    };
    eprintln!(
        "hotspot: {} samples ({} lost) from {} process{}, {} thread{} in {:.1} s; {} distinct stacks; {} written to {} ({why})",
        c.samples,
        c.lost,
        t.processes,
        if t.processes == 1 { "" } else { "es" },
        t.threads,
        if t.threads == 1 { "" } else { "s" },
        s.elapsed.as_secs_f64(),
        t.stacks,
        human_bytes(size),
        output.display(),
    );
    if c.off_cpu_samples > 0 || c.lost_off_cpu > 0 {
        eprintln!(
            "hotspot: {} off-CPU samples ({} off-CPU records lost)",
            c.off_cpu_samples, c.lost_off_cpu
        );
    }
    if c.lost_mappings > 0 {
        eprintln!(
            "hotspot: warning: the kernel dropped {} mapping events (its ring was full): frames of the processes they were about may be unnamed",
            c.lost_mappings
        );
    }
    if t.kernel_names_missing {
        eprintln!(
            "hotspot: warning: /proc/kallsyms gave no addresses (kptr_restrict?): kernel frames are unnamed"
        );
    }
}

fn human_bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1} GiB", n as f64 / (1u64 << 30) as f64),
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}
