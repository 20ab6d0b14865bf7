//! End-to-end tests of the terminal views: `hotspot view` and `hotspot live` run inside
//! tmux (a real terminal), driven with `send-keys` and read with `capture-pane`. Each test
//! uses its own tmux server socket, so nothing else's sessions are touched.

mod common;
mod tmux;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hotspot_testkit::e2e::{committed_capture, hotspot_path};
use tmux::Tmux;

/// Live tests record with real BPF and share two CPUs: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn fixture_capture(name: &str) -> PathBuf {
    committed_capture(&format!("{name}.hsp"))
}

fn quote(p: &Path) -> String {
    format!("'{}'", p.display())
}

#[test]
fn view_replays_a_capture_and_restores_the_terminal() {
    let t = Tmux::start("view", 160, 50);
    t.type_line(&format!(
        "{} view {}",
        hotspot_path().display(),
        quote(&fixture_capture("phased"))
    ));
    let s = t.wait_for("the flat view", Duration::from_secs(10), |s| {
        s.contains("p3_leaf")
    });
    assert!(t.alternate_on());
    for f in ["p1_leaf", "p2_leaf", "p3_leaf", "replay of phased.hsp"] {
        assert!(s.contains(f), "{f} missing:\n{s}");
    }
    t.keys("f");
    let s = t.wait_for("the flame graph", Duration::from_secs(5), |s| {
        s.contains("Flame ·")
    });
    for f in ["phase_one", "phase_two", "phase_three", "p1_work"] {
        assert!(s.contains(f), "{f} missing from the flame graph:\n{s}");
    }
    t.keys("t");
    let s = t.wait_for("the stream", Duration::from_secs(5), |s| {
        s.contains("Stream ·")
    });
    assert!(s.contains("p1_leaf") && s.contains("p3_leaf"), "{s}");
    // Shrink the selection to the first fifth of the capture: phase one only.
    t.keys(&"-".repeat(128));
    t.keys("1");
    let s = t.wait_for("the flat view of phase one", Duration::from_secs(5), |s| {
        s.contains("Flat ·") && !s.contains("p3_leaf")
    });
    assert!(s.contains("p1_leaf"), "{s}");
    // Select all again.
    t.keys("a");
    t.wait_for("every phase again", Duration::from_secs(5), |s| {
        s.contains("p3_leaf")
    });
    t.keys("T");
    t.wait_for("the thread list", Duration::from_secs(5), |s| {
        s.contains("Threads ·")
    });
    t.quit_and_check_restored();
}

#[test]
fn live_profiles_a_command_and_quits_cleanly() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let phased = common::fixture("phased");
    let dir = tempfile::tempdir().expect("tempdir");
    let kept = dir.path().join("live.hsp");
    let t = Tmux::start("live", 160, 50);
    t.type_line(&format!(
        "{} live -o {} -- {} 2",
        hotspot_path().display(),
        quote(&kept),
        quote(&phased)
    ));
    let s = t.wait_for("the fixture's functions", Duration::from_secs(8), |s| {
        s.contains("p1_leaf")
    });
    assert!(s.contains("live at 499 Hz"), "{s}");
    t.quit_and_check_restored();
    // The command hotspot started was ended with the view.
    let running = std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .any(|c| c.starts_with(phased.as_os_str().as_encoded_bytes()));
    assert!(!running, "the profiled command still runs after quitting");
    // -o keeps the capture (finished: the recorder stopped with the view), and the
    // command's output went to a file beside it, not over the view.
    let c = hotspot_replay::Capture::open(&kept).expect("kept capture opens");
    assert!(c.end.is_some() && !c.samples.is_empty());
    let log = std::fs::read_to_string(kept.with_extension("log")).expect("command output kept");
    assert!(log.contains("phased: phase_one start_ns="), "{log}");
}

