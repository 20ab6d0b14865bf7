//! `hotspot scrub IN -o OUT`: the capture rewritten through a scrubbing writer
//! (`hotspot_format::rewrite`), into a file that did not exist, removed again if the
//! rewrite fails.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};

use anyhow::Context;
use hotspot_format::rewrite;

use crate::cli;

pub fn run(args: cli::ScrubArgs) -> anyhow::Result<()> {
    let input = &args.input;
    let meta = std::fs::metadata(input).with_context(|| format!("reading {}", input.display()))?;
    hotspot_replay::ReplayError::check_file(input, &meta)?;
    let data = std::fs::read(input).with_context(|| format!("reading {}", input.display()))?;
    let out = &args.output;
    let stats = write_new(out, "scrub", |w| {
        Ok(rewrite::scrubbed(&data, w, args.keep.what())?)
    })
    .with_context(|| format!("scrubbing {}", input.display()))?;
    let mut note = String::new();
    if !stats.finished {
        note.push_str("; the original was cut short, so is the copy");
    }
    if stats.corrupt_regions > 0 {
        note.push_str(&format!(
            "; {} damaged regions of the original skipped",
            stats.corrupt_regions
        ));
    }
    if stats.unknown_records > 0 {
        note.push_str(&format!(
            "; {} records of kinds this hotspot does not know dropped",
            stats.unknown_records
        ));
    }
    let _ = writeln!(
        std::io::stderr(),
        "hotspot: wrote {} ({}){note}",
        hotspot_replay::sanitize::display(&out.to_string_lossy()),
        describe(&stats.scrubbed)
    );
    Ok(())
}

/// Writes a file that did not exist (`what` never overwrites), synced; removed again if
/// `write` fails, so a failure leaves nothing behind.
pub(super) fn write_new<T>(
    out: &std::path::Path,
    what: &str,
    write: impl FnOnce(BufWriter<File>) -> anyhow::Result<(BufWriter<File>, T)>,
) -> anyhow::Result<T> {
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(out)
        .with_context(|| {
            format!(
                "creating {} ({what} never overwrites: choose a new name)",
                out.display()
            )
        })?;
    let written = write(BufWriter::new(file)).and_then(|(w, stats)| {
        let file: File = w.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok(stats)
    });
    if written.is_err() {
        let _ = std::fs::remove_file(out);
    }
    written
}

pub(super) fn describe(s: &hotspot_format::Scrubbed) -> String {
    let parts: Vec<&str> = [
        (s.arguments, "no command-line arguments"),
        (s.host, "no host name"),
        (s.user_paths, "no user names in paths"),
    ]
    .into_iter()
    .filter_map(|(on, w)| on.then_some(w))
    .collect();
    if parts.is_empty() {
        "nothing scrubbed".into()
    } else {
        parts.join(", ")
    }
}
