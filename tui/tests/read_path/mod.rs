//! The whole read path driven by arbitrary bytes: what `fuzz/fuzz_targets/read_path.rs`
//! runs on every input, and `tests/fuzz_inputs.rs` replays on the committed ones.
//!
//! An input is turned into capture bytes by [`capture_bytes`], then [`check`] reads them
//! the way `info`, `report` (every format), `diff` and `view` do, and asserts that nothing
//! a terminal would act on reaches any output: no C0 or C1 control character (other than
//! newlines in text), no DEL, no bidirectional override or isolate, no zero-width
//! character; that every JSON output parses; and that the readers agree on the samples.
//!
//! Used from other crates with `#[path = ".../read_path/mod.rs"] mod read_path;`, so it
//! depends only on hotspot-format, hotspot-replay, hotspot-tui, ratatui and serde_json.

#![allow(dead_code, clippy::unwrap_used)]

use std::io::Cursor;
use std::time::{Duration, Instant};

use hotspot_format::Follower;
use hotspot_format::block::{Compressor, encode_block};
use hotspot_format::header::FileHeader;
use hotspot_replay::Capture;
use hotspot_replay::export::{
    DiffFormat, ExportOptions, Format, Scan, ScanOptions, Selection, Slice, pprof,
};
use hotspot_replay::time::TimeSpec;
use hotspot_tui::model::Data;
use hotspot_tui::palette::{ColorMode, Palette};
use hotspot_tui::render::draw;
use hotspot_tui::{Mode, Options, State, View};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

/// `format`'s output of `slice` as text (every format but pprof is UTF-8).
pub fn out(format: Format, slice: &Slice, top: Option<usize>) -> String {
    let bytes = format
        .render(
            slice,
            &ExportOptions {
                top,
                ..Default::default()
            },
        )
        .unwrap_or_else(|e| panic!("{format:?}: {e}"));
    String::from_utf8(bytes).unwrap_or_else(|e| panic!("{format:?}: {e}"))
}

/// `format`'s comparison of `base` and `new` as text.
pub fn diff_out(format: DiffFormat, base: &Slice, new: &Slice, top: Option<usize>) -> String {
    let bytes = format
        .render(
            base,
            new,
            &ExportOptions {
                top,
                ..Default::default()
            },
        )
        .unwrap_or_else(|e| panic!("{format:?}: {e}"));
    String::from_utf8(bytes).unwrap_or_else(|e| panic!("{format:?}: {e}"))
}

/// Separates the decompressed payloads of an input in payload mode.
pub const PAYLOAD_SEPARATOR: &[u8] = b"\n~HSBLK~\n";

/// The sync marker of a block (SPEC.md §2).
const SYNC: [u8; 8] = hotspot_format::block::SYNC;

/// Capture bytes from a fuzz input. The first byte chooses how the rest is read:
/// - even: the rest is a capture file, whose block checksums are recomputed (so that
///   mutations reach past them, into the zstd frames and the records);
/// - odd: the rest is decompressed payloads separated by [`PAYLOAD_SEPARATOR`], each
///   compressed into a valid block behind a valid file header (so that mutations of the
///   records themselves reach every consumer).
pub fn capture_bytes(input: &[u8]) -> Vec<u8> {
    let Some((&mode, rest)) = input.split_first() else {
        return Vec::new();
    };
    if mode % 2 == 0 {
        let mut data = rest.to_vec();
        fix_checksums(&mut data);
        data
    } else {
        let mut out = FileHeader::default().to_bytes().to_vec();
        let mut compressor = Compressor::new(1).unwrap();
        let mut payload = Vec::new();
        for (seq, raw) in split(rest, PAYLOAD_SEPARATOR).into_iter().enumerate() {
            // Only over-long payloads fail; the reader would reject them anyway.
            let _ = encode_block(
                &mut compressor,
                seq as u64,
                raw,
                &[],
                &mut payload,
                &mut out,
            );
        }
        out
    }
}

/// The inverse of payload mode's split: an input that [`capture_bytes`] turns into blocks
/// holding `payloads`.
pub fn payload_input(payloads: &[Vec<u8>]) -> Vec<u8> {
    let mut out = vec![1u8];
    for (i, p) in payloads.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(PAYLOAD_SEPARATOR);
        }
        out.extend_from_slice(p);
    }
    out
}