/// Waits until process `pid` is gone (or fails after `limit`).
fn wait_gone(pid: &str, limit: Duration, what: &str) {
    let start = Instant::now();
    while Path::new(&format!("/proc/{pid}")).exists() {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // A zombie has finished; only its parent has not reaped it yet.
        if state.split_whitespace().nth(2) == Some("Z") {
            return;
        }
        assert!(
            start.elapsed() < limit,
            "{what} (pid {pid}) still running {limit:?} after its terminal closed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn closing_the_terminal_ends_the_views_and_finishes_a_live_capture() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    // A view in its own session: its terminal is not its controlling one, so no SIGHUP
    // comes; reading input then gives EOF forever.
    let pidfile = dir.path().join("view.pid");
    let t = Tmux::start("hup-view", 160, 50);
    t.type_line(&format!(
        "setsid -w sh -c 'echo $$ > {}; exec {} view {}'",
        pidfile.display(),
        hotspot_path().display(),
        quote(&fixture_capture("phased"))
    ));
    t.wait_for("the flat view", Duration::from_secs(10), |s| {
        s.contains("p3_leaf")
    });
    let pid = std::fs::read_to_string(&pidfile).expect("pid file");
    drop(t);
    wait_gone(pid.trim(), Duration::from_secs(5), "hotspot view");

    // Live, as the pane's own process: SIGHUP, then a terminal that fails every write.
    let phased = common::fixture("phased");
    let kept = dir.path().join("live.hsp");
    let pidfile = dir.path().join("live.pid");
    let t = Tmux::start("hup-live", 160, 50);
    t.type_line(&format!(
        "echo $$ > {}; exec {} live -o {} -- {} 30",
        pidfile.display(),
        hotspot_path().display(),
        quote(&kept),
        quote(&phased)
    ));
    t.wait_for("the fixture's functions", Duration::from_secs(10), |s| {
        s.contains("p1_leaf")
    });
    let pid = std::fs::read_to_string(&pidfile).expect("pid file");
    drop(t);
    wait_gone(pid.trim(), Duration::from_secs(10), "hotspot live");
    let out = Command::new(hotspot_path())
        .args(["info", "--json"])
        .arg(&kept)
        .output()
        .expect("hotspot info");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "info failed: {text}");
    let v: serde_json::Value = serde_json::from_str(&text).expect("info --json is JSON");
    assert_eq!(
        v.pointer("/ending/clean"),
        Some(&serde_json::Value::Bool(true)),
        "the live capture was not finished: {text}"
    );
}

#[test]
fn view_compares_two_captures() {
    let t = Tmux::start("view-diff", 160, 50);
    t.type_line(&format!(
        "{} view {} {}",
        hotspot_path().display(),
        quote(&fixture_capture("split7030")),
        quote(&fixture_capture("split3070"))
    ));
    // The footer is drawn last: waiting for it, not the table's title, sees a whole
    // frame (CI once read the screen after the table and before the timelines).
    let s = t.wait_for("the flat diff", Duration::from_secs(10), |s| {
        s.contains("Flat diff") && s.contains("x scale")
    });
    assert!(t.alternate_on());
    assert!(
        s.contains("diff against base split7030.hsp") && s.contains("replay of split3070.hsp"),
        "{s}"
    );
    // The split is inverted: the cold leaf grew and the hot one shrank, both marked.
    let row = |name: &str| {
        s.lines()
            .find(|l| l.contains(&format!("{name}  split7030")))
            .unwrap_or_else(|| panic!("no row for {name}:\n{s}"))
            .to_string()
    };
    let (cold, hot) = (row("cold_leaf"), row("hot_leaf"));
    assert!(
        cold.trim_start().starts_with('+') && cold.contains('*'),
        "{cold}"
    );
    assert!(
        hot.trim_start().starts_with('-') && hot.contains('*'),
        "{hot}"
    );
    assert!(s.contains(" base 5.01s") && s.contains("▶new "), "{s}");
    assert!(s.contains("b base/new") && s.contains("x scale"), "{s}");
    // The differential flame graph: its legend, and the leaves marked by their change.
    t.keys("f");
    let s = t.wait_for(
        "the differential flame graph",
        Duration::from_secs(5),
        |s| s.contains("Flame ·") && s.contains("▲ slower"),
    );
    assert!(s.contains("▲cold_leaf") && s.contains("▼hot_leaf"), "{s}");
    // The rate scale, then the base's selection alone shrunk to its first part.
    t.keys("1x");
    t.wait_for("the rate scale", Duration::from_secs(5), |s| {
        s.contains("ms/s")
    });
    t.keys("b");
    t.keys(&"-".repeat(100));
    let s = t.wait_for("a shorter base selection", Duration::from_secs(5), |s| {
        s.contains("▶base") && s.contains("long)")
    });
    assert!(
        s.lines()
            .any(|l| l.starts_with(" new ") && l.contains("(all)")),
        "the new capture's selection moved:\n{s}"
    );
    t.quit_and_check_restored();
}

#[test]
fn live_compares_a_running_command_with_a_capture() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let phased = common::fixture("phased");
    let t = Tmux::start("live-diff", 160, 50);
    t.type_line(&format!(
        "{} live --base {} -- {} 2",
        hotspot_path().display(),
        quote(&fixture_capture("phased")),
        quote(&phased)
    ));
    let s = t.wait_for(
        "the live diff against the capture",
        Duration::from_secs(10),
        |s| {
            s.contains("live at 499 Hz")
                && s.lines()
                    .any(|l| l.contains("p1_leaf  phased") && !l.contains("gone"))
        },
    );
    assert!(
        s.contains("diff against base phased.hsp") && s.contains("live at 499 Hz"),
        "{s}"
    );
    t.quit_and_check_restored();
}

