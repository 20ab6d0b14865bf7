//! Colours: 24-bit where the terminal says it has them, the 16 ANSI colours otherwise,
//! none under `NO_COLOR`. A frame's colour family is its kind's ([`FrameKind`]); within
//! it, a function keeps its colour across views and refolds because the colour is a hash
//! of its name.

use hotspot_format::ThreadState;
use hotspot_replay::kind::FrameKind;
use ratatui::style::{Color, Modifier, Style};

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
const ANSI_PYTHON: [Color; 2] = [Color::LightGreen, Color::LightCyan];
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

    /// Background colour of a frame's bar (flame, stream, timeline), by its kind: warm
    /// hues for code of a process (compiled ahead or at run time, and the markers among
    /// it), duller tans within them for a Python interpreter's own code, blues for the
    /// kernel, greens and cyans for Python functions, the state's own colour for time off
    /// the CPU; within a kind, by a hash of the name.
    pub fn frame_color(&self, kind: FrameKind, name: &str) -> Color {
        let h = hash(name);
        let v = |shift: u32| ((h >> shift) & 0xff) as f64 / 255.0;
        let true_color = self.mode == ColorMode::True;
        let pick = |ansi: &[Color]| ansi[(h % ansi.len() as u64) as usize];
        match kind {
            FrameKind::User | FrameKind::Jit | FrameKind::Marker if true_color => Color::Rgb(
                (205.0 + 50.0 * v(0)) as u8,
                (60.0 + 170.0 * v(8)) as u8,
                (40.0 * v(16)) as u8,
            ),
            FrameKind::Interpreter if true_color => Color::Rgb(
                (170.0 + 40.0 * v(0)) as u8,
                (120.0 + 40.0 * v(8)) as u8,
                (70.0 + 40.0 * v(16)) as u8,
            ),
            FrameKind::User | FrameKind::Jit | FrameKind::Marker | FrameKind::Interpreter => {
                pick(&ANSI_USER)
            }
            FrameKind::Kernel if true_color => Color::Rgb(
                (40.0 + 60.0 * v(0)) as u8,
                (120.0 + 80.0 * v(8)) as u8,
                (200.0 + 55.0 * v(16)) as u8,
            ),
            FrameKind::Kernel => pick(&ANSI_KERNEL),
            FrameKind::Python if true_color => Color::Rgb(
                (20.0 + 50.0 * v(0)) as u8,
                (190.0 + 50.0 * v(8)) as u8,
                (120.0 + 60.0 * v(16)) as u8,
            ),
            FrameKind::Python => pick(&ANSI_PYTHON),
            FrameKind::OffCpu(state) => self.state_color(state),
        }
    }

    /// Style of a frame's bar ([`Palette::frame_color`]).
    pub fn frame(&self, kind: FrameKind, name: &str) -> Style {
        self.style_bg(self.frame_color(kind, name))
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
    use hotspot_replay::metric;

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
    fn frame_colours_are_stable_and_each_kind_keeps_its_family() {
        let p = Palette::new(ColorMode::True);
        for k in FrameKind::ALL {
            assert_eq!(p.frame_color(k, "main"), p.frame_color(k, "main"), "{k:?}");
        }
        let Color::Rgb(r, _, b) = p.frame_color(FrameKind::Kernel, "vfs_write") else {
            panic!("rgb expected");
        };
        assert!(b > r, "the kernel is blue");
        let Color::Rgb(r, g, b) = p.frame_color(FrameKind::Python, "Worker.run") else {
            panic!("rgb expected");
        };
        assert!(g > b && b > r, "Python functions are green-cyan");
        let Color::Rgb(r, g, b) = p.frame_color(FrameKind::Interpreter, "_PyEval_Vector") else {
            panic!("rgb expected");
        };
        assert!(r > g && g > b, "the interpreter's own code is a warm tan");
        let ansi = Palette::new(ColorMode::Ansi);
        for name in [
            "main",
            "vfs_write",
            "[truncated: stack larger than --stack-cap]",
            "x",
        ] {
            // Code of a process, compiled ahead or at run time, and its markers: one family.
            let user = p.frame_color(FrameKind::User, name);
            assert_eq!(p.frame_color(FrameKind::Jit, name), user);
            assert_eq!(p.frame_color(FrameKind::Marker, name), user);
            for (kind, family) in [
                (FrameKind::User, &ANSI_USER[..]),
                (FrameKind::Kernel, &ANSI_KERNEL[..]),
                (FrameKind::Python, &ANSI_PYTHON[..]),
                (FrameKind::Interpreter, &ANSI_USER[..]),
            ] {
                assert!(family.contains(&ansi.frame_color(kind, name)), "{kind:?}");
            }
        }
        for c in ANSI_PYTHON {
            assert!(
                !ANSI_USER.contains(&c) && !ANSI_KERNEL.contains(&c) && !STATE_ANSI.contains(&c)
            );
        }
    }

    #[test]
    fn state_frames_have_their_own_colours_apart_from_code() {
        for mode in [ColorMode::True, ColorMode::Ansi] {
            let p = Palette::new(mode);
            let colours: Vec<Color> = ThreadState::ALL
                .into_iter()
                .map(|s| p.frame_color(FrameKind::OffCpu(s), metric::state_frame(s)))
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
            // A function that merely has the name is code: the kind decides, not the name.
            let name = metric::state_frame(ThreadState::Sleeping);
            assert_ne!(p.frame_color(FrameKind::User, name), colours[0]);
        }
    }
}
