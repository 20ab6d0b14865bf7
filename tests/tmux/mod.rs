//! A terminal for end-to-end tests of the views: a detached tmux session running a plain
//! shell, driven with `send-keys` and read with `capture-pane`.
//!
//! Use from an integration test with `mod tmux;`.

#![allow(dead_code)]

use std::process::Command;
use std::time::{Duration, Instant};

/// A detached tmux session running a plain shell, killed on drop.
pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// A session of `cols` × `rows` on a server of its own (named after `name` and this
    /// process), so nothing else's sessions are touched.
    pub fn start(name: &str, cols: u16, rows: u16) -> Tmux {
        let socket = format!("hotspot-e2e-{name}-{}", std::process::id());
        let t = Tmux { socket };
        let (cols, rows) = (cols.to_string(), rows.to_string());
        let out = t
            .cmd()
            .args(["new-session", "-d", "-s", "main", "-x", &cols, "-y", &rows])
            .args(["bash", "--norc", "--noprofile"])
            .env("PS1", "e2e-prompt$ ")
            .output()
            .expect("tmux runs (is it installed?)");
        assert!(
            out.status.success(),
            "tmux: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        t
    }

    pub fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket]);
        c
    }

    pub fn run(&self, args: &[&str]) -> String {
        let out = self.cmd().args(args).output().expect("tmux");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Types a shell command line and Enter.
    pub fn type_line(&self, line: &str) {
        self.run(&["send-keys", "-t", "main", "-l", "--", line]);
        self.run(&["send-keys", "-t", "main", "Enter"]);
    }

    /// Sends keys literally (each character a key press).
    pub fn keys(&self, keys: &str) {
        self.run(&["send-keys", "-t", "main", "-l", "--", keys]);
    }

    pub fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "main"])
    }

    /// The title the pane's program set (OSC 0/2).
    pub fn title(&self) -> String {
        self.run(&["display", "-p", "-t", "main", "#{pane_title}"])
    }

    pub fn alternate_on(&self) -> bool {
        self.run(&["display", "-p", "-t", "main", "#{alternate_on}"])
            .trim()
            == "1"
    }

    /// Waits until the screen satisfies `ok` and is whole, or fails showing it. Whole: the
    /// same text read twice 50 ms apart. A capture can land while the view is still
    /// writing a frame (CI read a flame graph's legend over the flat table's rows, once),
    /// so a screen that passes `ok` mid-frame is read again before it is believed.
    pub fn wait_for(&self, what: &str, timeout: Duration, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if ok(&s) {
                std::thread::sleep(Duration::from_millis(50));
                if self.screen() == s {
                    return s;
                }
            }
            if start.elapsed() > timeout {
                panic!("timed out after {timeout:?} waiting for {what}; screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Quits the view and checks the terminal was given back to the shell.
    pub fn quit_and_check_restored(&self) {
        self.keys("q");
        let start = Instant::now();
        while self.alternate_on() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "still in the alternate screen after q:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        self.wait_for(
            "the shell prompt after quitting",
            Duration::from_secs(10),
            |s| {
                s.lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .is_some_and(|l| l.starts_with("e2e-prompt$"))
            },
        );
        // Raw mode is off: the shell echoes what is typed, line by line.
        self.type_line("echo restored-$((40+2))");
        self.wait_for("the shell to run a command", Duration::from_secs(5), |s| {
            s.contains("restored-42")
        });
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").output();
    }
}
