//! The filters every format shares, on the phased fixture capture. Its phases started at
//! these offsets from the session start (from the fixture's stderr when it was recorded, see
//! `fixtures/captures/README.md`): a window inside each phase must show only that phase.

mod export_common;

use export_common::scan;
use hotspot_replay::export::{ExportError, Scan, ScanOptions, Selection, Slice};
use hotspot_replay::time::{TimeError, TimeSpec};

const CAPTURE: &str = "phased-report.hsp";
/// Phase starts and the end, seconds after the session start.
const PHASES: [(&str, f64, f64); 3] = [
    ("p1", 0.2536, 2.0006),
    ("p2", 2.0006, 4.0055),
    ("p3", 4.0055, 6.0014),
];

fn offset(s: f64) -> TimeSpec {
    TimeSpec::Offset((s * 1e9) as u64)
}

/// Functions of the phased chains (phase_X, pN_work, pN_leaf) in a selection, and its total.
fn phase_functions(sel: &Selection) -> (Vec<String>, Vec<String>, u64) {
    let s = scan(CAPTURE, sel, false);
    let slice = Slice::new(&s, sel).unwrap_or_else(|e| panic!("{e}"));
    let rows = slice.flat();
    let top: Vec<String> = rows
        .iter()
        .take(1)
        .map(|r| r.key.function.to_string())
        .collect();
    let all: Vec<String> = rows
        .iter()
        .map(|r| r.key.function.to_string())
        .filter(|f| {
            f.starts_with('p')
                && (f.contains("_leaf") || f.contains("_work") || f.starts_with("phase_"))
        })
        .collect();
    (top, all, slice.total)
}

fn chain(phase: &str) -> [String; 3] {
    let word = match phase {
        "p1" => "one",
        "p2" => "two",
        _ => "three",
    };
    [
        format!("{phase}_leaf"),
        format!("{phase}_work"),
        format!("phase_{word}"),
    ]
}

#[test]
fn each_phase_window_shows_only_that_phase() {
    for (phase, start, end) in PHASES {
        let sel = Selection {
            from: Some(offset(start + 0.1)),
            to: Some(offset(end - 0.1)),
            ..Selection::default()
        };
        let (top, all, total) = phase_functions(&sel);
        assert!(total > 100, "{phase}: {total} samples");
        assert_eq!(top, [format!("{phase}_leaf")], "{phase} on top");
        let mut want = chain(phase).to_vec();
        want.sort();
        let mut got = all.clone();
        got.sort();
        assert_eq!(got, want, "{phase}: only its own chain");
    }
}

#[test]
fn wall_clock_times_select_the_same_samples() {
    let s = scan(CAPTURE, &Selection::default(), false);
    let wall0 = i128::from(s.capture.session.as_ref().expect("session").start_wall_ns);
    let (_, from, to) = PHASES[1];
    let (from, to) = (from + 0.2, to - 0.2);
    let by_offset = Selection {
        from: Some(offset(from)),
        to: Some(offset(to)),
        ..Selection::default()
    };
    let wall = |x: f64| TimeSpec::Wall(wall0 + (x * 1e9) as i128);
    let by_wall = Selection {
        from: Some(wall(from)),
        to: Some(wall(to)),
        ..Selection::default()
    };
    // Through the text forms a user types: RFC 3339 and a time of day.
    let text = |x: f64| hotspot_replay::time::rfc3339(wall0 + (x * 1e9) as i128);
    let parsed = Selection {
        from: Some(text(from).parse().expect("rfc3339")),
        to: Some(text(to)[11..23].parse().expect("time of day")),
        ..Selection::default()
    };
    let a = phase_functions(&by_offset);
    // Offsets truncate to the ns, wall times to the ns and text to the ms: same samples
    // unless one falls within a millisecond of an edge.
    let b = phase_functions(&by_wall);
    let c = phase_functions(&parsed);
    assert_eq!(a, b);
    assert!(a.2.abs_diff(c.2) <= 2, "{} vs {}", a.2, c.2);
    assert_eq!(a.0, c.0);
}

#[test]
fn thread_pid_and_kernel_filters() {
    let all = scan(CAPTURE, &Selection::default(), false);
    let (&tid, thread) = all.capture.threads.iter().next().expect("a thread");
    let everything = Slice::new(&all, &Selection::default())
        .expect("slice")
        .total;
    for sel in [
        Selection {
            tids: vec![tid],
            ..Selection::default()
        },
        Selection {
            threads: vec![thread.name().to_string()],
            ..Selection::default()
        },
        Selection {
            pids: vec![thread.pid],
            ..Selection::default()
        },
    ] {
        let slice = Slice::new(&all, &sel).expect("known thread");
        assert_eq!(slice.total, everything, "{sel:?}");
    }
    let no_kernel = Selection {
        no_kernel: true,
        ..Selection::default()
    };
    let slice = Slice::new(&all, &no_kernel).expect("slice");
    assert_eq!(
        slice.total, everything,
        "kernel samples count for their user caller"
    );
    assert!(slice.flat().iter().all(|r| !r.key.kind.is_kernel()));
    assert!(
        Slice::new(&all, &Selection::default())
            .expect("s")
            .flat()
            .iter()
            .any(|r| r.key.kind.is_kernel())
    );
}

#[test]
fn unknown_threads_and_empty_ranges_are_errors() {
    let all = scan(CAPTURE, &Selection::default(), false);
    let err = |sel: Selection| Slice::new(&all, &sel).err().map(|e| e.to_string());
    let e = err(Selection {
        threads: vec!["nope".into()],
        ..Selection::default()
    });
    assert!(
        e.as_deref()
            .is_some_and(|e| e.starts_with("unknown thread 'nope'") && e.contains("phased (tid ")),
        "{e:?}"
    );
    let e = err(Selection {
        tids: vec![1],
        ..Selection::default()
    });
    assert!(
        e.as_deref()
            .is_some_and(|e| e.starts_with("unknown thread --tid 1")),
        "{e:?}"
    );
    let e = err(Selection {
        pids: vec![1],
        ..Selection::default()
    });
    assert!(
        e.as_deref()
            .is_some_and(|e| e.starts_with("unknown process --pid 1")),
        "{e:?}"
    );

    let open = |from: f64, to: Option<f64>| {
        Scan::open(
            &export_common::capture(CAPTURE),
            ScanOptions {
                from: Some(offset(from)),
                to: to.map(offset),
                keep_order: false,
                ..ScanOptions::default()
            },
            &mut |_, _| {},
        )
    };
    match open(100.0, None) {
        Err(ExportError::Time(TimeError::EmptyRange(m))) => {
            assert!(
                m.contains("no samples after 100.000 s") && m.contains("run from"),
                "{m}"
            )
        }
        other => panic!("expected an empty range, got {other:?}"),
    }
    match open(3.0, Some(2.0)) {
        Err(ExportError::Time(TimeError::EmptyRange(m))) => {
            assert!(m.contains("is not before"), "{m}")
        }
        other => panic!("expected an empty range, got {other:?}"),
    }
    for e in [
        ExportError::Time(TimeError::EmptyRange("x".into())),
        ExportError::UnknownThread("y".into()),
    ] {
        assert_eq!(e.to_string().lines().count(), 1);
    }
}
