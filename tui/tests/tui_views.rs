//! Snapshot tests of every view, drawn with ratatui's `TestBackend` from the committed
//! fixture captures (phased: three phases one after another; threads: three named
//! workers). Fixed sizes, the captures' own data only: nothing depends on this machine.

use std::path::PathBuf;
use std::time::Instant;

use hotspot_replay::Capture;
use hotspot_tui::input::handle_key;
use hotspot_tui::keymap::Key;
use hotspot_tui::model::Data;
use hotspot_tui::palette::{ColorMode, Palette};
use hotspot_tui::render::draw;
use hotspot_tui::views::picker::{self, Picker, ProcRow};
use hotspot_tui::{Mode, Options, State};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;

fn capture(name: &str) -> Capture {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/captures")
        .join(format!("{name}.hsp"));
    let mut c = Capture::open(&path).expect("fixture capture opens");
    // The header names the file only; keep it independent of the checkout's location.
    c.path = PathBuf::from(format!("{name}.hsp"));
    c
}

fn state(name: &str, w: u16, h: u16) -> State {
    let c = capture(name);
    let finished = c.end.is_some();
    let opts = Options {
        mode: Mode::Replay,
        palette: Palette::new(ColorMode::Ansi),
        links: None,
        symbol_dirs: Vec::new(),
        no_interpreter: false,
    };
    let mut s = State::new(Data::new(c), opts, Rect::new(0, 0, w, h));
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

#[test]
fn flat_view_top_rows() {
    let mut s = state("phased", 110, 24);
    let out = screen(&mut s);
    assert!(out.contains("p2_leaf") && out.contains("p1_leaf") && out.contains("p3_leaf"));
    insta::assert_snapshot!(out);
}

#[test]
fn flame_layout() {
    let mut s = state("phased", 110, 24);
    keys(&mut s, &[Key::Char('f'), Key::Down, Key::Down, Key::Down]);
    insta::assert_snapshot!(screen(&mut s));
}

#[test]
fn flame_zoomed_into_a_phase() {
    let mut s = state("phased", 110, 24);
    keys(
        &mut s,
        &[
            Key::Char('f'),
            Key::Down,
            Key::Down,
            Key::Down,
            Key::Right,
            Key::Enter,
        ],
    );
    let out = screen(&mut s);
    assert!(out.contains("(esc: zoom out)"));
    insta::assert_snapshot!(out);
}

#[test]
fn timeline_with_a_selection_and_the_stream() {
    let mut s = state("phased", 110, 24);
    // The middle third of the capture: phase two.
    let (a, b) = s.span().expect("samples");
    let third = (b - a) / 3;
    s.selection = Some((a + third + third / 10, a + 2 * third - third / 10));
    keys(&mut s, &[Key::Char('t')]);
    let out = screen(&mut s);
    assert!(out.contains("p2_leaf"), "{out}");
    assert!(
        !out.contains("p1_leaf") && !out.contains("p3_leaf"),
        "{out}"
    );
    insta::assert_snapshot!(out);
}

#[test]
fn the_timeline_shows_marks() {
    let mut c = capture("phased");
    let (a, b) = c.time_range().expect("samples");
    // One mark a third of the way in, one two thirds in.
    for (k, text) in [(1, "deploy 4.2"), (2, "rollback")] {
        c.marks.push(hotspot_format::Mark {
            time_ns: a + (b - a) / 3 * k,
            text: text.into(),
        });
    }
    let opts = Options {
        mode: Mode::Replay,
        palette: Palette::new(ColorMode::Ansi),
        links: None,
        symbol_dirs: Vec::new(),
        no_interpreter: false,
    };
    let mut s = State::new(Data::new(c), opts, Rect::new(0, 0, 110, 24));
    s.finished = true;
    s.refresh();
    let out = screen(&mut s);
    assert!(
        out.contains("▼deploy 4.2") && out.contains("▼rollback"),
        "{out}"
    );
    insta::assert_snapshot!(out);
}

#[test]
fn flat_view_follows_the_selection() {
    let mut s = state("phased", 110, 16);
    let (a, b) = s.span().expect("samples");
    let third = (b - a) / 3;
    s.selection = Some((a + 2 * third + third / 10, b));
    let out = screen(&mut s);
    let first_row = out.lines().nth(4).unwrap_or_default().to_string();
    assert!(first_row.contains("p3_leaf"), "{out}");
    insta::assert_snapshot!(out);
}

#[test]
fn callers_and_callees() {
    let mut s = state("phased", 110, 24);
    keys(
        &mut s,
        &[
            Key::Char('/'),
            Key::Char('p'),
            Key::Char('2'),
            Key::Char('_'),
            Key::Char('w'),
            Key::Enter,
            Key::Enter,
        ],
    );
    let out = screen(&mut s);
    assert!(
        out.contains("phase_two") && out.contains("p2_leaf"),
        "{out}"
    );
    insta::assert_snapshot!(out);
}

#[test]
fn thread_list() {
    let mut s = state("threads", 110, 20);
    keys(&mut s, &[Key::Char('T')]);
    let out = screen(&mut s);
    for name in ["hs-alpha", "hs-beta", "hs-gamma"] {
        assert!(out.contains(name), "{out}");
    }
    insta::assert_snapshot!(out);
}

#[test]
fn excluding_threads_refolds_every_view() {
    let mut s = state("threads", 110, 20);
    // Leave out hs-beta and hs-gamma: the flat view keeps alpha only.
    keys(&mut s, &[Key::Char('T')]);
    for name in ["hs-beta", "hs-gamma"] {
        let at = s
            .data
            .threads
            .iter()
            .position(|t| t.name == name)
            .expect("thread");
        keys(&mut s, &[Key::Char('g')]);
        keys(&mut s, &vec![Key::Down; at]);
        keys(&mut s, &[Key::Enter]);
    }
    keys(&mut s, &[Key::Char('1')]);
    let out = screen(&mut s);
    assert!(out.contains("alpha_leaf"), "{out}");
    assert!(
        !out.contains("beta_leaf") && !out.contains("gamma_leaf"),
        "{out}"
    );
    insta::assert_snapshot!(out);
}

#[test]
fn help_lists_the_keys() {
    let mut s = state("phased", 110, 44);
    keys(&mut s, &[Key::Char('?')]);
    insta::assert_snapshot!(screen(&mut s));
}

fn procs() -> Vec<ProcRow> {
    let row = |pid, name: &str, cpu, cmd: &str| ProcRow {
        pid,
        name: name.into(),
        cpu,
        cmdline: cmd.into(),
    };
    vec![
        row(1, "systemd", 0.0, "/sbin/init"),
        row(812, "postgres", 12.5, "postgres: writer"),
        row(4242, "phased", 99.0, "./phased 3"),
        row(977, "sshd", 0.3, "sshd: /usr/sbin/sshd -D"),
        row(31337, "evil\x1b[2J", 1.0, "evil\x07 --bell"),
    ]
}

fn picker_screen(p: &Picker) -> String {
    let mut t = Terminal::new(TestBackend::new(p.size.width, p.size.height)).expect("terminal");
    t.draw(|f| picker::render(p, f.buffer_mut())).expect("draw");
    t.backend().to_string()
}

#[test]
fn process_table() {
    let p = Picker::new(
        procs(),
        Rect::new(0, 0, 80, 10),
        Palette::new(ColorMode::Ansi),
    );
    let out = picker_screen(&p);
    assert!(!out.contains('\x1b'), "control characters reach the screen");
    insta::assert_snapshot!(out);
}

#[test]
fn process_table_filtered_and_sorted_by_pid() {
    let mut p = Picker::new(
        procs(),
        Rect::new(0, 0, 80, 10),
        Palette::new(ColorMode::Ansi),
    );
    for k in [Key::Char('s'), Key::Char('/'), Key::Char('s'), Key::Enter] {
        picker::handle_key(&mut p, k);
    }
    insta::assert_snapshot!(picker_screen(&p));
}
