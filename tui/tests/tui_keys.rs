//! Key handling as functions from (state, key) to state, on the committed fixtures.

use std::path::PathBuf;
use std::time::Instant;

use hotspot_replay::Capture;
use hotspot_tui::input::{Action, handle_key};
use hotspot_tui::keymap::Key;
use hotspot_tui::model::Data;
use hotspot_tui::palette::{ColorMode, Palette};
use hotspot_tui::state::Sort;
use hotspot_tui::views::picker::{self, PickAction, Picker, ProcRow};
use hotspot_tui::{Mode, Options, State, View};
use ratatui::layout::Rect;

fn state(name: &str) -> State {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/captures")
        .join(format!("{name}.hsp"));
    let c = Capture::open(&path).expect("fixture capture opens");
    let opts = Options {
        mode: Mode::Replay,
        palette: Palette::new(ColorMode::None),
        links: None,
        symbol_dirs: Vec::new(),
        no_interpreter: false,
    };
    let mut s = State::new(Data::new(c), opts, Rect::new(0, 0, 120, 40));
    s.refresh();
    s
}

fn press(s: &mut State, keys: &[Key]) -> Action {
    let mut last = Action::None;
    for &k in keys {
        last = handle_key(s, k, Instant::now());
    }
    last
}

fn cursor_function(s: &State) -> String {
    s.flat_rows()[s.flat.pos.cursor].key.function.to_string()
}

#[test]
fn quit_from_anywhere() {
    let mut s = state("phased");
    assert_eq!(press(&mut s, &[Key::Char('q')]), Action::Quit);
    let mut s = state("phased");
    assert_eq!(
        press(&mut s, &[Key::Char('f'), Key::Down, Key::Ctrl('c')]),
        Action::Quit
    );
    // While typing a filter, q is text but Ctrl-C still quits.
    let mut s = state("phased");
    assert_eq!(
        press(&mut s, &[Key::Char('/'), Key::Char('q')]),
        Action::Redraw
    );
    assert_eq!(s.flat.filter, "q");
    assert_eq!(press(&mut s, &[Key::Ctrl('c')]), Action::Quit);
}

#[test]
fn views_switch_and_back_returns() {
    let mut s = state("phased");
    press(&mut s, &[Key::Char('f')]);
    assert_eq!(s.view, View::Flame);
    press(&mut s, &[Key::Char('t')]);
    assert_eq!(s.view, View::Stream);
    press(&mut s, &[Key::Esc]);
    assert_eq!(s.view, View::Flame);
    press(&mut s, &[Key::Esc]);
    assert_eq!(s.view, View::Flat);
    press(&mut s, &[Key::Tab, Key::Tab]);
    assert_eq!(s.view, View::Stream);
}

#[test]
fn moving_and_opening_callers() {
    let mut s = state("phased");
    press(&mut s, &[Key::Char('j'), Key::Down]);
    assert_eq!(s.flat.pos.cursor, 2);
    let f = cursor_function(&s);
    press(&mut s, &[Key::Enter]);
    assert_eq!(s.view, View::Callers);
    assert_eq!(
        s.callers.target.as_ref().map(|k| k.function.to_string()),
        Some(f)
    );
    // The leaf's caller is its work function; opening it walks on, back walks back.
    let caller = s.callers_row(0).map(|(k, _)| k.function.to_string());
    assert_eq!(caller.as_deref().map(|c| c.ends_with("_work")), Some(true));
    press(&mut s, &[Key::Char('l')]);
    assert_eq!(
        s.callers.target.as_ref().map(|k| k.function.to_string()),
        caller
    );
    press(&mut s, &[Key::Char('h'), Key::Left]);
    assert_eq!(s.view, View::Flat);
    press(&mut s, &[Key::Char('G')]);
    assert_eq!(s.flat.pos.cursor, s.flat.rows.len() - 1);
    press(&mut s, &[Key::Char('g')]);
    assert_eq!(s.flat.pos.cursor, 0);
}

