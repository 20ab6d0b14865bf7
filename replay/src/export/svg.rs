//! `report --format svg`: a self-contained interactive flame graph (click to zoom, Ctrl-F
//! to search), drawn by inferno from the folded stacks.

use inferno::flamegraph::{self, Options};

use super::error::ExportError;
use super::folded;
use super::slice::Slice;

/// The flame graph as SVG bytes. Colours come from the function names, so the same input
/// always gives the same bytes.
pub fn render(slice: &Slice) -> Result<Vec<u8>, ExportError> {
    let text = folded::text(slice);
    let mut options = Options::default();
    options.title = format!("hotspot: {}", slice.file_name());
    let mut subtitle = format!(
        "{} samples over {:.3} s",
        slice.folded.total,
        slice.duration_s()
    );
    if !slice.selection.is_everything() {
        subtitle.push_str("; ");
        subtitle.push_str(&slice.selection.describe());
    }
    options.subtitle = Some(subtitle);
    options.count_name = "samples".to_string();
    // Never the random colours: output must be byte-identical run to run.
    options.deterministic = true;
    options.hash = false;
    let mut out = Vec::new();
    if text.is_empty() {
        return Err(ExportError::NoSamples(slice.file_name()));
    }
    flamegraph::from_lines(&mut options, text.lines(), &mut out).map_err(|source| {
        ExportError::Render {
            what: "flame graph",
            source,
        }
    })?;
    Ok(out)
}
