//! The views' diff mode (`hotspot view BASE NEW`): snapshots of every view drawn with
//! ratatui's `TestBackend` from the committed fixture captures (split7030 against
//! split3070: one program with its hot/cold split inverted), and checks that what the views
//! compare is `hotspot diff`'s own diff of the same selections, that each capture keeps
//! its own time selection, and that the metric applies to both.

use std::path::PathBuf;
use std::time::Instant;

use hotspot_replay::Capture;
use hotspot_replay::export::diff::{DiffOptions, diff_with};
use hotspot_replay::export::{Scan, Selection, Slice};
use hotspot_replay::metric::Metric;
use hotspot_tui::diff::{Compare, Side};
use hotspot_tui::input::handle_key;
use hotspot_tui::keymap::Key;
use hotspot_tui::model::Data;
use hotspot_tui::palette::{ColorMode, Palette};
use hotspot_tui::render::draw;
use hotspot_tui::{Mode, Options, State, View};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/captures")
        .join(format!("{name}.hsp"))
}

fn capture(name: &str) -> Capture {
    let mut c = Capture::open(&path(name)).expect("fixture capture opens");
    // The header names the file only; keep it independent of the checkout's location.
    c.path = PathBuf::from(format!("{name}.hsp"));
    c
}

fn state(base: &str, new: &str, w: u16, h: u16) -> State {
    diff_state(capture(base), capture(new), w, h)
}

fn diff_state(base: Capture, c: Capture, w: u16, h: u16) -> State {
    let finished = c.end.is_some();
    let opts = Options {
        mode: Mode::Replay,
        palette: Palette::new(ColorMode::Ansi),
        links: None,
        symbol_dirs: Vec::new(),
        no_interpreter: false,
    };
    let mut s = State::new(Data::new(c), opts, Rect::new(0, 0, w, h));
    s.diff = Some(Compare::new(Data::new(base), DiffOptions::default()));
    s.finished = finished;
    s.refresh();
    s
}

fn screen(state: &mut State) -> String {
    state.refresh();
    let mut t =
        Terminal::new(TestBackend::new(state.size.width, state.size.height)).expect("terminal");
    t.draw(|f| draw(state, f.buffer_mut(), Instant::now()))
        .expect("draw");
    t.backend().to_string()
}

fn keys(state: &mut State, keys: &[Key]) {
    for &k in keys {
        handle_key(state, k, Instant::now());
    }
}

/// The diff the views hold.
fn held(state: &State) -> &hotspot_replay::export::diff::Diff {
    state
        .diff
        .as_ref()
        .and_then(|c| c.diff.as_ref())
        .expect("a diff")
}

#[test]
fn the_views_compare_what_hotspot_diff_compares() {
    let s = state("split7030", "split3070", 120, 30);
    let sel = Selection::default();
    let scan =
        |n: &str| Scan::open(&path(n), sel.scan_options(false), &mut |_, _| {}).expect("scan");
    let (a, b) = (scan("split7030"), scan("split3070"));
    let (a, b) = (
        Slice::new(&a, &sel).expect("slice"),
        Slice::new(&b, &sel).expect("slice"),
    );
    let want = diff_with(&a, &b, &DiffOptions::default());
    let got = held(&s);
    assert_eq!(got.changes.len(), want.changes.len());
    assert_eq!(
        (got.base_samples, got.new_samples),
        (want.base_samples, want.new_samples)
    );
    for (g, w) in got.changes.iter().zip(&want.changes) {
        assert_eq!(g.key, w.key);
        assert_eq!(
            (g.base_self, g.base_total, g.new_self, g.new_total),
            (w.base_self, w.base_total, w.new_self, w.new_total)
        );
        assert_eq!((g.self_p, g.total_p), (w.self_p, w.total_p), "{:?}", g.key);
    }
    // The split is inverted: something is marked beyond noise both ways.
    assert!(
        got.changes
            .iter()
            .any(|c| got.marks(c)[0] && c.delta_self > 0.0)
    );
    assert!(
        got.changes
            .iter()
            .any(|c| got.marks(c)[0] && c.delta_self < 0.0)
    );
}

#[test]
fn diff_flat_share() {
    let mut s = state("split7030", "split3070", 120, 28);
    let out = screen(&mut s);
    assert!(out.contains("Flat diff") && out.contains("hot_") && out.contains("cold_"));
    assert!(out.contains("*"), "no change beyond noise marked:\n{out}");
    insta::assert_snapshot!(out);
}

#[test]
fn diff_flat_rate() {
    let mut s = state("split7030", "split3070", 120, 28);
    keys(&mut s, &[Key::Char('x')]);
    assert_eq!(held(&s).scale, hotspot_replay::export::diff::Scale::Rate);
    let out = screen(&mut s);
    assert!(out.contains("ms/s"), "{out}");
    insta::assert_snapshot!(out);
}

#[test]
fn diff_callers_and_callees() {
    let mut s = state("split7030", "split3070", 120, 28);
    keys(&mut s, &[Key::Enter]);
    assert_eq!(s.view, View::Callers);
    let c = s.diff.as_ref().expect("diff");
    // The base's side of every edge is there: some edge has weight in the base.
    assert!(c.neighbours.iter().any(|&n| n > 0), "{:?}", c.neighbours);
    insta::assert_snapshot!(screen(&mut s));
}

