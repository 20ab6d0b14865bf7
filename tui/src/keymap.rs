//! The key table: one list of bindings drives key handling, the footer hints and the
//! `?` help, so what the screen says is what the keys do.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// A key as the table names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Key {
    Char(char),
    Ctrl(char),
    Enter,
    Esc,
    Left,
    Right,
    Up,
    Down,
    PageUp,
    PageDown,
    Home,
    End,
    Tab,
    Backspace,
}

impl Key {
    /// The table's key for a terminal key press (`None` for releases and keys no binding
    /// can name).
    pub fn from_event(ev: &KeyEvent) -> Option<Key> {
        if ev.kind == KeyEventKind::Release {
            return None;
        }
        let ctrl = ev.modifiers.contains(KeyModifiers::CONTROL);
        Some(match ev.code {
            KeyCode::Char(c) if ctrl => Key::Ctrl(c.to_ascii_lowercase()),
            KeyCode::Char(c) => Key::Char(c),
            KeyCode::Enter => Key::Enter,
            KeyCode::Esc => Key::Esc,
            KeyCode::Left => Key::Left,
            KeyCode::Right => Key::Right,
            KeyCode::Up => Key::Up,
            KeyCode::Down => Key::Down,
            KeyCode::PageUp => Key::PageUp,
            KeyCode::PageDown => Key::PageDown,
            KeyCode::Home => Key::Home,
            KeyCode::End => Key::End,
            KeyCode::Tab => Key::Tab,
            KeyCode::Backspace => Key::Backspace,
            _ => return None,
        })
    }

    /// How the key is written on screen.
    pub fn label(self) -> String {
        match self {
            Key::Char(' ') => "space".into(),
            Key::Char(c) => c.to_string(),
            Key::Ctrl(c) => format!("^{}", c.to_ascii_uppercase()),
            Key::Enter => "⏎".into(),
            Key::Esc => "esc".into(),
            Key::Left => "←".into(),
            Key::Right => "→".into(),
            Key::Up => "↑".into(),
            Key::Down => "↓".into(),
            Key::PageUp => "PgUp".into(),
            Key::PageDown => "PgDn".into(),
            Key::Home => "Home".into(),
            Key::End => "End".into(),
            Key::Tab => "tab".into(),
            Key::Backspace => "⌫".into(),
        }
    }
}

/// Where a binding applies; lookups try the active scopes in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Moving, opening, going back, quitting: every screen.
    Nav,
    /// The profile views (not the process table).
    Views,
    /// The profile views of a capture holding Python frames.
    Python,
    /// The flame graph's keyboard walk (before `Nav`, whose arrows it takes over).
    Flame,
    /// Typing a `/` filter.
    Filter,
    /// The process table of `hotspot live`.
    Picker,
    /// Comparing two captures (`hotspot view BASE NEW`, `live --base`).
    Diff,
}

/// What a key does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmd {
    Quit,
    Help,
    Open,
    Back,
    Up,
    Down,
    PageUp,
    PageDown,
    Top,
    Bottom,
    ShowFlat,
    ShowFlame,
    ShowStream,
    ShowThreads,
    NextView,
    CopyLink,
    Reset,
    ToggleKernel,
    ToggleInterpreter,
    Metric,
    HideIdle,
    Freeze,
    Filter,
    Sort,
    SelectLeft,
    SelectRight,
    SelectShrink,
    SelectGrow,
    SelectAll,
    Follow,
    TimelineColour,
    FlamePrev,
    FlameNext,
    FlameParent,
    FlameChild,
    FilterDone,
    FilterClear,
    FilterErase,
    Reload,
    DiffSide,
    DiffScale,
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub struct Binding {
    pub scope: Scope,
    pub keys: &'static [Key],
    pub cmd: Cmd,
    /// Short word for the footer ("" keeps it out of the footer).
    pub hint: &'static str,
    /// Line for the `?` help.
    pub help: &'static str,
}

const fn b(
    scope: Scope,
    keys: &'static [Key],
    cmd: Cmd,
    hint: &'static str,
    help: &'static str,
) -> Binding {
    Binding {
        scope,
        keys,
        cmd,
        hint,
        help,
    }
}

use Key::*;
use Scope::{Diff as D, Filter as F, Flame as Fl, Nav as N, Picker as P, Python as Py, Views as V};

