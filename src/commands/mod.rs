//! The headless commands (`info`, `report`, `diff`, `scrub`, `snapshot`): each reads its captures with [`scan`]
//! and writes one output through [`crate::output`].

pub mod diff;
pub mod info;
mod progress;
pub mod report;
pub mod scrub;
pub mod snapshot;

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

/// [`scan`] of two captures at once (`diff`): each in a thread of its own, so a diff takes
/// about as long as the longer of the two reports rather than both; the progress bar
/// follows the first.
fn scan_both(
    (a, options): (&Path, ScanOptions),
    (b, options_b): (&Path, ScanOptions),
) -> anyhow::Result<(Scan, Scan)> {
    std::thread::scope(|s| {
        let second = s.spawn(move || -> anyhow::Result<Scan> {
            let mut scan = Scan::open(b, options_b, &mut |_, _| {})?;
            symbols::resymbolize(&mut scan.capture);
            Ok(scan)
        });
        let first = scan(a, options);
        let second = second
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        Ok((first?, second?))
    })
}