/// A child process ended (SIGTERM, then reaped) when dropped.
struct Ended(std::process::Child);

impl Drop for Ended {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child, not yet reaped.
        unsafe {
            libc::kill(self.0.id() as libc::pid_t, libc::SIGTERM);
        }
        let _ = self.0.wait();
    }
}

/// `view DIR` of a history the real flight recorder is writing (`record -a --segment 2s`)
/// follows it: a process started after the view opened shows, as its samples land in the
/// segment being written and in the segments started after opening, and the view goes on
/// while `--keep` removes the segments it opened with.
#[test]
fn view_follows_a_history_being_recorded() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let d = tempfile::tempdir().expect("tempdir");
    let dir = d.path().join("history");
    // A name of its own, so that the thread list shows this test's process and no other.
    let late = d.path().join("late-comer");
    std::fs::copy(common::fixture("phased"), &late).expect("copy the fixture");
    let _recorder = Ended(
        Command::new(hotspot_path())
            .args(["record", "-a", "--segment", "2s", "--keep", "3s", "-o"])
            .arg(&dir)
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("hotspot record"),
    );
    let first = |dir: &Path| -> Option<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .ok()?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| hotspot_format::segment::is_name(n))
            .collect();
        names.sort();
        names.into_iter().next()
    };
    let start = Instant::now();
    while first(&dir).is_none() {
        assert!(start.elapsed() < Duration::from_secs(10), "no segment yet");
        std::thread::sleep(Duration::from_millis(100));
    }
    let opened_with = first(&dir).expect("a segment");

    let t = Tmux::start("view-history", 160, 50);
    t.type_line(&format!(
        "{} view {}",
        hotspot_path().display(),
        quote(&dir)
    ));
    // Only the late process's functions: the rest of the machine's are not looked at.
    let s = t.wait_for("the history's view", Duration::from_secs(10), |s| {
        s.contains("replay of history")
    });
    assert!(t.alternate_on(), "{s}");
    t.keys("/p1_");
    press(&t, "Enter");
    let s = t.wait_for("the filtered flat view", Duration::from_secs(5), |s| {
        s.contains("Flat ·")
    });
    assert!(
        !s.contains("p1_leaf"),
        "p1_leaf before the process started:\n{s}"
    );

    let _late = Ended(
        Command::new(&late)
            .arg("3")
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("the late process"),
    );
    t.wait_for("the late process's samples", Duration::from_secs(15), |s| {
        s.contains("p1_leaf")
    });
    // Its third phase starts 6 s in: segments started after the view opened hold it.
    t.keys("/");
    for _ in 0.."p1_".len() {
        press(&t, "BSpace");
    }
    t.keys("p3_");
    press(&t, "Enter");
    let s = t.wait_for(
        "the late process's third phase",
        Duration::from_secs(20),
        |s| s.contains("p3_leaf"),
    );
    assert!(!s.contains("p1_leaf"), "the filter did not change:\n{s}");
    // --keep removed the segment the view opened with, and the view goes on.
    let start = Instant::now();
    while dir.join(&opened_with).exists() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{opened_with} is still there: --keep 3s removed nothing"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(1));
    let s = t.screen();
    assert!(s.contains("p3_leaf") && t.alternate_on(), "{s}");
    t.quit_and_check_restored();
}

/// Presses a named key (`Enter`, `BSpace`) in the pane.
fn press(t: &Tmux, key: &str) {
    t.run(&["send-keys", "-t", "main", key]);
}
