//! `hotspot view` on hostile captures (`tests/hostile/mod.rs`), in a real terminal: tmux,
//! driven with `send-keys`, read with `capture-pane`, under a 512 MB address-space limit
//! (`ulimit -v`). A capture that opens shows every tab and the help, its names never
//! retitle the terminal (an OSC 0 in a name would), and `q` ends it with status 0 within
//! 5 s; one that cannot be read ends the view with a one-line error naming the file. (An
//! empty file, or a header cut short, may still be being written: `view` waits for it,
//! saying so.)

use hotspot_testkit::hostile;
mod tmux;

use std::path::Path;
use std::time::Duration;

use hostile::{Case, Expect};
use tmux::Tmux;

/// How long a step may take on a loaded machine (the views draw in well under a second).
const STEP: Duration = Duration::from_secs(10);

fn view_case(t: &Tmux, dir: &Path, case: &Case) {
    let path = dir.join(format!("{}.hsp", case.name));
    std::fs::write(&path, &case.bytes).expect("write case");
    t.type_line("clear");
    let marker = format!("view-exit-{}=", case.name);
    t.type_line(&format!(
        "(ulimit -v 524288; {} view '{}'); echo {marker}$?",
        env!("CARGO_BIN_EXE_hotspot"),
        path.display()
    ));
    let name = &case.name;
    if let Expect::Error(text) = case.expect {
        let s = t.wait_for(&format!("{name}: the error"), STEP, |s| {
            s.contains(&format!("{marker}1"))
        });
        let errors: Vec<&str> = s.lines().filter(|l| l.starts_with("hotspot: ")).collect();
        assert_eq!(errors.len(), 1, "{name}:\n{s}");
        assert!(errors[0].contains(text), "{name}: {}", errors[0]);
        assert!(
            errors[0].contains(&format!("{name}.hsp")),
            "{name}: {}",
            errors[0]
        );
        return;
    }
    t.wait_for(&format!("{name}: the flat view"), STEP, |s| {
        s.contains("Flat ·")
    });
    if case.bytes.len() < 16 {
        t.wait_for(&format!("{name}: why it waits"), STEP, |s| {
            s.contains("no capture header yet")
        });
    }
    for (key, tab) in [
        ("f", "Flame"),
        ("t", "Stream"),
        ("T", "Threads"),
        ("1", "Flat"),
    ] {
        t.keys(key);
        t.wait_for(&format!("{name}: {tab}"), STEP, |s| {
            s.contains(&format!("{tab} ·"))
        });
    }
    t.keys("?");
    t.wait_for(&format!("{name}: the help"), STEP, |s| {
        s.contains("any key closes")
    });
    t.keys("?");
    let title = t.title();
    assert!(
        !title.contains("pwned"),
        "{name}: a name retitled the terminal: {title}"
    );
    t.keys("q");
    let s = t.wait_for(&format!("{name}: the view to end"), STEP, |s| {
        // The echo's output line, not the command line that holds the marker too.
        s.lines().any(|l| l.starts_with(&marker))
    });
    assert!(
        s.contains(&format!("{marker}0")),
        "{name}: ended badly:\n{s}"
    );
    assert!(!s.contains("panicked"), "{name}:\n{s}");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn view_survives_hostile_captures() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
    let t = Tmux::start("hostile-view", 150, 45);
    let cases = hostile::cases();
    let names = [
        "nasty_names",
        "ids_out_of_range",
        "duplicate_definitions",
        "times_extreme",
        "times_all_at_max",
        "times_all_at_zero",
        "times_backwards_zero_session",
        "inline_expansion_bomb",
        "many_deep_stacks",
        "batch_of_a_million",
        "zstd_bomb_max_raw_unknown_records",
        "records_over_block_limit",
        "header_only",
        "empty",
        "elf",
        "newer_major",
        "header_cut",
    ];
    for name in names {
        let mut case = cases
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no case {name}"))
            .clone();
        // An empty file, or one holding part of a header, may still be being written:
        // `view` waits for it rather than failing.
        if name == "empty" || name == "header_cut" {
            case.expect = Expect::Opens;
        }
        view_case(&t, dir.path(), &case);
    }
    // A capture cut in the middle of a block, as a killed recorder leaves it.
    let (bytes, ends) = hostile::written(3, 100);
    let cut = (ends[0].0 + ends[1].0) / 2;
    view_case(
        &t,
        dir.path(),
        &Case::new("truncated", bytes[..cut as usize].to_vec(), Expect::Opens),
    );
    let s = t.screen();
    assert!(!s.contains("panicked"), "{s}");
}
