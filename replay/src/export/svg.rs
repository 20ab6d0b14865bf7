//! `report --format svg`: a self-contained interactive flame graph (click to zoom, Ctrl-F
//! to search), drawn by inferno from the folded stacks. Under `--metric off-cpu` and
//! `wall` the title names the metric; a frame whose kind has a colour of its own
//! ([`kind_color`]: Python functions, the off-CPU states) takes it, the others inferno's by
//! name.

use std::io::Write;

use hotspot_format::ThreadState;
use inferno::flamegraph;
use inferno::flamegraph::color::{Color, PaletteMap};

use super::ExportOptions;
use super::error::ExportError;
use super::folded;
use super::slice::Slice;
use crate::kind::FrameKind;
use crate::metric::{self, Metric};

/// Longest name a frame of the graph carries, in bytes: a box is never wide enough to
/// show more (the tooltip shows the rest).
pub const MAX_NAME: usize = 512;
/// inferno needs every folded line in memory at once, and the text repeats each name once
/// per stack it is on: a capture of many deep stacks with long names would need gigabytes.
/// Past this many bytes of text, names are cut shorter to fit.
pub const MAX_TEXT: usize = 96 << 20;
/// Names are never cut shorter than this; a graph that would need it is refused.
pub const MIN_NAME: usize = 24;

/// Writes the flame graph as SVG. Colours come from the function names, so the same input
/// always gives the same bytes.
pub fn write(slice: &Slice, _: &ExportOptions, w: &mut dyn Write) -> Result<(), ExportError> {
    let mut lines = folded::lines(slice, MAX_NAME);
    let frames: usize = lines.iter().map(|(names, _)| names.len()).sum();
    // Each name with its `;`, and each line's count and newline.
    let text: usize = lines
        .iter()
        .map(|(names, _)| names.iter().map(|n| n.len() + 1).sum::<usize>() + 21)
        .sum();
    let mut cut = None;
    if text > MAX_TEXT {
        let fit = MAX_TEXT.saturating_sub(21 * lines.len()) / frames.max(1);
        // `…` takes 3 bytes and the `;` one.
        let max = fit.saturating_sub(4);
        if max < MIN_NAME {
            return Err(ExportError::TooLarge(format!(
                "{}: a flame graph of {} stacks and {frames} frames is too large to draw \
                 (narrow it with --from/--to/--tid/--pid, or use --format folded with \
                 another tool)",
                slice.file_name(),
                lines.len()
            )));
        }
        lines = folded::lines(slice, max);
        cut = Some(max);
    }
    let lines: Vec<String> = lines
        .into_iter()
        .map(|(names, n)| {
            let mut line = Vec::new();
            // Writing into memory cannot fail.
            let _ = folded::write_stack(&mut line, &names);
            let _ = write!(line, " {n}");
            String::from_utf8(line).unwrap_or_default()
        })
        .collect();
    if lines.is_empty() {
        return Err(ExportError::NoSamples(slice.file_name()));
    }
    let mut options = flamegraph::Options::default();
    let metric = slice.metric();
    // Named frames take their colour from the map, the others the usual way (a name
    // looked up and not found is coloured as without a map).
    let mut palette = PaletteMap::default();
    for key in slice.profile.keys() {
        if let Some(color) = kind_color(key.kind, &key.function) {
            let name = folded::shown_name(&key.function, cut.unwrap_or(MAX_NAME));
            palette.insert(&*name, color);
        }
    }
    let mut subtitle = if metric == Metric::Cpu {
        options.title = format!("hotspot: {}", slice.file_name());
        format!("{} samples over {:.3} s", slice.total, slice.duration_s())
    } else {
        options.title = format!("hotspot: {} ({} time)", slice.file_name(), metric.label());
        options.count_name = "periods".to_string();
        let period = slice.period_ns();
        format!(
            "{} periods of {} = {:.3} s, over {:.3} s; off-CPU frames by state: S sleeping \
             (blue), D uninterruptible (red), R runnable (orange)",
            slice.total,
            super::text::period_text(period),
            metric::secs(slice.total, period),
            slice.duration_s()
        )
    };
    if !slice.selection.is_everything() {
        subtitle.push_str("; ");
        subtitle.push_str(&slice.selection.describe());
    }
    if let Some(max) = cut {
        subtitle.push_str(&format!("; names cut to {max} bytes to fit"));
    }
    options.subtitle = Some(subtitle);
    if metric == Metric::Cpu {
        options.count_name = "samples".to_string();
    }
    options.palette_map = Some(&mut palette);
    // Never the random colours: output must be byte-identical run to run.
    options.deterministic = true;
    options.hash = false;
    flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), w).map_err(|source| {
        ExportError::Render {
            what: "flame graph",
            source,
        }
    })
}

/// The colour a kind's frames take in the flame graph where it has one of its own: time off
/// the CPU, by state; Python functions, greens and teals (a shade per name, so neighbours
/// stand apart), hues inferno's warm palette for native code never takes. The others are
/// coloured by name, as inferno colours any graph. inferno keys its colour map by the
/// name shown, so a native function with a Python function's name takes its colour too.
pub fn kind_color(kind: FrameKind, name: &str) -> Option<Color> {
    match kind {
        FrameKind::OffCpu(state) => Some(state_color(state)),
        FrameKind::Python => {
            // FNV-1a: stable across runs and Rust versions, so the bytes are too.
            let h = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
            });
            let v = |shift: u32| ((h >> shift) & 0xff) as u16;
            Some(Color {
                r: (40 + v(0) * 60 / 255) as u8,
                g: (170 + v(8) * 60 / 255) as u8,
                b: (100 + v(16) * 80 / 255) as u8,
            })
        }
        FrameKind::User
        | FrameKind::Jit
        | FrameKind::Interpreter
        | FrameKind::Marker
        | FrameKind::Kernel => None,
    }
}

/// The colour of a state's frame: waits one reads as calm, disk waits as alarms, waits for
/// a CPU in between.
fn state_color(state: ThreadState) -> Color {
    let (r, g, b) = match state {
        ThreadState::Sleeping => (90, 140, 230),
        ThreadState::Uninterruptible => (220, 50, 50),
        ThreadState::Runnable => (240, 160, 40),
    };
    Color { r, g, b }
}
