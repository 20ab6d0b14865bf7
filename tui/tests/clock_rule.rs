//! One rule for time 0 (`hotspot_replay::clock`): `report --from/--to` and the views'
//! selection labels name the same instants, also when the first sample comes long after
//! the session's start, or the session starts at monotonic 0.

use std::time::Instant;

use hotspot_format::{Record, Sample, SessionHeader, Stack, Writer};
use hotspot_replay::Capture;
use hotspot_replay::export::{Scan, ScanOptions};
use hotspot_replay::time::TimeSpec;
use hotspot_tui::model::Data;
use hotspot_tui::palette::{ColorMode, Palette};
use hotspot_tui::render::draw;
use hotspot_tui::views::draw::secs;
use hotspot_tui::{Mode, Options, State};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

const S: u64 = 1_000_000_000;

/// A capture whose session starts at `start` and whose 2,000 samples (10 ms apart, 20 s)
/// begin at `first`.
fn capture(start: u64, first: u64) -> Vec<u8> {
    let session = SessionHeader {
        host: "clock".into(),
        freq_hz: 100,
        targets: vec![7],
        start_mono_ns: start,
        start_wall_ns: 1_764_547_200 * S,
        ..SessionHeader::default()
    };
    let mut w = Writer::new(Vec::new(), session).expect("writer");
    w.push(Record::Stack(Stack {
        id: 0,
        frames: vec![],
    }))
    .expect("stack");
    let mut last = first;
    for i in 0..2_000u64 {
        last = first + i * 10_000_000;
        w.push_sample(Sample {
            time_ns: last,
            tid: 7,
            cpu: 0,
            stack: 0,
        })
        .expect("sample");
    }
    w.finish(0, last, 0).expect("finish")
}

/// The timeline's label line once the views show the selection `from..=to`.
fn view_label(bytes: &[u8], from: u64, to: u64) -> (String, u64) {
    let opts = Options {
        mode: Mode::Replay,
        palette: Palette::new(ColorMode::None),
        links: None,
        symbol_dirs: Vec::new(),
        no_interpreter: false,
    };
    let capture = Capture::from_bytes(bytes).expect("capture");
    let size = Rect::new(0, 0, 160, 30);
    let mut state = State::new(Data::new(capture), opts, size);
    state.selection = Some((from, to));
    state.refresh();
    let mut buf = Buffer::empty(size);
    draw(&state, &mut buf, Instant::now());
    let (a, b) = state.span().expect("span");
    let line = (0..size.height)
        .map(|y| {
            (0..size.width)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect::<String>()
        })
        .find(|l| l.starts_with("timeline "))
        .expect("a timeline label");
    (line, b - a)
}

/// `report --from (gap + 2) --to (gap + 4)` and the views showing the instants it
/// resolved to: the views must call them gap + 2 s and gap + 4 s too.
fn agree(start: u64, gap_s: u64) {
    let bytes = capture(start, start + gap_s * S);
    let (from_s, to_s) = (gap_s + 2, gap_s + 4);
    let options = ScanOptions {
        from: Some(TimeSpec::Offset(from_s * S)),
        to: Some(TimeSpec::Offset(to_s * S)),
        ..ScanOptions::default()
    };
    let scan = Scan::from_bytes(&bytes, options, &mut |_, _| {}).expect("scan");
    let (from, to) = (scan.from_ns.expect("from"), scan.to_ns.expect("to"));
    assert_eq!((from, to), (start + from_s * S, start + to_s * S));
    assert!(scan.window_samples > 0);
    let (label, span) = view_label(&bytes, from, to);
    let want = format!(
        "selection {} – {}",
        secs(from_s * S, span),
        secs(to_s * S, span)
    );
    assert!(
        label.contains(&want),
        "first sample {gap_s} s after the start {start}: the views say\n{label}\nnot {want}"
    );
}

#[test]
fn first_sample_ten_seconds_after_the_session_start() {
    agree(50 * S, 10);
}

#[test]
fn first_sample_two_hours_after_the_session_start() {
    // The views draw from the first sample (an hour-long blank strip would hide the
    // samples) but still count from the session's start.
    agree(50 * S, 7_200);
}

#[test]
fn session_starting_at_monotonic_zero() {
    agree(0, 30);
}
