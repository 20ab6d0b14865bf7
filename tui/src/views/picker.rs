//! The process table of `hotspot live` without a pid: processes with an executable,
//! their CPU use and command line, sortable and filterable; picking one starts profiling.
//! The rows are injected (read from /proc by the binary), so this is testable anywhere.

use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{KeyEvent, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};

use hotspot_replay::sanitize::display;

use crate::keymap::{self, Cmd, Key, Scope};
use crate::palette::Palette;
use crate::state::ListPos;
use crate::views::draw::put;

/// One process.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcRow {
    pub pid: u32,
    pub name: String,
    /// CPU use since the previous reading, in % of one CPU.
    pub cpu: f32,
    pub cmdline: String,
}

/// Column the table is sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PickSort {
    /// Busiest first.
    Cpu,
    Pid,
    Name,
    Command,
}

/// What the picker loop should do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PickAction {
    None,
    Redraw,
    Quit,
    Reload,
    Pick(u32),
}

/// The table's state.
#[derive(Debug, Clone)]
pub struct Picker {
    pub rows: Vec<ProcRow>,
    pub filter: String,
    pub filtering: bool,
    pub sort: PickSort,
    pub pos: ListPos,
    pub size: Rect,
    pub palette: Palette,
    pub help: bool,
}

impl Picker {
    pub fn new(rows: Vec<ProcRow>, size: Rect, palette: Palette) -> Picker {
        let mut p = Picker {
            rows: Vec::new(),
            filter: String::new(),
            filtering: false,
            sort: PickSort::Cpu,
            pos: ListPos::default(),
            size,
            palette,
            help: false,
        };
        p.set_rows(rows);
        p
    }

    /// Replaces the rows, keeping the cursor on the same process.
    pub fn set_rows(&mut self, rows: Vec<ProcRow>) {
        let keep = self.selected();
        self.rows = rows;
        if let Some(pid) = keep
            && let Some(i) = self.visible().iter().position(|r| r.pid == pid)
        {
            self.pos.cursor = i;
        }
        self.clamp();
    }

    fn list_height(&self) -> usize {
        usize::from(self.size.height.saturating_sub(4))
    }

    fn clamp(&mut self) {
        let n = self.visible().len();
        let h = self.list_height();
        self.pos.clamp(n, h);
    }

    /// Rows matching the filter (pid, name or command line), in the sort order.
    pub fn visible(&self) -> Vec<&ProcRow> {
        let needle = self.filter.to_lowercase();
        let mut v: Vec<&ProcRow> = self
            .rows
            .iter()
            .filter(|r| {
                needle.is_empty()
                    || r.name.to_lowercase().contains(&needle)
                    || r.cmdline.to_lowercase().contains(&needle)
                    || r.pid.to_string().starts_with(&needle)
            })
            .collect();
        match self.sort {
            PickSort::Cpu => v.sort_by(|a, b| b.cpu.total_cmp(&a.cpu).then(a.pid.cmp(&b.pid))),
            PickSort::Pid => v.sort_by_key(|r| r.pid),
            PickSort::Name => v.sort_by(|a, b| a.name.cmp(&b.name).then(a.pid.cmp(&b.pid))),
            PickSort::Command => {
                v.sort_by(|a, b| a.cmdline.cmp(&b.cmdline).then(a.pid.cmp(&b.pid)))
            }
        }
        v
    }

    /// The pid under the cursor.
    pub fn selected(&self) -> Option<u32> {
        self.visible().get(self.pos.cursor).map(|r| r.pid)
    }

    fn scopes(&self) -> Vec<Scope> {
        if self.filtering {
            vec![Scope::Filter]
        } else {
            vec![Scope::Picker, Scope::Nav]
        }
    }
}

/// Handles a key press.
pub fn handle(p: &mut Picker, ev: KeyEvent) -> PickAction {
    let Some(key) = Key::from_event(&ev) else {
        return PickAction::None;
    };
    handle_key(p, key)
}

/// Handles a key of the table's kind.
pub fn handle_key(p: &mut Picker, key: Key) -> PickAction {
    if p.help {
        p.help = false;
        return PickAction::Redraw;
    }
    let cmd = lookup_cmd(p, key);
    let page = p.list_height().max(2) as isize - 1;
    let move_by = |p: &mut Picker, by: isize| {
        let n = p.visible().len();
        p.pos.cursor = (p.pos.cursor as isize + by).clamp(0, n.saturating_sub(1) as isize) as usize;
    };
    match cmd {
        Some(Cmd::FilterDone) => p.filtering = false,
        Some(Cmd::FilterClear) => {
            p.filter.clear();
            p.filtering = false;
        }
        Some(Cmd::FilterErase) => {
            p.filter.pop();
        }
        None if p.filtering => match key {
            Key::Char(c) => {
                p.filter.push(c);
                p.pos = ListPos::default();
            }
            Key::Ctrl('c') => return PickAction::Quit,
            _ => return PickAction::None,
        },
        Some(Cmd::Quit) => return PickAction::Quit,
        Some(Cmd::Help) => p.help = true,
        Some(Cmd::Open) => {
            if let Some(pid) = p.selected() {
                return PickAction::Pick(pid);
            }
        }
        Some(Cmd::Back) => {
            if !p.filter.is_empty() {
                p.filter.clear();
            }
        }
        Some(Cmd::Up) => move_by(p, -1),
        Some(Cmd::Down) => move_by(p, 1),
        Some(Cmd::PageUp) => move_by(p, -page),
        Some(Cmd::PageDown) => move_by(p, page),
        Some(Cmd::Top) => move_by(p, isize::MIN / 2),
        Some(Cmd::Bottom) => move_by(p, isize::MAX / 2),
        Some(Cmd::Filter) => p.filtering = true,
        Some(Cmd::Sort) => {
            p.sort = match p.sort {
                PickSort::Cpu => PickSort::Pid,
                PickSort::Pid => PickSort::Name,
                PickSort::Name => PickSort::Command,
                PickSort::Command => PickSort::Cpu,
            };
        }
        Some(Cmd::Reload) => return PickAction::Reload,
        _ => return PickAction::None,
    }
    p.clamp();
    PickAction::Redraw
}

