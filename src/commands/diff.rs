//! `hotspot diff`: two captures under the same filters, compared function by function.

use anyhow::Context;
use hotspot_replay::export::diff::{self, DiffOptions, gate};
use hotspot_replay::export::{ExportOptions, Slice};

use crate::cli;
use crate::output;

pub fn run(args: cli::DiffArgs) -> anyhow::Result<()> {
    let format = args.format;
    // Each capture places a `mark:NAME` at its own mark.
    let base_selection = args.filter.selection(&args.base)?;
    let new_selection = args.filter.selection(&args.new)?;
    let (base_scan, new_scan) = super::scan_both(
        (&args.base, base_selection.scan_options(false)),
        (&args.new, new_selection.scan_options(false)),
    )?;
    let base =
        Slice::new(&base_scan, &base_selection).with_context(|| args.base.display().to_string())?;
    let new =
        Slice::new(&new_scan, &new_selection).with_context(|| args.new.display().to_string())?;
    let options = ExportOptions {
        top: args.top,
        diff: DiffOptions {
            scale: args.scale,
            alpha: args.alpha,
        },
    };
    output::write_to(args.output.as_deref(), false, |w| {
        Ok(format.write(&base, &new, &options, w)?)
    })?;
    if args.fail_if.is_empty() {
        return Ok(());
    }
    let broken = gate::check(&diff::diff_with(&base, &new, &options.diff), &args.fail_if);
    if broken.is_empty() {
        Ok(())
    } else {
        Err(GateFailed(broken.iter().map(|v| v.to_string()).collect()).into())
    }
}

/// `--fail-if` broken: the binary exits with [`GateFailed::STATUS`], one line per
/// function.
#[derive(Debug)]
pub struct GateFailed(pub Vec<String>);

impl GateFailed {
    /// Distinct from 1 (an error) and 2 (bad arguments), so a CI step can tell a
    /// regression from a broken run.
    pub const STATUS: i32 = 3;
}

impl std::fmt::Display for GateFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} function(s) grew beyond --fail-if", self.0.len())
    }
}

impl std::error::Error for GateFailed {}
