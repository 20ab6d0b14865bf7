//! The `hotspot` command line: argument parsing and wiring only.

mod cli;
mod demo;
mod live;
mod open;
mod process_list;
mod record;
mod signals;
mod view;

use std::path::Path;

use anyhow::Context;
use clap::Parser;
use hotspot_replay::export::progress::Progress;
use hotspot_replay::export::{Scan, ScanOptions, Slice};

fn main() {
    let cli = cli::Cli::parse();
    open::set_symbol_dirs(cli.symbols.clone());
    // Before any slow set-up: a Ctrl-C or SIGTERM that arrives while the recorder
    // starts must still end in a finished capture, not a killed process.
    if matches!(cli.command, cli::Command::Record(_) | cli::Command::Demo(_)) {
        signals::install();
    }
    let result = match cli.command {
        cli::Command::Record(args) => record::run(args),
        cli::Command::Info(args) => info(args),
        cli::Command::Report(args) => report(args),
        cli::Command::Diff(args) => diff(args),
        cli::Command::Demo(args) => live::demo(args),
        cli::Command::View(args) => view::run(args),
        cli::Command::Live(args) => live::run(args),
        cli::Command::DemoWorkload { seconds } => {
            demo::run(std::time::Duration::from_secs_f64(seconds));
            Ok(())
        }
    };
    if let Err(e) = result {
        // One line: the chain of causes joined, no backtrace; escaped, since it may quote
        // a file name or a capture's contents.
        // Not eprintln: a closed stderr must not turn an error into a panic.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "hotspot: {}",
            hotspot_replay::sanitize::display(&format_error(&e))
        );
        std::process::exit(1);
    }
}

fn format_error(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let s = cause.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ")
}

/// Reads a capture for `info`, `report` and `diff`: streaming, with a progress bar on a
/// terminal, and `--symbols` applied to its definitions.
fn scan(path: &Path, options: ScanOptions) -> anyhow::Result<Scan> {
    let mut progress = Progress::new(&path.to_string_lossy());
    let mut scan = Scan::open(path, options, &mut |done, total| {
        progress.update(done, total);
    })?;
    progress.finish();
    open::resymbolize(&mut scan.capture);
    Ok(scan)
}

fn info(args: cli::InfoArgs) -> anyhow::Result<()> {
    let scan = scan(
        &args.file,
        ScanOptions {
            measure_sizes: true,
            ..ScanOptions::default()
        },
    )?;
    let out = if args.json {
        hotspot_replay::info::scan_json(&scan)
    } else {
        hotspot_replay::info::scan_text(&scan)
    };
    emit(out.as_bytes(), None, false)
}

fn report(args: cli::ReportArgs) -> anyhow::Result<()> {
    use cli::ReportFormat as F;
    use hotspot_replay::export::{folded, json, pprof, speedscope, svg};
    if args.top.is_some() && !matches!(args.format, F::Text | F::Json) {
        anyhow::bail!(
            "--top ranks functions in the text and json reports; the other formats keep every \
             stack (narrow them with --from/--to/--tid/--thread/--pid/--no-kernel)"
        );
    }
    let selection = args.filter.selection();
    let scan = scan(
        &args.file,
        selection.scan_options(args.format == F::Speedscope),
    )?;
    let slice = Slice::new(&scan, &selection)?;
    let out = match args.format {
        F::Text => hotspot_replay::report::text(&slice, args.top.unwrap_or(30)).into_bytes(),
        F::Json => json::report(&slice, args.top).into_bytes(),
        F::Folded => folded::text(&slice).into_bytes(),
        F::Svg => svg::render(&slice)?,
        F::Pprof => pprof::encode(&slice)?,
        F::Speedscope => speedscope::render(&slice).into_bytes(),
    };
    emit(&out, args.output.as_deref(), args.format == F::Pprof)
}

fn diff(args: cli::DiffArgs) -> anyhow::Result<()> {
    use hotspot_replay::diff;
    let selection = args.filter.selection();
    let base_scan = scan(&args.base, selection.scan_options(false))?;
    let new_scan = scan(&args.new, selection.scan_options(false))?;
    let base =
        Slice::new(&base_scan, &selection).with_context(|| args.base.display().to_string())?;
    let new = Slice::new(&new_scan, &selection).with_context(|| args.new.display().to_string())?;
    let out = match args.format {
        cli::DiffFormat::Text => diff::text(&diff::diff(&base, &new), args.top.unwrap_or(30)),
        cli::DiffFormat::Json => diff::json(&diff::diff(&base, &new), args.top),
        cli::DiffFormat::Folded => diff::folded(&base, &new),
    };
    emit(out.as_bytes(), args.output.as_deref(), false)
}

/// Writes an output to `-o OUT` (`-` is stdout) or stdout. A binary output refuses a
/// terminal; an existing capture is never overwritten; a closed pipe is not an error.
fn emit(bytes: &[u8], output: Option<&Path>, binary: bool) -> anyhow::Result<()> {
    use std::io::{IsTerminal, Write};
    if let Some(path) = output.filter(|p| *p != Path::new("-")) {
        let mut head = [0u8; 8];
        let is_capture = std::fs::File::open(path)
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
            .is_ok_and(|()| head == hotspot_format::header::MAGIC);
        if is_capture {
            anyhow::bail!(
                "{} is a capture: refusing to overwrite it with a report",
                path.display()
            );
        }
        return std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()));
    }
    let stdout = std::io::stdout();
    if binary && stdout.is_terminal() {
        anyhow::bail!("pprof output is binary: write it to a file with -o OUT, or pipe it");
    }
    let mut lock = stdout.lock();
    match lock.write_all(bytes).and_then(|()| lock.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("writing to stdout"),
    }
}