fn lookup_cmd(p: &Picker, key: Key) -> Option<Cmd> {
    keymap::lookup(&p.scopes(), key)
}

/// Handles a mouse event: click selects, click again picks, wheel scrolls.
pub fn handle_mouse(p: &mut Picker, ev: MouseEvent) -> PickAction {
    match ev.kind {
        MouseEventKind::ScrollUp => handle_key(p, Key::Up),
        MouseEventKind::ScrollDown => handle_key(p, Key::Down),
        MouseEventKind::Down(MouseButton::Right) => handle_key(p, Key::Esc),
        MouseEventKind::Down(MouseButton::Left) => {
            let Some(row) = ev.row.checked_sub(2) else {
                return PickAction::None;
            };
            let i = usize::from(row) + p.pos.offset;
            if i >= p.visible().len() || usize::from(row) >= p.list_height() {
                return PickAction::None;
            }
            if i == p.pos.cursor {
                handle_key(p, Key::Enter)
            } else {
                p.pos.cursor = i;
                PickAction::Redraw
            }
        }
        _ => PickAction::None,
    }
}

/// Draws the table over the whole buffer.
pub fn render(p: &Picker, buf: &mut Buffer) {
    let area = buf.area;
    let pal = p.palette;
    let rows = p.visible();
    let sort = match p.sort {
        PickSort::Cpu => "cpu",
        PickSort::Pid => "pid",
        PickSort::Name => "name",
        PickSort::Command => "command",
    };
    let mut x = put(
        buf,
        area.x,
        area.y,
        area.width,
        " hotspot ",
        pal.title().add_modifier(Modifier::REVERSED),
    );
    x = put(
        buf,
        x,
        area.y,
        area.width.saturating_sub(x),
        &format!(
            " live: pick a process to profile · {} of {} processes · sorted by {sort}",
            rows.len(),
            p.rows.len()
        ),
        pal.title(),
    );
    if p.filtering || !p.filter.is_empty() {
        let cursor = if p.filtering { "▏" } else { "" };
        put(
            buf,
            x,
            area.y,
            area.width.saturating_sub(x),
            &format!("  /{}{cursor}", display(&p.filter)),
            pal.warn(),
        );
    }
    put(
        buf,
        area.x,
        area.y + 1,
        area.width,
        &format!("{:>8} {:<16} {:>6}  {}", "pid", "name", "cpu%", "command"),
        pal.dim(),
    );
    let height = p.list_height();
    for (i, r) in rows.iter().enumerate().skip(p.pos.offset).take(height) {
        let y = area.y + 2 + (i - p.pos.offset) as u16;
        let style = if i == p.pos.cursor {
            pal.cursor()
        } else {
            Style::new()
        };
        buf.set_style(Rect::new(area.x, y, area.width, 1), style);
        let name: String = display(&r.name).chars().take(16).collect();
        put(
            buf,
            area.x,
            y,
            area.width,
            &format!(
                "{:>8} {:<16} {:>6.1}  {}",
                r.pid,
                name,
                r.cpu,
                display(&r.cmdline)
            ),
            style,
        );
    }
    let y = area.y + area.height.saturating_sub(1);
    let mut x = area.x;
    let end = area.x + area.width;
    if p.filtering {
        x = put(buf, x, y, area.width, " type to filter ", pal.warn());
    }
    for (key, word) in keymap::hints(&p.scopes()) {
        if x + 2 >= end {
            break;
        }
        x = put(buf, x + 1, y, end - x - 1, &key, pal.title());
        x = put(buf, x + 1, y, end.saturating_sub(x + 1), word, pal.dim());
    }
    if p.help {
        let lines = keymap::help(&[Scope::Picker, Scope::Nav]);
        for (i, (k, what)) in lines.iter().enumerate() {
            let y = area.y + 3 + i as u16;
            if y + 1 >= area.y + area.height {
                break;
            }
            buf.set_style(
                Rect::new(area.x + 4, y, 60.min(area.width.saturating_sub(4)), 1),
                pal.cursor(),
            );
            let x = put(buf, area.x + 4, y, 16, &format!(" {k:<14}"), pal.cursor());
            put(buf, x, y, 44, what, pal.cursor());
        }
    }
}
