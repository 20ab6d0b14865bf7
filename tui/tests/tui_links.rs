//! OSC 8 link spans (`--repo`): in the flat, callers/callees and flame views, each span
//! sits exactly on the function name the view drew, and links to its hottest line.

use std::path::PathBuf;
use std::time::Instant;

use hotspot_replay::Capture;
use hotspot_tui::input::handle_key;
use hotspot_tui::keymap::Key;
use hotspot_tui::links::hyperlink::spans;
use hotspot_tui::links::link::LinkBase;
use hotspot_tui::model::Data;
use hotspot_tui::palette::{ColorMode, Palette};
use hotspot_tui::render::draw;
use hotspot_tui::{Mode, Options, State};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

fn state(links: bool) -> State {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/captures/phased.hsp");
    let c = Capture::open(&path).expect("fixture capture opens");
    let opts = Options {
        mode: Mode::Replay,
        palette: Palette::new(ColorMode::Ansi),
        links: None,
        symbol_dirs: Vec::new(),
        no_interpreter: false,
    };
    let mut s = State::new(Data::new(c), opts, Rect::new(0, 0, 120, 30));
    s.finished = true;
    s.refresh();
    if links {
        // The fixture's sources sit in some directory ending in `fixtures/`: strip what
        // is before it, so links read `fixtures/phased.c` whatever machine built it.
        let file = s
            .flat_rows()
            .first()
            .and_then(|r| r.hottest.clone())
            .map(|(f, _)| f)
            .expect("the fixture has source lines");
        let prefix = file
            .strip_suffix("fixtures/phased.c")
            .expect("built from fixtures/phased.c")
            .to_string();
        s.opts.links = Some(LinkBase::new("acme/widget", None, vec![prefix]).expect("base"));
    }
    s
}

fn drawn(s: &mut State) -> Buffer {
    s.refresh();
    let mut buf = Buffer::empty(s.size);
    draw(s, &mut buf, Instant::now());
    buf
}

fn text_at(buf: &Buffer, x: u16, y: u16, n: usize) -> String {
    (0..n as u16).map(|i| buf[(x + i, y)].symbol()).collect()
}

/// Every span lies on its own text in the drawn frame and links to a line of phased.c.
fn check(s: &mut State, want_at_least: usize) -> Vec<String> {
    let buf = drawn(s);
    let spans = spans(s);
    assert!(
        spans.len() >= want_at_least,
        "{:?} view: {} spans",
        s.view,
        spans.len()
    );
    for sp in &spans {
        let n = sp.text.chars().count();
        assert_eq!(text_at(&buf, sp.x, sp.y, n), sp.text, "{:?} view", s.view);
        assert!(
            sp.url
                .starts_with("https://github.com/acme/widget/blob/HEAD/fixtures/phased.c#L"),
            "{}",
            sp.url
        );
    }
    spans.into_iter().map(|s| s.text).collect()
}

#[test]
fn links_sit_on_the_names_in_every_view_that_shows_functions() {
    let mut s = state(true);
    let flat = check(&mut s, 3);
    assert!(flat.iter().any(|t| t == "p2_leaf"), "{flat:?}");
    // Callers/callees of the top function: its title and the rows that have lines.
    handle_key(&mut s, Key::Enter, Instant::now());
    let callers = check(&mut s, 2);
    assert_eq!(callers[0], "p2_leaf");
    // Flame: the details line of the frame under the cursor.
    handle_key(&mut s, Key::Char('f'), Instant::now());
    for _ in 0..3 {
        handle_key(&mut s, Key::Down, Instant::now());
    }
    check(&mut s, 1);
}

#[test]
fn no_spans_without_a_repository() {
    let mut s = state(false);
    drawn(&mut s);
    assert!(spans(&s).is_empty());
}
