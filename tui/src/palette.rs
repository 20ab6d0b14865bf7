//! Colours: 24-bit where the terminal says it has them, the 16 ANSI colours otherwise,
//! none under `NO_COLOR`. A function keeps its colour across views and refolds because
//! the colour is a hash of its name.

use hotspot_format::ThreadState;
use ratatui::style::{Color, Modifier, Style};

use hotspot_replay::metric;

/// What the terminal can show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorMode {
    /// 24-bit RGB (`COLORTERM=truecolor` or `24bit`).
    True,
    /// The 16 ANSI colours.
    Ansi,
    /// No colour at all (`NO_COLOR` set): structure is shown with reverse video.
    None,
}

impl ColorMode {
    /// Decides from the environment (passed in, so tests need not touch it).
    pub fn detect(var: impl Fn(&str) -> Option<String>) -> ColorMode {
        if var("NO_COLOR").is_some_and(|v| !v.is_empty()) {
            return ColorMode::None;
        }
        match var("COLORTERM").as_deref() {
            Some("truecolor" | "24bit") => ColorMode::True,
            _ => ColorMode::Ansi,
        }
    }
}

/// FNV-1a: stable across runs and Rust versions, so colours are too.
fn hash(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Styles for everything the views colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Palette {
    pub mode: ColorMode,
}

const ANSI_USER: [Color; 5] = [
    Color::Red,
    Color::LightRed,
    Color::Yellow,
    Color::LightYellow,
    Color::Magenta,
];
const ANSI_KERNEL: [Color; 3] = [Color::Blue, Color::Cyan, Color::LightBlue];
/// Object (module) colours, in legend order; the kernel has its own.
const MODULE_RGB: [(u8, u8, u8); 6] = [
    (230, 159, 0),
    (0, 158, 115),
    (204, 121, 167),
    (240, 228, 66),
    (213, 94, 0),
    (153, 153, 153),
];
const MODULE_ANSI: [Color; 6] = [
    Color::Yellow,
    Color::Green,
    Color::Magenta,
    Color::LightYellow,
    Color::Red,
    Color::Gray,
];
const KERNEL_RGB: (u8, u8, u8) = (86, 180, 233);
/// Off-CPU states (S, D, R): greens, purple and grey, hues the CPU palette (warm user
/// code, blue kernel) never takes, so blocked time never passes for running code.
const STATE_RGB: [(u8, u8, u8); 3] = [(77, 175, 74), (152, 78, 163), (160, 160, 160)];
const STATE_ANSI: [Color; 3] = [Color::Green, Color::LightMagenta, Color::Gray];

impl Palette {
    pub fn new(mode: ColorMode) -> Palette {
        Palette { mode }
    }

    fn style_bg(&self, bg: Color) -> Style {
        match self.mode {
            ColorMode::None => Style::new().add_modifier(Modifier::REVERSED),
            _ => Style::new().bg(bg).fg(Color::Black),
        }
    }

    /// Background colour of a function's bar (flame, stream, timeline): warm hues for
    /// user code, blues for the kernel.
    pub fn function_color(&self, name: &str, kernel: bool) -> Color {
        let h = hash(name);
        let v = |shift: u32| ((h >> shift) & 0xff) as f64 / 255.0;
        match (self.mode, kernel) {
            (ColorMode::True, false) => Color::Rgb(
                (205.0 + 50.0 * v(0)) as u8,
                (60.0 + 170.0 * v(8)) as u8,
                (40.0 * v(16)) as u8,
            ),
            (ColorMode::True, true) => Color::Rgb(
                (40.0 + 60.0 * v(0)) as u8,
                (120.0 + 80.0 * v(8)) as u8,
                (200.0 + 55.0 * v(16)) as u8,
            ),
            (_, false) => ANSI_USER[(h % ANSI_USER.len() as u64) as usize],
            (_, true) => ANSI_KERNEL[(h % ANSI_KERNEL.len() as u64) as usize],
        }
    }

    /// Style of a function's bar.
    pub fn function(&self, name: &str, kernel: bool) -> Style {
        self.style_bg(self.function_color(name, kernel))
    }

    /// Colour of an off-CPU state (its leaf frames, its lane time).
    pub fn state_color(&self, state: ThreadState) -> Color {
        let i = crate::model::state_index(state);
        match self.mode {
            ColorMode::True => {
                let (r, g, b) = STATE_RGB[i];
                Color::Rgb(r, g, b)
            }
            _ => STATE_ANSI[i],
        }
    }

    /// Colour of a frame's bar: its state's for the off-CPU state frames
    /// ([`metric::state_frame`]), its function's otherwise.
    pub fn frame_color(&self, module: &str, name: &str, kernel: bool) -> Color {
        match metric::state_of_frame(module, name) {
            Some(s) => self.state_color(s),
            None => self.function_color(name, kernel),
        }
    }

    /// Style of a frame's bar ([`Palette::frame_color`]).
    pub fn frame(&self, module: &str, name: &str, kernel: bool) -> Style {
        self.style_bg(self.frame_color(module, name, kernel))
    }

    /// Text in an off-CPU state's colour.
    pub fn state(&self, state: ThreadState) -> Style {
        match self.mode {
            ColorMode::None => Style::new(),
            _ => Style::new().fg(self.state_color(state)),
        }
    }

    /// Colour of the n-th object in the legend (the kernel always the same).
    pub fn module(&self, n: usize, kernel: bool) -> Style {
        let c = match (self.mode, kernel) {
            (ColorMode::None, _) => return Style::new(),
            (ColorMode::True, true) => Color::Rgb(KERNEL_RGB.0, KERNEL_RGB.1, KERNEL_RGB.2),
            (_, true) => Color::Blue,
            (ColorMode::True, false) => {
                let (r, g, b) = MODULE_RGB[n % MODULE_RGB.len()];
                Color::Rgb(r, g, b)
            }
            (ColorMode::Ansi, false) => MODULE_ANSI[n % MODULE_ANSI.len()],
        };
        Style::new().fg(c)
    }

    /// Colour of the n-th thread (timeline by thread).
    pub fn thread(&self, n: usize) -> Style {
        match self.mode {
            ColorMode::None => Style::new(),
            ColorMode::True => {
                let (r, g, b) = MODULE_RGB[n % MODULE_RGB.len()];
                Style::new().fg(Color::Rgb(r, g, b))
            }
            ColorMode::Ansi => Style::new().fg(MODULE_ANSI[n % MODULE_ANSI.len()]),
        }
    }

    /// The heat bar of the flat view.
    pub fn heat(&self, frac: f64) -> Style {
        match self.mode {
            ColorMode::None => Style::new(),
            ColorMode::True => {
                let f = frac.clamp(0.0, 1.0);
                Style::new().fg(Color::Rgb(
                    (200.0 + 55.0 * f) as u8,
                    (180.0 * (1.0 - f)) as u8,
                    40,
                ))
            }
            ColorMode::Ansi if frac > 0.2 => Style::new().fg(Color::Red),
            ColorMode::Ansi => Style::new().fg(Color::Yellow),
        }
    }

    /// The cursor row / focused frame.
    pub fn cursor(&self) -> Style {
        match self.mode {
            ColorMode::None => Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD),
            ColorMode::True => Style::new()
                .bg(Color::Rgb(60, 60, 90))
                .add_modifier(Modifier::BOLD),
            ColorMode::Ansi => Style::new()
                .bg(Color::DarkGray)
                .add_modifier(Modifier::BOLD),
        }
    }

    /// The time selection on the timeline.
    pub fn selected(&self) -> Style {
        match self.mode {
            ColorMode::None => Style::new().add_modifier(Modifier::UNDERLINED),
            ColorMode::True => Style::new().bg(Color::Rgb(50, 50, 70)),
            ColorMode::Ansi => Style::new().bg(Color::DarkGray),
        }
    }

    /// Dim text (hints, units).
    pub fn dim(&self) -> Style {
        match self.mode {
            ColorMode::None => Style::new(),
            _ => Style::new().fg(Color::DarkGray),
        }
    }

    /// Notices (truncated capture, pending symbols).
    pub fn warn(&self) -> Style {
        match self.mode {
            ColorMode::None => Style::new().add_modifier(Modifier::BOLD),
            _ => Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
        }
    }

    /// Titles and the active tab.
    pub fn title(&self) -> Style {
        Style::new().add_modifier(Modifier::BOLD)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_modes_from_the_environment() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(ColorMode::detect(env(&[])), ColorMode::Ansi);
        assert_eq!(
            ColorMode::detect(env(&[("COLORTERM", "truecolor")])),
            ColorMode::True
        );
        assert_eq!(
            ColorMode::detect(env(&[("COLORTERM", "24bit"), ("NO_COLOR", "1")])),
            ColorMode::None
        );
    }

    #[test]
    fn function_colours_are_stable_and_kernel_is_blue() {
        let p = Palette::new(ColorMode::True);
        assert_eq!(
            p.function_color("main", false),
            p.function_color("main", false)
        );
        let Color::Rgb(r, _, b) = p.function_color("vfs_write", true) else {
            panic!("rgb expected");
        };
        assert!(b > r);
    }

    #[test]
    fn state_frames_have_their_own_colours_apart_from_code() {
        for mode in [ColorMode::True, ColorMode::Ansi] {
            let p = Palette::new(mode);
            let colours: Vec<Color> = ThreadState::ALL
                .into_iter()
                .map(|s| p.frame_color(metric::OFF_CPU_MODULE, metric::state_frame(s), false))
                .collect();
            assert_eq!(colours[0], p.state_color(ThreadState::Sleeping));
            assert!(
                colours[0] != colours[1] && colours[1] != colours[2] && colours[0] != colours[2]
            );
            for c in &colours {
                if mode == ColorMode::Ansi {
                    assert!(!ANSI_USER.contains(c) && !ANSI_KERNEL.contains(c), "{c:?}");
                }
            }
            // A function that merely has the name, outside the module, is code.
            let name = metric::state_frame(ThreadState::Sleeping);
            assert_eq!(
                p.frame_color("libc.so.6", name, false),
                p.function_color(name, false)
            );
        }
    }
}
