//! `hotspot record` and the headless `hotspot demo`: their arguments as a recording
//! session ([`hotspot_recorder::live::session`]), which does the recording, and what it
//! reports printed ([`crate::progress`]).

use std::time::Duration;

use anyhow::Context;
use hotspot_recorder::Summary;
use hotspot_recorder::live::session::{self, SessionOptions, Target};

use crate::cli::{DemoArgs, RecordArgs};
use crate::progress::{Printer, print_summary};
use crate::signals;

pub fn run(args: RecordArgs) -> anyhow::Result<()> {
    let target = target(&args)?;
    let mut opts = SessionOptions::new(target, &args.output);
    opts.freq = args.freq;
    opts.duration = args.duration;
    opts.follow_children = !args.no_children;
    opts.stack_cap = args.unwind.stack_cap();
    opts.python_frames = args.unwind.python_frames;
    opts.stack_fallback = args.unwind.stack_fallback();
    opts.off_cpu = args.off_cpu;
    opts.end_command = !args.keep_running;
    opts.flush_log = args.flush_log.clone();
    opts.ring_bytes = args.ring_bytes;
    opts.scrub = args.scrub.then_some(hotspot_format::Scrubbed::ALL);
    opts.marks = args.marks_from.clone();
    if let Some(every) = args.flush_interval {
        opts.flush_every = every;
    }
    if args.keep.is_some() || args.max_size.is_some() {
        opts.command_line = std::env::args().collect();
        return crate::flight::run(&args, opts);
    }
    let summary = record(&opts)?;
    print_summary(&summary, &args.output);
    Ok(())
}

/// What `record` was asked to profile: PIDs (as arguments or `-p`), `--all`, or a command.
fn target(args: &RecordArgs) -> anyhow::Result<Target> {
    let mut pids = args.pids.clone();
    pids.extend(crate::cli::parse_pids(&args.pid)?);
    if args.all {
        if !args.command.is_empty() {
            anyhow::bail!(
                "--all records every process; give either --all or a command after --, not both"
            );
        }
        return Ok(Target::All);
    }
    if !args.command.is_empty() {
        if !pids.is_empty() {
            anyhow::bail!("give either PIDs or a command after --, not both");
        }
        return Ok(Target::Command(args.command.clone()));
    }
    if pids.is_empty() {
        anyhow::bail!(
            "nothing to record: give PIDs (-p PID), --all, or a command after -- (e.g. hotspot record -o out.hsp -- ./myprog)"
        );
    }
    Ok(Target::Pids(pids))
}

/// `hotspot demo` without the terminal: records the built-in workload and prints what
/// the capture holds.
pub fn demo(args: DemoArgs) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("locating the hotspot executable")?;
    let secs = args
        .duration
        .unwrap_or(Duration::from_secs(5))
        .as_secs_f64();
    let cmd = vec![
        exe.to_string_lossy().into_owned(),
        "demo-workload".into(),
        format!("{secs}"),
    ];
    eprintln!(
        "hotspot: recording the built-in demo workload for {secs:.1} s at {} Hz…",
        args.freq
    );
    let mut opts = SessionOptions::new(Target::Command(cmd), &args.output);
    opts.freq = args.freq;
    opts.stack_cap = args.unwind.stack_cap();
    opts.python_frames = args.unwind.python_frames;
    opts.stack_fallback = args.unwind.stack_fallback();
    let summary = record(&opts)?;
    print_summary(&summary, &args.output);
    let capture = hotspot_replay::Capture::open(&args.output)?;
    print!("{}", hotspot_replay::info::text(&capture));
    Ok(())
}

/// Runs a session until it ends (or Ctrl-C), with its progress and warnings on stderr.
fn record(opts: &SessionOptions) -> anyhow::Result<Summary> {
    let mut opts = opts.clone();
    opts.command_line = std::env::args().collect();
    let mut printer = Printer::new();
    let result = session::record(&opts, &signals::STOP, &mut printer);
    printer.clear();
    Ok(result?)
}