fn split<'a>(data: &'a [u8], sep: &[u8]) -> Vec<&'a [u8]> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i + sep.len() <= data.len() {
        if &data[i..i + sep.len()] == sep {
            parts.push(&data[start..i]);
            i += sep.len();
            start = i;
        } else {
            i += 1;
        }
    }
    parts.push(&data[start..]);
    parts
}

/// Recomputes the payload and header checksums of every block header found at a sync
/// marker (the payload checksum over as much of the declared payload as is present).
pub fn fix_checksums(data: &mut [u8]) {
    let mut pos = 16;
    while pos + 32 <= data.len() {
        if data[pos..pos + 8] != SYNC {
            pos += 1;
            continue;
        }
        let len = u32::from_le_bytes(data[pos + 16..pos + 20].try_into().unwrap()) as usize;
        let end = (pos + 32).saturating_add(len).min(data.len());
        let crc = crc32c(&data[pos + 32..end]);
        data[pos + 24..pos + 28].copy_from_slice(&crc.to_le_bytes());
        let hcrc = crc32c(&data[pos + 8..pos + 28]);
        data[pos + 28..pos + 32].copy_from_slice(&hcrc.to_le_bytes());
        pos += 8;
    }
}

/// CRC-32C (Castagnoli), bitwise: no dependency beyond the crates named above.
fn crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x82F6_3B78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// Why a character must not reach a terminal: `None` when it may.
pub fn unsafe_char(c: char) -> Option<&'static str> {
    let u = c as u32;
    match u {
        0x0a => None,
        0x00..=0x1f => Some("C0 control"),
        0x7f => Some("DEL"),
        0x80..=0x9f => Some("C1 control"),
        0x061c | 0x200e | 0x200f | 0x202a..=0x202e | 0x2066..=0x2069 => Some("bidi control"),
        0x200b..=0x200d | 0x2060..=0x2064 | 0xfeff => Some("zero-width character"),
        0x2028 | 0x2029 => Some("line or paragraph separator"),
        _ => None,
    }
}

/// Fails if `text` holds a character a terminal would act on (see [`unsafe_char`]).
pub fn assert_clean(what: &str, text: &str) {
    if let Some((i, c, why)) = text
        .char_indices()
        .find_map(|(i, c)| unsafe_char(c).map(|w| (i, c, w)))
    {
        let from = text.floor_char_boundary(i.saturating_sub(40));
        let to = text.ceil_char_boundary((i + 40).min(text.len()));
        panic!(
            "{what}: {why} U+{:04X} at byte {i}: {:?}",
            c as u32,
            &text[from..to]
        );
    }
}

/// Fails unless `text` is one JSON document, clean of terminal controls.
pub fn assert_json(what: &str, text: &str) {
    assert_clean(what, text);
    if let Err(e) = serde_json::from_str::<serde_json::Value>(text) {
        panic!("{what}: not valid JSON: {e}");
    }
}

/// Fails if any cell of a drawn screen holds a character a terminal would act on.
pub fn assert_screen_clean(what: &str, buf: &Buffer) {
    for cell in &buf.content {
        let sym = cell.symbol();
        if sym.contains('\n') {
            panic!("{what}: newline in a cell: {sym:?}");
        }
        assert_clean(what, sym);
    }
}

/// The options `view` runs with, minus the environment.
pub fn view_options() -> Options {
    Options {
        mode: Mode::Replay,
        palette: Palette::new(ColorMode::Ansi),
        links: None,
        symbol_dirs: Vec::new(),
        no_interpreter: false,
    }
}

/// Every screen: the four tabs, callers/callees of the hottest function, the help, and
/// the flat view without kernel frames over a timeline by thread.
pub const ALL_SCREENS: &[Screen] = &[
    Screen::View(View::Flat),
    Screen::View(View::Flame),
    Screen::View(View::Stream),
    Screen::View(View::Threads),
    Screen::Callers,
    Screen::Help,
    Screen::NoKernelByThread,
];

/// One screen to draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    View(View),
    /// Callers/callees of the hottest function (skipped when there is none).
    Callers,
    /// The help over the flat view.
    Help,
    /// The flat view without kernel frames, the timeline by thread.
    NoKernelByThread,
}

