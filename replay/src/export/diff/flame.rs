//! `diff --format svg`: a differential flame graph, drawn by inferno. Each frame's width is
//! its weight in the new capture; its colour the change of its self share, red where it
//! grew, blue where it shrank, deeper the larger the change (Brendan Gregg's differential
//! flame graphs; callers that only pass the change on stay white). The base's counts are scaled to the new capture's total first, so a capture
//! twice as long is no change at all, and colours compare shares, as the text diff does.

use std::cmp::Ordering;
use std::io::Write;

use inferno::flamegraph;

use super::super::error::ExportError;
use super::super::slice::Slice;
use super::super::svg::MAX_NAME;
use super::super::{ExportOptions, folded};
use crate::metric::Metric;

/// Writes the differential flame graph of `base` against `new`.
pub fn write_svg(
    base: &Slice,
    new: &Slice,
    _: &ExportOptions,
    w: &mut dyn Write,
) -> Result<(), ExportError> {
    let scale = if base.total == 0 {
        0.0
    } else {
        new.total as f64 / base.total as f64
    };
    let mut a = folded::lines(base, MAX_NAME).into_iter().peekable();
    let mut b = folded::lines(new, MAX_NAME).into_iter().peekable();
    let mut lines = Vec::new();
    let mut gone = 0usize;
    loop {
        let order = match (a.peek(), b.peek()) {
            (None, None) => break,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(x), Some(y)) => folded::cmp_joined(&x.0, &y.0),
        };
        let (names, na, nb) = match order {
            Ordering::Less => a.next().map(|(s, n)| (s, n, 0)),
            Ordering::Greater => b.next().map(|(s, n)| (s, 0, n)),
            Ordering::Equal => a.next().zip(b.next()).map(|((s, n), (_, m))| (s, n, m)),
        }
        .unwrap_or_default();
        if nb == 0 {
            gone += 1;
        }
        let mut line = Vec::new();
        // Writing into memory cannot fail.
        let _ = folded::write_stack(&mut line, &names);
        let _ = write!(line, " {} {nb}", (na as f64 * scale).round() as u64);
        lines.push(String::from_utf8(line).unwrap_or_default());
    }
    if new.total == 0 {
        return Err(ExportError::NoSamples(new.file_name()));
    }
    let mut options = flamegraph::Options::default();
    options.title = format!("hotspot diff: {} → {}", base.file_name(), new.file_name());
    let counted = if new.metric() == Metric::Cpu {
        "samples".to_string()
    } else {
        format!("{} periods", new.metric().label())
    };
    options.count_name = counted.clone();
    options.subtitle = Some(format!(
        "width: the new capture's {counted} ({}); colour: change of self share against the base \
         ({} {counted}, scaled to the new total): red grew, blue shrank, white unchanged; \
         {gone} stacks only in the base have no width",
        new.total, base.total
    ));
    options.deterministic = true;
    options.hash = false;
    flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), w).map_err(|source| {
        ExportError::Render {
            what: "differential flame graph",
            source,
        }
    })
}