#[test]
fn filter_and_sort() {
    let mut s = state("phased");
    press(
        &mut s,
        &[Key::Char('/'), Key::Char('p'), Key::Char('3'), Key::Enter],
    );
    assert!(!s.filtering);
    let names: Vec<String> = s
        .flat_rows()
        .iter()
        .map(|r| r.key.function.to_string())
        .collect();
    assert_eq!(names, ["p3_leaf", "p3_work"]);
    press(&mut s, &[Key::Char('/'), Key::Esc]);
    assert!(s.flat.filter.is_empty());
    press(&mut s, &[Key::Char('s')]);
    assert_eq!(s.flat.sort, Sort::Total);
    let totals: Vec<u64> = s.flat_rows().iter().map(|r| r.total_samples).collect();
    assert!(totals.windows(2).all(|w| w[0] >= w[1]));
    press(&mut s, &[Key::Char('s')]);
    assert_eq!(s.flat.sort, Sort::Name);
}

#[test]
fn flame_walk_zoom_and_back_out() {
    let mut s = state("phased");
    press(&mut s, &[Key::Char('f'), Key::Down, Key::Down, Key::Down]);
    let path: Vec<String> = s
        .flame
        .cursor
        .iter()
        .map(|k| k.function.to_string())
        .collect();
    assert_eq!(
        path.last().map(String::as_str),
        Some("phase_two"),
        "{path:?}"
    );
    press(&mut s, &[Key::Right]);
    assert_eq!(
        s.flame.cursor.last().map(|k| &*k.function),
        Some("phase_one")
    );
    press(&mut s, &[Key::Left, Key::Enter]);
    assert_eq!(s.flame.zoom.len(), 1);
    press(&mut s, &[Key::Down, Key::Down]);
    assert_eq!(s.flame.cursor.last().map(|k| &*k.function), Some("p2_leaf"));
    press(&mut s, &[Key::Up]);
    assert_eq!(s.flame.cursor.last().map(|k| &*k.function), Some("p2_work"));
    press(&mut s, &[Key::Esc]);
    assert!(s.flame.zoom.is_empty());
    assert_eq!(s.view, View::Flame);
    press(&mut s, &[Key::Esc]);
    assert_eq!(s.view, View::Flat);
}

#[test]
fn selection_keys_move_resize_and_reset() {
    let mut s = state("phased");
    let (a, b) = s.span().expect("samples");
    press(&mut s, &[Key::Char('-'), Key::Char('-'), Key::Char('-')]);
    let (s0, e0) = s.selection.expect("selection");
    assert_eq!(s0, a);
    assert!(e0 < b);
    press(&mut s, &[Key::Char(']')]);
    let (s1, e1) = s.selection.expect("selection");
    assert!(s1 > s0 && e1 - s1 == e0 - s0);
    press(&mut s, &[Key::Char('['), Key::Char('['), Key::Char('[')]);
    assert_eq!(s.selection.map(|x| x.0), Some(a));
    press(&mut s, &[Key::Char('+')]);
    assert!(s.selection.is_some_and(|(x, y)| y - x > e0 - s0));
    press(&mut s, &[Key::Char('a')]);
    assert_eq!(s.selection, None);
    assert_eq!(s.selected(), Some((a, b)));
}

#[test]
fn folds_are_cached_until_an_input_changes() {
    let mut s = state("phased");
    let n = s.cache.refolds;
    press(
        &mut s,
        &[
            Key::Down,
            Key::Down,
            Key::Char('f'),
            Key::Char('1'),
            Key::Char('s'),
        ],
    );
    assert_eq!(
        s.cache.refolds, n,
        "moving and switching views must not refold"
    );
    press(&mut s, &[Key::Char('K')]);
    assert_eq!(s.cache.refolds, n + 1);
    assert!(s.no_kernel);
    press(&mut s, &[Key::Char('-')]);
    assert_eq!(s.cache.refolds, n + 2);
}

