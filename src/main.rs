//! The `hotspot` command line: argument parsing and wiring only.

mod cli;
mod commands;
mod demo;
mod flight;
mod hangup;
mod live;
mod output;
mod process_list;
mod progress;
mod record;
mod signals;
mod symbols;
mod view;

use clap::Parser;

fn main() {
    let cli = cli::Cli::parse();
    symbols::set_symbol_dirs(cli.symbols.clone());
    // Before any slow set-up: a Ctrl-C or SIGTERM that arrives while the recorder
    // starts must still end in a finished capture, not a killed process.
    if matches!(cli.command, cli::Command::Record(_) | cli::Command::Demo(_)) {
        signals::install();
    }
    let result = match cli.command {
        cli::Command::Record(args) => record::run(args),
        cli::Command::Info(args) => commands::info::run(args),
        cli::Command::Report(args) => commands::report::run(args),
        cli::Command::Diff(args) => commands::diff::run(args),
        cli::Command::Scrub(args) => commands::scrub::run(args),
        cli::Command::Mark(args) => flight::mark(&args),
        cli::Command::Snapshot(args) => commands::snapshot::run(args),
        cli::Command::Demo(args) => live::demo(args),
        cli::Command::View(args) => view::run(args),
        cli::Command::Live(args) => live::run(args),
        cli::Command::DemoWorkload { seconds } => {
            demo::run(std::time::Duration::from_secs_f64(seconds));
            Ok(())
        }
    };
    if let Err(e) = result {
        if let Some(gate) = e.downcast_ref::<commands::diff::GateFailed>() {
            use std::io::Write;
            let mut err = std::io::stderr().lock();
            for line in &gate.0 {
                let _ = writeln!(err, "hotspot: diff --fail-if: {line}");
            }
            std::process::exit(commands::diff::GateFailed::STATUS);
        }
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
