//! The `hotspot` command line: argument parsing and wiring only.

mod cli;
mod demo;
mod record;
mod signals;

use clap::Parser;

fn main() {
    let cli = cli::Cli::parse();
    let result = match cli.command {
        cli::Command::Record(args) => record::run(args),
        cli::Command::Info(args) => info(args),
        cli::Command::Report(args) => report(args),
        cli::Command::Demo(args) => record::demo(args),
        cli::Command::DemoWorkload { seconds } => {
            demo::run(std::time::Duration::from_secs_f64(seconds));
            Ok(())
        }
    };
    if let Err(e) = result {
        // One line: the chain of causes joined, no backtrace.
        eprintln!("hotspot: {}", format_error(&e));
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

fn info(args: cli::InfoArgs) -> anyhow::Result<()> {
    let capture = hotspot_replay::Capture::open(&args.file)?;
    let out = if args.json {
        hotspot_replay::info::json(&capture)
    } else {
        hotspot_replay::info::text(&capture)
    };
    print!("{out}");
    Ok(())
}

fn report(args: cli::ReportArgs) -> anyhow::Result<()> {
    let capture = hotspot_replay::Capture::open(&args.file)?;
    let filter = hotspot_replay::profile::Filter {
        no_kernel: args.no_kernel,
        tids: (!args.tid.is_empty()).then(|| args.tid.iter().copied().collect()),
        ..Default::default()
    };
    let out = match args.format {
        cli::ReportFormat::Text => hotspot_replay::report::text(&capture, &filter, args.top),
        cli::ReportFormat::Folded => hotspot_replay::report::folded(&capture, &filter),
    };
    print!("{out}");
    Ok(())
}