/// Draws `screens` of `state` and checks each; returns them with their names.
pub fn draw_screens(state: &mut State, screens: &[Screen]) -> Vec<(String, Buffer)> {
    let mut out = Vec::new();
    let now = Instant::now();
    for &screen in screens {
        state.view = View::Flat;
        state.help = false;
        state.no_kernel = false;
        state.timeline_by_thread = false;
        match screen {
            Screen::View(v) => state.view = v,
            Screen::Callers => {
                state.refresh();
                let Some(target) = state.flat_rows().first().map(|r| r.key.clone()) else {
                    continue;
                };
                state.callers.target = Some(target);
                state.view = View::Callers;
            }
            Screen::Help => state.help = true,
            Screen::NoKernelByThread => {
                state.no_kernel = true;
                state.timeline_by_thread = true;
            }
        }
        state.refresh();
        let mut buf = Buffer::empty(Rect::new(0, 0, state.size.width, state.size.height));
        draw(state, &mut buf, now);
        let name = format!("{screen:?}");
        assert_screen_clean(&name, &buf);
        out.push((name, buf));
    }
    state.view = View::Flat;
    state.help = false;
    state.no_kernel = false;
    state.timeline_by_thread = false;
    out
}

/// Draws every screen of `state` (see [`ALL_SCREENS`]).
pub fn draw_views(state: &mut State) -> Vec<(String, Buffer)> {
    draw_screens(state, ALL_SCREENS)
}

/// Times the steps of a check: each is one command's work (`info`, one `report` format,
/// `diff`, opening `view`), which must take no more CPU than the limit, if one is set.
/// CPU time rather than wall time: on a loaded machine a thread may wait for a CPU far
/// longer than it runs.
#[derive(Debug, Clone, Copy)]
pub struct Steps {
    pub limit: Option<Duration>,
}

impl Steps {
    pub fn run<T>(&self, what: &str, f: impl FnOnce() -> T) -> T {
        let start = thread_cpu();
        let out = f();
        if let (Some(limit), Some(a), Some(b)) = (self.limit, start, thread_cpu()) {
            let took = b.saturating_sub(a);
            assert!(took <= limit, "{what} took {took:?} of CPU, over {limit:?}");
        }
        out
    }
}

/// CPU time of the calling thread (user and system), from `/proc/thread-self/stat`.
fn thread_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the command name (which may hold spaces) in parentheses; utime and
    // stime are fields 14 and 15, in clock ticks (100 a second on Linux).
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// Reads `data` as every command does and checks every output.
pub fn check(data: &[u8]) {
    check_within(data, Steps { limit: None });
}

/// [`check`], each command's work within `steps.limit`.
pub fn check_within(data: &[u8], steps: Steps) {
    // `info`, `report`, `diff`: a streaming scan.
    let options = ScanOptions {
        measure_sizes: true,
        keep_order: true,
        ..ScanOptions::default()
    };
    let scan = steps.run("scan", || Scan::from_bytes(data, options, &mut |_, _| {}));
    // `view`: the capture read whole, and the follower as `view` tails a file.
    let capture = steps.run("capture", || Capture::from_bytes(data));
    match (&scan, &capture) {
        (Ok(_), Ok(_)) | (Err(_), Err(_)) => {}
        (s, c) => panic!(
            "scan and capture disagree on opening: {:?} / {:?}",
            s.as_ref().err(),
            c.as_ref().err()
        ),
    }
    if let Err(e) = &scan {
        assert_clean("scan error", &e.to_string());
    }
    if let (Ok(scan), Ok(capture)) = (&scan, capture) {
        assert_eq!(scan.samples, capture.samples.len() as u64, "sample counts");
        check_headless(scan, steps);
        let text = steps.run("info of the capture", || {
            hotspot_replay::info::text(&capture)
        });
        assert_clean("info text (capture)", &text);
        check_views(capture, data, steps);
    }
    // The same bytes with a time window: the scan places it while reading.
    let windowed = ScanOptions {
        from: Some(TimeSpec::Offset(1)),
        to: Some(TimeSpec::Offset(u64::MAX / 2)),
        ..ScanOptions::default()
    };
    steps.run("windowed report", || {
        if let Ok(scan) = Scan::from_bytes(data, windowed, &mut |_, _| {}) {
            let selection = Selection {
                from: windowed.from,
                to: windowed.to,
                no_kernel: true,
                ..Selection::default()
            };
            if let Ok(slice) = Slice::new(&scan, &selection) {
                assert_clean("windowed report", &out(Format::Text, &slice, Some(5)));
                assert_json("windowed json", &out(Format::Json, &slice, Some(5)));
            }
        }
    });
}

