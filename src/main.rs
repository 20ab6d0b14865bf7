//! The `hotspot` command line: argument parsing and wiring only.

mod cli;
mod demo;
mod hangup;
mod live;
mod open;
mod output;
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
    // Each message names its own context only (what was being done, on which file) and
    // leaves its cause to `source()`, so the chain joined is the whole story, once.
    e.chain()
        .map(|cause| cause.to_string())
        .collect::<Vec<_>>()
        .join(": ")
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
    output::write_to(None, false, |w| Ok(w.write_all(out.as_bytes())?))
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
    let binary = args.format == F::Pprof;
    output::write_to(args.output.as_deref(), binary, |w| {
        match args.format {
            F::Text => w.write_all(
                hotspot_replay::report::text(&slice, args.top.unwrap_or(30)).as_bytes(),
            )?,
            F::Json => json::write(&slice, args.top, w)?,
            F::Folded => folded::write(&slice, w)?,
            F::Svg => svg::write(&slice, w)?,
            F::Pprof => pprof::write(&slice, w)?,
            F::Speedscope => speedscope::write(&slice, w)?,
        }
        Ok(())
    })
}

fn diff(args: cli::DiffArgs) -> anyhow::Result<()> {
    use hotspot_replay::diff;
    let selection = args.filter.selection();
    let base_scan = scan(&args.base, selection.scan_options(false))?;
    let new_scan = scan(&args.new, selection.scan_options(false))?;
    let base =
        Slice::new(&base_scan, &selection).with_context(|| args.base.display().to_string())?;
    let new = Slice::new(&new_scan, &selection).with_context(|| args.new.display().to_string())?;
    output::write_to(args.output.as_deref(), false, |w| {
        match args.format {
            cli::DiffFormat::Text => w.write_all(
                diff::text(&diff::diff(&base, &new), args.top.unwrap_or(30)).as_bytes(),
            )?,
            cli::DiffFormat::Json => {
                w.write_all(diff::json(&diff::diff(&base, &new), args.top).as_bytes())?
            }
            cli::DiffFormat::Folded => diff::write_folded(&base, &new, w)?,
        }
        Ok(())
    })
}