#[test]
fn diff_flame_graph() {
    let mut s = state("split7030", "split3070", 120, 28);
    keys(&mut s, &[Key::Char('f'), Key::Down, Key::Down]);
    let out = screen(&mut s);
    assert!(
        out.contains("▲ slower") && out.contains("▼ faster"),
        "{out}"
    );
    // The inverted split: a hot leaf got faster, a cold one slower, in the bars.
    assert!(out.contains("▲cold") || out.contains("▲hot"), "{out}");
    assert!(out.contains("▼cold") || out.contains("▼hot"), "{out}");
    insta::assert_snapshot!(out);
}

#[test]
fn diff_help_lists_the_diff_keys() {
    let mut s = state("split7030", "split3070", 120, 60);
    keys(&mut s, &[Key::Char('?')]);
    let out = screen(&mut s);
    assert!(out.contains("diff: [ ] - + a move the base"), "{out}");
    assert!(out.contains("diff: Δ as share points"), "{out}");
    insta::assert_snapshot!(out);
}

#[test]
fn each_capture_keeps_its_own_selection() {
    let mut s = state("split7030", "split3070", 120, 28);
    let whole = held(&s).base_samples;
    // `b` hands the selection keys to the base: shrink it to its first part.
    keys(&mut s, &[Key::Char('b')]);
    assert_eq!(s.diff.as_ref().map(|c| c.side), Some(Side::Base));
    keys(&mut s, &vec![Key::Char('-'); 80]);
    let base_sel = s
        .diff
        .as_ref()
        .and_then(|c| c.selection)
        .expect("base selection");
    assert!(s.selection.is_none(), "the new capture's selection moved");
    let d = held(&s);
    assert!(
        d.base_samples < whole / 2 && d.base_samples > 0,
        "{} of {whole}",
        d.base_samples
    );
    assert_eq!(d.new_samples, s.fold().map_or(0, |f| f.total));
    // Back to the new capture: its keys move its own selection, the base's stays.
    keys(&mut s, &[Key::Char('b'), Key::Char('-')]);
    assert!(s.selection.is_some());
    assert_eq!(s.diff.as_ref().and_then(|c| c.selection), Some(base_sel));
    let out = screen(&mut s);
    assert!(out.contains("▶new ") && out.contains(" base "), "{out}");
    insta::assert_snapshot!(out);
}

#[test]
fn the_metric_applies_to_both_captures() {
    let mut s = state("offcpu", "offcpu", 120, 28);
    let cpu = held(&s).base_samples;
    keys(&mut s, &[Key::Char('m')]);
    assert_eq!(s.metric, Metric::OffCpu);
    let d = held(&s);
    assert_eq!(d.metric, Metric::OffCpu);
    // The same capture on both sides: both weigh off-CPU periods, and nothing changed.
    assert_eq!(d.base_samples, d.new_samples);
    assert_ne!(d.base_samples, cpu);
    assert!(d.changes.iter().all(|c| !d.marks(c)[0] && !d.marks(c)[1]));
    // A base without off-CPU data keeps both on CPU time.
    let mut s = state("split7030", "offcpu", 120, 28);
    keys(&mut s, &[Key::Char('m')]);
    assert_eq!(s.metric, Metric::Cpu);
    assert!(screen(&mut s).contains("one has no off-CPU data"));
}

#[test]
fn diff_threads_wall_time() {
    let mut s = state("offcpu", "offcpu", 120, 28);
    keys(&mut s, &[Key::Char('T')]);
    let out = screen(&mut s);
    assert!(out.contains("m switches"), "{out}");
    keys(&mut s, &[Key::Char('m'), Key::Char('m')]);
    assert_eq!(s.metric, Metric::Wall);
    let rows = s
        .diff
        .as_ref()
        .and_then(|c| c.threads.clone())
        .expect("thread comparison");
    assert!(!rows.is_empty());
    assert!(
        rows.iter().all(|r| r.wall_growth() == Some(0.0)),
        "{rows:?}"
    );
    let out = screen(&mut s);
    assert!(out.contains("+0.0%"), "{out}");
    insta::assert_snapshot!(out);
}

/// `name` with a mark a third of the way in.
fn marked(name: &str, text: &str) -> Capture {
    let mut c = capture(name);
    let (a, b) = c.time_range().expect("samples");
    c.marks.push(hotspot_format::Mark {
        time_ns: a + (b - a) / 3,
        text: text.into(),
    });
    c
}

#[test]
fn each_timeline_shows_its_own_marks() {
    let base = marked("split7030", "deploy 4.1");
    let new = marked("split3070", "deploy 4.2");
    let mut s = diff_state(base, new, 120, 28);
    let out = screen(&mut s);
    let row = |text: &str| out.lines().position(|l| l.contains(text));
    let (in_base, in_new) = (row("▼deploy 4.1"), row("▼deploy 4.2"));
    // The base's strip is drawn above the new capture's.
    assert!(
        in_base.is_some() && in_new.is_some() && in_base < in_new,
        "base mark on row {in_base:?}, new on {in_new:?}:\n{out}"
    );
    insta::assert_snapshot!(out);
}