/// Every binding, in the order hints and help list them.
pub const KEYMAP: &[Binding] = &[
    b(
        Fl,
        &[Left, Char('h')],
        Cmd::FlamePrev,
        "",
        "flame: frame to the left",
    ),
    b(
        Fl,
        &[Right, Char('l')],
        Cmd::FlameNext,
        "",
        "flame: frame to the right",
    ),
    b(
        Fl,
        &[Up, Char('k')],
        Cmd::FlameParent,
        "",
        "flame: parent (caller)",
    ),
    b(
        Fl,
        &[Down, Char('j')],
        Cmd::FlameChild,
        "",
        "flame: hottest child (callee)",
    ),
    b(
        Fl,
        &[Enter],
        Cmd::Open,
        "zoom",
        "flame: zoom into the frame",
    ),
    b(
        Fl,
        &[Esc],
        Cmd::Back,
        "unzoom",
        "flame: zoom out (or go back)",
    ),
    b(F, &[Enter], Cmd::FilterDone, "done", "keep the filter"),
    b(F, &[Esc], Cmd::FilterClear, "clear", "clear the filter"),
    b(F, &[Backspace], Cmd::FilterErase, "", "erase a character"),
    b(N, &[Char('q'), Ctrl('c')], Cmd::Quit, "quit", "quit"),
    b(N, &[Char('?')], Cmd::Help, "keys", "list the keys"),
    b(
        N,
        &[Right, Char('l'), Enter],
        Cmd::Open,
        "open",
        "open: callers/callees, zoom, pick",
    ),
    b(N, &[Left, Char('h'), Esc], Cmd::Back, "back", "go back"),
    b(N, &[Up, Char('k')], Cmd::Up, "", "move up"),
    b(N, &[Down, Char('j')], Cmd::Down, "", "move down"),
    b(N, &[PageUp], Cmd::PageUp, "", "page up"),
    b(N, &[PageDown], Cmd::PageDown, "", "page down"),
    b(N, &[Char('g'), Home], Cmd::Top, "", "jump to the top"),
    b(N, &[Char('G'), End], Cmd::Bottom, "", "jump to the bottom"),
    b(
        N,
        &[Char('/')],
        Cmd::Filter,
        "filter",
        "filter rows by name",
    ),
    b(
        N,
        &[Char('s')],
        Cmd::Sort,
        "sort",
        "sort by self, total or name (column)",
    ),
    b(
        P,
        &[Char('r')],
        Cmd::Reload,
        "reload",
        "reload the process table",
    ),
    b(V, &[Char('1')], Cmd::ShowFlat, "", "flat profile"),
    b(
        V,
        &[Char('f'), Char('2')],
        Cmd::ShowFlame,
        "flame",
        "flame graph (icicle)",
    ),
    b(
        V,
        &[Char('t'), Char('3')],
        Cmd::ShowStream,
        "stream",
        "stream: dominant stack over time",
    ),
    b(
        V,
        &[Char('T'), Char('4')],
        Cmd::ShowThreads,
        "threads",
        "threads to include",
    ),
    b(V, &[Tab], Cmd::NextView, "", "next view"),
    b(
        V,
        &[Char('[')],
        Cmd::SelectLeft,
        "",
        "move the time selection left",
    ),
    b(
        V,
        &[Char(']')],
        Cmd::SelectRight,
        "",
        "move the time selection right",
    ),
    b(
        V,
        &[Char('-')],
        Cmd::SelectShrink,
        "",
        "shrink the time selection",
    ),
    b(
        V,
        &[Char('+'), Char('=')],
        Cmd::SelectGrow,
        "",
        "grow the time selection",
    ),
    b(
        V,
        &[Char('a')],
        Cmd::SelectAll,
        "all",
        "select the whole capture",
    ),
    b(
        V,
        &[Char('F')],
        Cmd::Follow,
        "",
        "follow the last 5/10/30 s (live)",
    ),
    b(
        V,
        &[Char('K')],
        Cmd::ToggleKernel,
        "kernel",
        "hide or show kernel frames",
    ),
    b(
        V,
        &[Char('m')],
        Cmd::Metric,
        "metric",
        "weigh by CPU, off-CPU or wall-clock time",
    ),
    b(
        V,
        &[Char('i')],
        Cmd::HideIdle,
        "idle",
        "hide or show idle threads (<1% on a CPU)",
    ),
    b(
        V,
        &[Char(' ')],
        Cmd::Freeze,
        "",
        "freeze the view (samples keep arriving)",
    ),
    b(
        V,
        &[Char('o')],
        Cmd::CopyLink,
        "",
        "copy the source link (OSC 52)",
    ),
    b(
        V,
        &[Char('r')],
        Cmd::Reset,
        "",
        "reset zoom, selection and thread filter",
    ),
    b(
        V,
        &[Char('c')],
        Cmd::TimelineColour,
        "",
        "timeline: colour by function or thread",
    ),
    b(
        Py,
        &[Char('P')],
        Cmd::ToggleInterpreter,
        "interp",
        "hide or show Python interpreter frames",
    ),
    b(
        D,
        &[Char('b')],
        Cmd::DiffSide,
        "base/new",
        "diff: [ ] - + a move the base's or new's",
    ),
    b(
        D,
        &[Char('x')],
        Cmd::DiffScale,
        "scale",
        "diff: Δ as share points or time per second",
    ),
];

