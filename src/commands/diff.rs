//! `hotspot diff`: two captures under the same filters, compared function by function.

use anyhow::Context;
use hotspot_replay::export::{ExportOptions, Slice};

use crate::cli;
use crate::output;

pub fn run(args: cli::DiffArgs) -> anyhow::Result<()> {
    let format = args.format;
    let selection = args.filter.selection();
    let base_scan = super::scan(&args.base, selection.scan_options(false))?;
    let new_scan = super::scan(&args.new, selection.scan_options(false))?;
    let base =
        Slice::new(&base_scan, &selection).with_context(|| args.base.display().to_string())?;
    let new = Slice::new(&new_scan, &selection).with_context(|| args.new.display().to_string())?;
    let options = ExportOptions { top: args.top };
    output::write_to(args.output.as_deref(), false, |w| {
        Ok(format.write(&base, &new, &options, w)?)
    })
}
