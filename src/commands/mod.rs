//! The headless commands (`info`, `report`, `diff`): each reads its captures with [`scan`]
//! and writes one output through [`crate::output`].

pub mod diff;
pub mod info;
mod progress;
pub mod report;

use std::path::Path;

use hotspot_replay::export::{Scan, ScanOptions};

use progress::Progress;

use crate::symbols;

/// Reads a capture for `info`, `report` and `diff`: streaming, with a progress bar on a
/// terminal, and `--symbols` applied to its definitions.
fn scan(path: &Path, options: ScanOptions) -> anyhow::Result<Scan> {
    let mut progress = Progress::new(&path.to_string_lossy());
    let mut scan = Scan::open(path, options, &mut |done, total| {
        progress.update(done, total);
    })?;
    progress.finish();
    symbols::resymbolize(&mut scan.capture);
    Ok(scan)
}
