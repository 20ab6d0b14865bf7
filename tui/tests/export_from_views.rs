//! Every export and the diff fed from the views' model give, byte for byte, what they give
//! fed from a file scan of the same selection: the exports are functions of the profile
//! model and a selection (`hotspot_replay::export::Slice`), not of how the samples were
//! read. The views' selection is a time range of whole buckets, excluded threads,
//! `--no-kernel` and a metric, over the committed fixture captures.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use hotspot_replay::Capture;
use hotspot_replay::export::{DiffFormat, ExportOptions, Format, Scan, Selection, Slice};
use hotspot_replay::metric::Metric;
use hotspot_replay::time::TimeSpec;
use hotspot_tui::model::{Data, Query, fold, slices};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/captures")
        .join(format!("{name}.hsp"))
}

/// What the views and a scan are asked for.
struct Ask {
    /// The window, as fractions of the views' buckets (rounded out to whole buckets).
    window: (f64, f64),
    /// Leave out the busiest thread.
    exclude_busiest: bool,
    no_kernel: bool,
    metric: Metric,
}

/// The views' query for `ask`: a window of whole buckets, so that a scan's inclusive
/// `--from`/`--to` in ns selects the very samples the views count; none before time 0,
/// which `--from` (seconds from the start) cannot name.
fn query(data: &Data, ask: &Ask) -> Query {
    let zero = data.clock().expect("a clock").start_mono_ns;
    let starts: Vec<u64> = data
        .buckets
        .range(0, u64::MAX)
        .map(|(s, _)| s)
        .filter(|&s| s >= zero)
        .collect();
    assert!(starts.len() >= 8, "too few buckets to pick a window from");
    let at = |f: f64| starts[((starts.len() - 1) as f64 * f) as usize];
    let mut excluded = BTreeSet::new();
    if ask.exclude_busiest {
        let busiest = data
            .threads
            .iter()
            .max_by_key(|t| t.samples)
            .expect("a thread");
        excluded.insert(busiest.tid);
    }
    Query {
        from_ns: at(ask.window.0),
        to_ns: at(ask.window.1) + data.buckets.width() - 1,
        excluded,
        no_kernel: ask.no_kernel,
        no_interpreter: false,
        metric: ask.metric,
    }
}

/// The selection a user gives `report` for the same samples as `q`: the window as
/// seconds from the start, the threads not excluded as `--tid`s.
fn selection(data: &Data, q: &Query) -> Selection {
    let zero = data.clock().expect("a clock").start_mono_ns;
    let mut tids: Vec<u32> = data.threads.iter().map(|t| t.tid).collect();
    tids.retain(|t| !q.excluded.contains(t));
    tids.sort_unstable();
    Selection {
        from: Some(TimeSpec::Offset(q.from_ns - zero)),
        to: Some(TimeSpec::Offset(q.to_ns - zero)),
        tids: if q.excluded.is_empty() {
            Vec::new()
        } else {
            tids
        },
        no_kernel: q.no_kernel,
        metric: q.metric,
        ..Selection::default()
    }
}

fn report(format: Format, slice: &Slice) -> Result<Vec<u8>, String> {
    format
        .render(
            slice,
            &ExportOptions {
                top: None,
                ..Default::default()
            },
        )
        .map_err(|e| e.to_string())
}

fn diff(format: DiffFormat, base: &Slice, new: &Slice) -> Result<Vec<u8>, String> {
    format
        .render(
            base,
            new,
            &ExportOptions {
                top: None,
                ..Default::default()
            },
        )
        .map_err(|e| e.to_string())
}

/// Asserts equal outputs, showing the first differing line of a text one.
fn same(what: &str, views: Result<Vec<u8>, String>, scan: Result<Vec<u8>, String>) {
    if views == scan {
        return;
    }
    let text = |r: &Result<Vec<u8>, String>| match r {
        Ok(b) => String::from_utf8_lossy(b).into_owned(),
        Err(e) => format!("error: {e}"),
    };
    let (v, s) = (text(&views), text(&scan));
    let first = v
        .lines()
        .zip(s.lines())
        .find(|(a, b)| a != b)
        .map(|(a, b)| format!("views: {a}\nscan:  {b}"))
        .unwrap_or_else(|| format!("{} vs {} bytes", v.len(), s.len()));
    panic!("{what}: the views' slice and the scan's differ\n{first}");
}

/// Two asks over one capture: every report format of each, and every diff format of the
/// first against the second, from the views and from scans.
fn check(name: &str, a: Ask, b: Ask) {
    let path = fixture(name);
    let capture = Capture::open(&path).expect("fixture opens");
    let mut views = Data::new(capture);
    let (qa, qb) = (query(&views, &a), query(&views, &b));
    // The slice is the selection the views show: the same total as their fold.
    let shown = [fold(&mut views, &qa).total, fold(&mut views, &qb).total];
    for (q, total) in [&qa, &qb].into_iter().zip(shown) {
        if !q.excluded.is_empty() {
            let all = Query {
                excluded: BTreeSet::new(),
                ..q.clone()
            };
            assert!(
                total < fold(&mut views, &all).total,
                "{name}: exclusion bites"
            );
        }
    }
    let selections = [selection(&views, &qa), selection(&views, &qb)];
    let from_views = slices(&mut views, &[&qa, &qb]);
    let scans: Vec<Scan> = selections
        .iter()
        .map(|sel| Scan::open(&path, sel.scan_options(false), &mut |_, _| {}).expect("scan"))
        .collect();
    let from_scan: Vec<Slice> = scans
        .iter()
        .zip(&selections)
        .map(|(scan, sel)| Slice::new(scan, sel).expect("a valid selection"))
        .collect();
    for (i, (v, s)) in from_views.iter().zip(&from_scan).enumerate() {
        assert!(s.total > 0, "{name} ask {i}: the window selects samples");
        assert_eq!(v.total, shown[i], "{name} ask {i}: what the views show");
        assert_eq!(v.total, s.total, "{name} ask {i}");
        for format in Format::ALL {
            same(
                &format!("{name} ask {i} {}", format.name()),
                report(format, v),
                report(format, s),
            );
        }
    }
    for format in DiffFormat::ALL {
        same(
            &format!("{name} diff {}", format.name()),
            diff(format, &from_views[0], &from_views[1]),
            diff(format, &from_scan[0], &from_scan[1]),
        );
    }
}

#[test]
fn a_cpu_capture_from_the_views_writes_what_its_scan_writes() {
    let whole = |no_kernel| Ask {
        window: (0.0, 1.0),
        exclude_busiest: false,
        no_kernel,
        metric: Metric::Cpu,
    };
    check(
        "phased",
        Ask {
            window: (0.25, 0.6),
            ..whole(false)
        },
        whole(true),
    );
}

#[test]
fn threads_left_out_of_the_views_are_left_out_of_the_outputs() {
    check(
        "threads",
        Ask {
            window: (0.1, 0.9),
            exclude_busiest: true,
            no_kernel: false,
            metric: Metric::Cpu,
        },
        Ask {
            window: (0.3, 0.5),
            exclude_busiest: false,
            no_kernel: true,
            metric: Metric::Cpu,
        },
    );
}

#[test]
fn off_cpu_and_wall_time_from_the_views_write_what_the_scan_writes() {
    check(
        "offcpu",
        Ask {
            window: (0.2, 0.7),
            exclude_busiest: false,
            no_kernel: false,
            metric: Metric::OffCpu,
        },
        Ask {
            window: (0.0, 1.0),
            exclude_busiest: true,
            no_kernel: true,
            metric: Metric::Wall,
        },
    );
}
