//! `hotspot report`: one capture, filtered, in one of the export formats.

use hotspot_replay::export::{ExportOptions, Slice};

use crate::cli;
use crate::output;

pub fn run(args: cli::ReportArgs) -> anyhow::Result<()> {
    let format = args.format;
    if args.top.is_some() && !format.is_ranked() {
        anyhow::bail!(
            "--top ranks functions in the text and json reports; the other formats keep every \
             stack (narrow them with --from/--to/--tid/--thread/--pid/--no-kernel)"
        );
    }
    let selection = args.filter.selection(&args.file)?;
    let scan = super::scan(&args.file, selection.scan_options(format.needs_order()))?;
    let slice = Slice::new(&scan, &selection)?;
    let options = ExportOptions {
        top: args.top,
        ..Default::default()
    };
    output::write_to(args.output.as_deref(), format.is_binary(), |w| {
        Ok(format.write(&slice, &options, w)?)
    })
}
