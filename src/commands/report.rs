//! `hotspot report`: one capture, filtered, in one of the export formats.

use hotspot_replay::export::{ExportOptions, Format, Slice};

use crate::cli::{self, ReportFormat};
use crate::output;

pub fn run(args: cli::ReportArgs) -> anyhow::Result<()> {
    let format = match args.format {
        ReportFormat::Text => Format::Text,
        ReportFormat::Json => Format::Json,
        ReportFormat::Folded => Format::Folded,
        ReportFormat::Svg => Format::Svg,
        ReportFormat::Pprof => Format::Pprof,
        ReportFormat::Speedscope => Format::Speedscope,
    };
    if args.top.is_some() && !format.is_ranked() {
        anyhow::bail!(
            "--top ranks functions in the text and json reports; the other formats keep every \
             stack (narrow them with --from/--to/--tid/--thread/--pid/--no-kernel)"
        );
    }
    let selection = args.filter.selection();
    let scan = super::scan(&args.file, selection.scan_options(format.needs_order()))?;
    let slice = Slice::new(&scan, &selection)?;
    let options = ExportOptions { top: args.top };
    output::write_to(args.output.as_deref(), format.is_binary(), |w| {
        Ok(format.write(&slice, &options, w)?)
    })
}
