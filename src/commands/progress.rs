//! A progress bar on stderr for long reads: shown only when stderr is a terminal and the
//! work has already taken more than a moment, so pipes, CI logs and quick runs stay clean.
//! Here rather than in replay, which reports progress through a callback and so never
//! draws on a terminal itself.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long work runs before a bar appears.
const GRACE: Duration = Duration::from_millis(400);

/// Progress of reading `label`, by bytes.
#[derive(Debug)]
pub struct Progress {
    label: String,
    started: Instant,
    enabled: bool,
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A bar for reading `label`; silent unless stderr is a terminal.
    pub fn new(label: &str) -> Progress {
        Progress {
            label: label.to_string(),
            started: Instant::now(),
            enabled: std::io::stderr().is_terminal(),
            bar: None,
        }
    }

    /// Reports `done` of `total` bytes.
    pub fn update(&mut self, done: u64, total: u64) {
        if !self.enabled {
            return;
        }
        if self.bar.is_none() && self.started.elapsed() >= GRACE && done < total {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            if let Ok(style) =
                ProgressStyle::with_template("{msg} {wide_bar} {bytes}/{total_bytes} {eta}")
            {
                bar.set_style(style);
            }
            bar.set_message(format!(
                "reading {}",
                hotspot_replay::sanitize::display(&self.label)
            ));
            self.bar = Some(bar);
        }
        if let Some(bar) = &self.bar {
            bar.set_position(done);
        }
    }

    /// Removes the bar, if one was drawn.
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
