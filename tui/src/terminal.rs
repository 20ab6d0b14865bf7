//! The terminal while the views own it: raw mode, alternate screen and mouse capture,
//! always given back — on return, on error (drop), and on panic (a hook that restores
//! before the message is printed).

use std::io::{Stdout, Write, stdout};
use std::sync::Once;

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::cursor::Show;
use ratatui::crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};

/// The terminal in the views' modes; restored when dropped.
pub struct Term {
    pub terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl std::fmt::Debug for Term {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Term").finish_non_exhaustive()
    }
}

/// Puts the terminal back as the shell expects it; safe to call more than once.
pub fn restore() {
    let _ = disable_raw_mode();
    let mut out = stdout();
    let _ = execute!(out, DisableMouseCapture, LeaveAlternateScreen, Show);
    let _ = out.flush();
}

impl Term {
    /// Switches the terminal into the views' modes.
    pub fn enter() -> std::io::Result<Term> {
        static HOOK: Once = Once::new();
        HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                restore();
                previous(info);
            }));
        });
        enable_raw_mode()?;
        let mut out = stdout();
        if let Err(e) = execute!(out, EnterAlternateScreen, EnableMouseCapture) {
            restore();
            return Err(e);
        }
        let terminal = match Terminal::new(CrosstermBackend::new(stdout())) {
            Ok(t) => t,
            Err(e) => {
                restore();
                return Err(e);
            }
        };
        Ok(Term { terminal })
    }
}

impl Drop for Term {
    fn drop(&mut self) {
        restore();
    }
}
