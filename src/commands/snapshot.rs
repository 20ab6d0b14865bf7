//! `hotspot snapshot DIR --last 10m | --from T [--to T] -o OUT [--scrub]`: one
//! self-contained capture of a window of a flight recorder's history, merged from the
//! segments holding it (`hotspot_format::merge`), written to a new file. The window is
//! placed on the history's clock as `report DIR --from/--to` places it, so the copy's
//! every report equals the history's report of the same window.

use std::io::Write;

use anyhow::Context;
use hotspot_format::merge::{self, Window};
use hotspot_replay::clock::Clock;
use hotspot_replay::{Capture, history};

use super::scrub::{describe, write_new};
use crate::cli;

pub fn run(args: cli::SnapshotArgs) -> anyhow::Result<()> {
    let dir = &args.dir;
    if !std::fs::metadata(dir).is_ok_and(|m| m.is_dir()) {
        anyhow::bail!(
            "{} is not a flight recorder's directory: give the -o DIR of `hotspot record --keep`",
            dir.display()
        );
    }
    let maps = history::map_segments(dir)?;
    let slices: Vec<&[u8]> = maps.iter().map(|m| &m[..]).collect();
    let window = window(&args, &slices)?;
    let scrub = args.scrub.then(|| args.keep.what());
    let stats = write_new(&args.output, "snapshot", |w| {
        Ok(merge::merge(&slices, w, window, scrub)?)
    })
    .with_context(|| format!("cutting a window of {}", dir.display()))?;
    let scrubbed = scrub.map_or(String::new(), |s| format!("; {}", describe(&s)));
    let _ = writeln!(
        std::io::stderr(),
        "hotspot: wrote {} ({} samples from {} of {} segments{scrubbed}{})",
        hotspot_replay::sanitize::display(&args.output.to_string_lossy()),
        stats.samples,
        stats.used,
        stats.segments,
        if stats.finished {
            ""
        } else {
            "; the newest segment is still being written: the copy ends where it had got to"
        }
    );
    Ok(())
}

/// The window on the samples' clock: `--last` before the history's last sample, or
/// `--from`/`--to` placed as the filters place them (time 0 is the oldest segment's start).
fn window(args: &cli::SnapshotArgs, segments: &[&[u8]]) -> anyhow::Result<Window> {
    let (Some(first), Some(last)) = (segments.first(), segments.last()) else {
        anyhow::bail!("the history holds no segment");
    };
    // Times on the merged clock: a later boot's segments read later by their shift.
    let shifts = merge::clock_shifts(segments)?;
    // The oldest segment's session header, from its first block; decoded whole only
    // when that has none (its first sample is then time 0).
    let clock = match hotspot_format::reader::first_session(first) {
        Some(session) => Clock::of(Some(&session), None),
        None => {
            let oldest = Capture::from_bytes(first)?;
            Clock::of(
                oldest.session.as_ref(),
                oldest.samples.iter().map(|s| s.time_ns).min(),
            )
        }
    }
    .context("the oldest segment has neither a session header nor a sample to place times on")?;
    if let Some(last_for) = args.last {
        let newest = Capture::from_bytes(last)?;
        let end = newest
            .samples
            .iter()
            .map(|s| s.time_ns)
            .chain(newest.off_cpu_samples.iter().map(|s| s.sample.time_ns))
            .max()
            .context("the newest segment holds no sample to count --last back from")?
            .saturating_add(shifts.last().copied().unwrap_or(0));
        let span = u64::try_from(last_for.as_nanos()).unwrap_or(u64::MAX);
        return Ok(Window {
            from_ns: Some(end.saturating_sub(span)),
            to_ns: Some(end),
        });
    }
    let (from, to) = cli::place(args.from.as_ref(), args.to.as_ref(), || {
        let mut marks = Vec::new();
        for (s, &by) in segments.iter().zip(&shifts) {
            marks.extend(Capture::from_bytes(s)?.marks.into_iter().map(|mut m| {
                m.time_ns = m.time_ns.saturating_add(by);
                m
            }));
        }
        Ok((Some(clock), marks))
    })?;
    let from = from.map(|t| t.resolve(&clock)).transpose()?;
    let to = to.map(|t| t.resolve(&clock)).transpose()?;
    if let (Some(f), Some(t)) = (from, to)
        && f > t
    {
        anyhow::bail!("--from is after --to: nothing lies between them");
    }
    Ok(Window {
        from_ns: from,
        to_ns: to,
    })
}