#[test]
fn freeze_holds_the_fold_while_data_arrives() {
    let mut s = state("phased");
    press(&mut s, &[Key::Char(' ')]);
    assert!(s.frozen.is_some());
    let n = s.cache.refolds;
    s.data.generation += 1; // what new blocks do
    s.refresh();
    assert_eq!(s.cache.refolds, n);
    press(&mut s, &[Key::Char(' ')]);
    assert!(s.frozen.is_none());
    assert_eq!(s.cache.refolds, n + 1);
}

#[test]
fn kernel_toggle_hides_kernel_rows() {
    let mut s = state("phased");
    press(&mut s, &[Key::Char('K')]);
    assert!(s.flat_rows().iter().all(|r| !r.key.kind.is_kernel()));
    let total: u64 = s.fold().map_or(0, |f| f.total);
    assert_eq!(total as usize, s.data.samples() as usize);
}

#[test]
fn copy_link_needs_a_repository() {
    let mut s = state("phased");
    assert_eq!(press(&mut s, &[Key::Char('o')]), Action::Redraw);
    assert!(s.notice.as_ref().is_some_and(|(t, _)| t.contains("--repo")));
    s.opts.links = Some(
        hotspot_tui::links::link::LinkBase::new("acme/phased", Some("main"), vec![]).expect("link"),
    );
    // The fixture was built from an absolute path outside any repository: no link.
    let a = press(&mut s, &[Key::Char('o')]);
    let strip = s
        .flat_rows()
        .first()
        .and_then(|r| r.hottest.clone())
        .map(|(f, _)| f);
    if strip.as_deref().is_some_and(|f| f.starts_with('/')) {
        assert_eq!(a, Action::Redraw);
        let dir = strip
            .as_deref()
            .and_then(|f| f.rsplit_once('/'))
            .map(|(d, _)| d.to_string())
            .unwrap_or_default();
        s.opts.links = Some(
            hotspot_tui::links::link::LinkBase::new("acme/phased", Some("main"), vec![dir])
                .expect("link"),
        );
        let a = press(&mut s, &[Key::Char('o')]);
        let Action::Copy(url) = a else {
            panic!("expected a link, got {a:?}");
        };
        assert!(
            url.starts_with("https://github.com/acme/phased/blob/main/phased.c#L"),
            "{url}"
        );
    } else {
        assert!(matches!(a, Action::Copy(_)));
    }
}

#[test]
fn picker_filters_sorts_and_picks() {
    let rows = vec![
        ProcRow {
            pid: 10,
            name: "bash".into(),
            cpu: 0.0,
            cmdline: "-bash".into(),
        },
        ProcRow {
            pid: 20,
            name: "phased".into(),
            cpu: 90.0,
            cmdline: "./phased".into(),
        },
        ProcRow {
            pid: 30,
            name: "python3".into(),
            cpu: 5.0,
            cmdline: "python3 x.py".into(),
        },
    ];
    let mut p = Picker::new(rows, Rect::new(0, 0, 80, 20), Palette::new(ColorMode::None));
    assert_eq!(p.selected(), Some(20), "busiest first");
    picker::handle_key(&mut p, Key::Char('s'));
    assert_eq!(p.selected(), Some(10), "by pid");
    for k in [Key::Char('/'), Key::Char('p'), Key::Char('y'), Key::Enter] {
        picker::handle_key(&mut p, k);
    }
    assert_eq!(p.visible().len(), 1);
    assert_eq!(picker::handle_key(&mut p, Key::Enter), PickAction::Pick(30));
    assert_eq!(
        picker::handle_key(&mut p, Key::Char('r')),
        PickAction::Reload
    );
    assert_eq!(picker::handle_key(&mut p, Key::Char('q')), PickAction::Quit);
}
