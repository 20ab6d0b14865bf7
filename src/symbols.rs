//! `--symbols DIR`: the directories given once on the command line, and applying them to
//! a capture the headless commands read (the views apply them as frames arrive). Captures
//! are opened by `hotspot_replay::file`, the one opener.

use std::path::PathBuf;
use std::sync::OnceLock;

use hotspot_replay::Capture;

static SYMBOL_DIRS: OnceLock<Vec<PathBuf>> = OnceLock::new();

/// Records the global `--symbols DIR` list (called once from `main`).
pub fn set_symbol_dirs(dirs: Vec<PathBuf>) {
    let _ = SYMBOL_DIRS.set(dirs);
}

/// The `--symbols` directories given on the command line.
pub fn symbol_dirs() -> &'static [PathBuf] {
    SYMBOL_DIRS.get().map_or(&[], Vec::as_slice)
}

/// Applies `--symbols` to an already opened (or growing) capture.
pub fn resymbolize(c: &mut Capture) {
    let dirs = symbol_dirs();
    if dirs.is_empty() {
        return;
    }
    let outcome = hotspot_replay::resymbolize::resymbolize(c, dirs);
    for m in &outcome.mismatches {
        eprintln!("hotspot: {m}");
    }
}