/// `info` (text and JSON), `report` in every format, and `diff` of the capture against
/// itself.
fn check_headless(scan: &Scan, steps: Steps) {
    steps.run("info", || {
        assert_clean("info text", &hotspot_replay::info::scan_text(scan));
        assert_json("info json", &hotspot_replay::info::scan_json(scan));
    });
    let slice = steps.run("slice", || Slice::new(scan, &Selection::default()).unwrap());
    assert_eq!(slice.total, scan.samples, "the report counts every sample");
    steps.run("report text", || {
        assert_clean("report text", &out(Format::Text, &slice, Some(30)));
    });
    steps.run("report json", || {
        assert_json("report json", &out(Format::Json, &slice, None));
    });
    steps.run("report folded", || {
        let folded_text = out(Format::Folded, &slice, None);
        assert_clean("folded", &folded_text);
        let sum: u64 = folded_text
            .lines()
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
            .sum();
        assert_eq!(sum, scan.samples, "folded counts add up to the samples");
    });
    steps.run("report svg", || {
        match Format::Svg.render(&slice, &ExportOptions::default()) {
            Ok(svg) => assert_clean("svg", &String::from_utf8(svg).unwrap()),
            Err(e) => assert!(scan.samples == 0, "svg failed with samples: {e}"),
        }
    });
    steps.run("report pprof", || {
        let profile = pprof::profile(&slice);
        for s in &profile.string_table {
            assert_clean("pprof string", s);
        }
        Format::Pprof
            .render(&slice, &ExportOptions::default())
            .unwrap();
    });
    steps.run("report speedscope", || {
        assert_json("speedscope", &out(Format::Speedscope, &slice, None));
    });
    steps.run("diff", || {
        let d = hotspot_replay::export::diff::diff(&slice, &slice);
        assert!(
            d.changes
                .iter()
                .all(|c| c.delta_self == 0.0 && c.delta_total == 0.0),
            "a capture differs from itself"
        );
        assert_clean(
            "diff text",
            &diff_out(DiffFormat::Text, &slice, &slice, Some(30)),
        );
        assert_json(
            "diff json",
            &diff_out(DiffFormat::Json, &slice, &slice, None),
        );
        assert_clean(
            "diff folded",
            &diff_out(DiffFormat::Folded, &slice, &slice, None),
        );
    });
}

/// The views over the capture read whole, and over the follower's events (as `view`
/// tails a file: half of it, then all of it).
fn check_views(capture: Capture, data: &[u8], steps: Steps) {
    let samples = capture.samples.len() as u64;
    let mut state = steps.run("view", || {
        let mut state = State::new(Data::new(capture), view_options(), Rect::new(0, 0, 80, 20));
        state.finished = true;
        state.refresh();
        if let Some(f) = state.fold() {
            assert_eq!(f.total, samples, "the views count every sample");
        }
        draw_views(&mut state);
        state
    });
    // A time selection inside the capture.
    steps.run("view of a selection", || {
        if let Some((a, b)) = state.span() {
            state.selection = Some((a + (b - a) / 3, b - (b - a) / 3));
            draw_screens(
                &mut state,
                &[Screen::View(View::Flat), Screen::View(View::Stream)],
            );
        }
    });
    drop(state);
    steps.run("view of half the file", || {
        let cut = data.len() / 2;
        let mut follower = Follower::new(Cursor::new(data[..cut].to_vec()));
        let mut state = State::new(Data::default(), view_options(), Rect::new(0, 0, 60, 16));
        for _ in 0..64 {
            match follower.poll() {
                Ok(events) if !events.is_empty() => {
                    state.data.apply(events);
                }
                _ => break,
            }
        }
        draw_screens(&mut state, &[Screen::View(View::Flat)]);
    });
    steps.run("view tailing the file", || {
        let mut follower = Follower::new(Cursor::new(data.to_vec()));
        let mut model = Data::default();
        // The follower reads a few MiB per poll.
        loop {
            match follower.poll() {
                Ok(events) if !events.is_empty() => {
                    model.apply(events);
                }
                _ => break,
            }
        }
        let mut state = State::new(model, view_options(), Rect::new(0, 0, 60, 16));
        state.refresh();
        if let Some(f) = state.fold() {
            assert_eq!(f.total, samples, "the tailed views count every sample");
        }
    });
}