/// The command bound to `key` in the first of `scopes` that binds it.
pub fn lookup(scopes: &[Scope], key: Key) -> Option<Cmd> {
    scopes.iter().find_map(|&scope| {
        KEYMAP
            .iter()
            .find(|b| b.scope == scope && b.keys.contains(&key))
            .map(|b| b.cmd)
    })
}

/// Footer hints for the active scopes: `key word` pairs, first binding of a command wins.
pub fn hints(scopes: &[Scope]) -> Vec<(String, &'static str)> {
    let mut seen: Vec<Cmd> = Vec::new();
    let mut out = Vec::new();
    for &scope in scopes {
        for b in KEYMAP.iter().filter(|b| b.scope == scope) {
            if seen.contains(&b.cmd) {
                continue;
            }
            seen.push(b.cmd);
            if !b.hint.is_empty() {
                out.push((b.keys[0].label(), b.hint));
            }
        }
    }
    out
}

/// Help lines (`keys`, `what`) for the scopes, in table order.
pub fn help(scopes: &[Scope]) -> Vec<(String, &'static str)> {
    scopes
        .iter()
        .flat_map(|&scope| KEYMAP.iter().filter(move |b| b.scope == scope))
        .map(|b| {
            let keys: Vec<String> = b.keys.iter().map(|k| k.label()).collect();
            (keys.join(" "), b.help)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_are_tried_in_order() {
        assert_eq!(
            lookup(&[Scope::Flame, Scope::Nav], Key::Left),
            Some(Cmd::FlamePrev)
        );
        assert_eq!(lookup(&[Scope::Nav], Key::Left), Some(Cmd::Back));
        assert_eq!(
            lookup(&[Scope::Nav, Scope::Views], Key::Char(']')),
            Some(Cmd::SelectRight)
        );
        assert_eq!(
            lookup(&[Scope::Nav, Scope::Views], Key::Char('[')),
            Some(Cmd::SelectLeft)
        );
        assert_eq!(
            lookup(&[Scope::Nav, Scope::Views], Key::Char('+')),
            Some(Cmd::SelectGrow)
        );
        assert_eq!(
            lookup(&[Scope::Nav, Scope::Views], Key::Char('-')),
            Some(Cmd::SelectShrink)
        );
        assert_eq!(lookup(&[Scope::Nav], Key::Ctrl('c')), Some(Cmd::Quit));
        assert_eq!(
            lookup(&[Scope::Picker, Scope::Nav], Key::Char('r')),
            Some(Cmd::Reload)
        );
        assert_eq!(
            lookup(&[Scope::Nav, Scope::Views], Key::Char('r')),
            Some(Cmd::Reset)
        );
    }

    #[test]
    fn every_command_of_a_scope_is_reachable() {
        for b in KEYMAP {
            let found = b.keys.iter().any(|&k| lookup(&[b.scope], k) == Some(b.cmd));
            assert!(found, "{:?} is shadowed in {:?}", b.cmd, b.scope);
        }
    }

    #[test]
    fn hints_and_help_come_from_the_table() {
        let h = hints(&[Scope::Nav, Scope::Views]);
        assert!(h.contains(&("q".to_string(), "quit")));
        assert!(h.contains(&("f".to_string(), "flame")));
        let help = help(&[Scope::Views]);
        assert!(help.iter().any(|(k, _)| k == "+ ="));
    }
}
