//! `hotspot record --keep/--max-size -o DIR`: the flight recorder. One recording writes
//! a history of segments into DIR (`recorder::live::flight`): the BPF programs are loaded,
//! the processes learnt and the symboliser started once, and each segment is a whole
//! capture of its own; `recorder::live::history`'s budgets end the oldest.
//!
//! One process for the whole history, where it was one per segment: each new process
//! paid for loading and verifying the BPF programs, recognising the box's Python
//! interpreters and naming every module sampled again, 146 ms of CPU per 60 s segment
//! on an idle box (BENCHMARKS-28.md of 9c1100f), 0.24% of a CPU where the goal is 0.1%.

use std::path::Path;

use anyhow::Context;
use hotspot_recorder::live::flight::Flight;
use hotspot_recorder::live::history::{self, Budget};
use hotspot_recorder::live::marks;
use hotspot_recorder::live::session::{self, SessionOptions};

use crate::cli::RecordArgs;
use crate::progress::Printer;
use crate::signals;

/// Records segments into `args.output` until stopped (Ctrl-C, SIGTERM), its targets are
/// gone, or `--duration` has passed. `opts` is the session `record` would run.
pub fn run(args: &RecordArgs, mut opts: SessionOptions) -> anyhow::Result<()> {
    let dir = &args.output;
    create_dir(dir)?;
    opts.flight = Some(Flight {
        dir: dir.clone(),
        segment: args.segment,
        budget: Budget {
            keep: args.keep,
            max_bytes: args.max_size,
        },
    });
    opts.marks = Some(dir.clone());
    let mut printer = Printer::new().log_segments(args.log_segments);
    let result = session::record(&opts, &signals::STOP, &mut printer);
    printer.clear();
    result?;
    Ok(())
}

/// `hotspot mark DIR TEXT`: drops a mark, now, for the recorder writing DIR's segments.
pub fn mark(args: &crate::cli::MarkArgs) -> anyhow::Result<()> {
    let dir = &args.dir;
    if !std::fs::metadata(dir).is_ok_and(|m| m.is_dir()) {
        anyhow::bail!(
            "{} is not a flight recorder's directory: give the -o DIR of `hotspot record --keep`",
            dir.display()
        );
    }
    if history::segments(dir)?.is_empty() {
        anyhow::bail!(
            "{} holds no segments: is a flight recorder (`hotspot record --keep … -o DIR`) writing there?",
            dir.display()
        );
    }
    marks::drop_mark(dir, marks::now_ns(), &args.text)?;
    Ok(())
}

/// The history's directory: created (mode 0700: segments hold command lines and paths)
/// if missing; a file there is refused.
fn create_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => anyhow::bail!(
            "{} is not a directory: --keep and --max-size record into a directory of segments",
            dir.display()
        ),
        Err(_) => std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("creating {}", dir.display())),
    }
}
