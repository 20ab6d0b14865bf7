//! The privileges the recorder keeps, with the real BPF program: dropped after attaching
//! (while unreadable targets still resolve), a started command keeping its own, and the
//! output file never reached through a symlink nor left readable to others. They need
//! root; without it they fail with hotspot's own message, never skip.

mod common;

use common::fixture_arg as fixture;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Output};

use hotspot_replay::Capture;
use hotspot_replay::profile;
use hotspot_testkit::e2e::flush_log::*;
use hotspot_testkit::e2e::{hotspot, serial, tmp};

/// A `Cap*` line of a status file as a mask.
fn cap_field(status: &str, field: &str) -> u64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or_else(|| panic!("no {field} in {status}"))
}

fn field(status: &str, name: &str) -> String {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(|v| v.trim().to_string())
        .unwrap_or_else(|| panic!("no {name} in {status}"))
}

const CAP_DAC_READ_SEARCH: u32 = 2;
const CAP_SYS_PTRACE: u32 = 19;
const CAP_SYS_ADMIN: u32 = 21;
const CAP_SYSLOG: u32 = 34;
const CAP_BPF: u32 = 39;
const CAP_CHECKPOINT_RESTORE: u32 = 40;

#[test]
fn privileges_are_dropped_after_attach_and_unreadable_targets_still_resolve() {
    const NOBODY: u32 = 65534;
    let d = tmp();
    // The targets run as nobody from a directory only nobody may enter, as files only
    // nobody may read: the recorder needs CAP_SYS_PTRACE for their /proc entries and
    // CAP_DAC_READ_SEARCH (or map_files with CAP_CHECKPOINT_RESTORE) for their images.
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let private = d.path().join("private");
    std::fs::create_dir(&private).expect("mkdir");
    let mut bins = Vec::new();
    for name in ["execer", "busy"] {
        let dst = private.join(name);
        std::fs::copy(fixture(name), &dst).expect("copy fixture");
        std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        std::os::unix::fs::chown(&dst, Some(NOBODY), Some(NOBODY)).expect("chown");
        bins.push(dst.to_string_lossy().into_owned());
    }
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    std::os::unix::fs::chown(&private, Some(NOBODY), Some(NOBODY)).expect("chown");
    let out = d.path().join("priv.hsp");
    let log = d.path().join("priv.log");
    let _g = serial();
    let mut rec = spawn_recorder(
        &[],
        &out,
        &log,
        &[
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            &bins[0],
            "2",
            &bins[1],
            "1.5",
        ],
    );
    wait_for_first_block(&log, &mut rec);
    let pid = rec.id();
    let main_status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).expect("recorder status");
    let mut statuses = vec![main_status.clone()];
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).expect("tasks") {
        let task = task.expect("task").path();
        if let Ok(s) = std::fs::read_to_string(task.join("status")) {
            statuses.push(s);
        }
    }
    let res = rec.wait_with_output().expect("wait");
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let bit = |c: u32| 1u64 << c;
    let allowed = bit(CAP_DAC_READ_SEARCH)
        | bit(CAP_SYS_PTRACE)
        | bit(CAP_CHECKPOINT_RESTORE)
        | bit(CAP_SYSLOG)
        // Kept only where map reads through held descriptors need it (before 6.5).
        | bit(CAP_BPF);
    for s in &statuses {
        let eff = cap_field(s, "CapEff");
        let prm = cap_field(s, "CapPrm");
        let name = field(s, "Name");
        assert_eq!(
            eff & !allowed,
            0,
            "thread {name}: CapEff {eff:016x} keeps more"
        );
        assert_eq!(
            prm & !allowed,
            0,
            "thread {name}: CapPrm {prm:016x} keeps more"
        );
        assert_eq!(eff & bit(CAP_SYS_ADMIN), 0, "thread {name}");
        assert_ne!(
            eff & bit(CAP_SYS_PTRACE),
            0,
            "thread {name}: needs CAP_SYS_PTRACE"
        );
        assert_eq!(cap_field(s, "CapBnd"), 0, "thread {name}: bounding set");
        assert_eq!(cap_field(s, "CapAmb"), 0, "thread {name}: ambient set");
        assert_eq!(cap_field(s, "CapInh"), 0, "thread {name}: inheritable set");
        assert_eq!(field(s, "NoNewPrivs"), "1", "thread {name}");
    }
    assert!(
        statuses.len() >= 3,
        "the main thread and its tasks: {}",
        statuses.len()
    );
    // Both images were read after the drop: their functions have names.
    let c = Capture::open(&out).expect("opens");
    let folded = profile::fold(&c, &profile::Filter::default());
    let leaf_count = |leaf: &str| -> u64 {
        folded
            .stacks
            .iter()
            .filter(|(s, _)| s.last().is_some_and(|f| &*f.function == leaf))
            .map(|(_, n)| n)
            .sum()
    };
    assert!(
        leaf_count("exec_before_leaf") > 100,
        "{:?}",
        folded.stacks.keys().take(5).collect::<Vec<_>>()
    );
    assert!(leaf_count("busy_leaf") > 100);
    let execer = c
        .threads
        .values()
        .find(|t| t.names.iter().any(|(_, n)| n == "execer"));
    assert!(
        execer.is_some_and(|t| t.names.iter().any(|(_, n)| n == "busy")),
        "the exec'd target is followed: {:?}",
        c.threads
    );
}

#[test]
fn a_started_command_keeps_its_own_privileges() {
    let d = tmp();
    let out = d.path().join("child.hsp");
    let log = d.path().join("child.log");
    let ours = std::fs::read_to_string("/proc/self/status").expect("status");
    let _g = serial();
    let busy = fixture("busy");
    let mut rec = spawn_recorder(&[], &out, &log, &[&busy, "1.5"]);
    wait_for_first_block(&log, &mut rec);
    let children =
        std::fs::read_to_string(format!("/proc/{}/task/{}/children", rec.id(), rec.id()))
            .expect("children");
    let child: u32 = children
        .split_whitespace()
        .next()
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no child in {children:?}"));
    let theirs = std::fs::read_to_string(format!("/proc/{child}/status")).expect("child status");
    let recorder = std::fs::read_to_string(format!("/proc/{}/status", rec.id())).expect("status");
    run_ok_child(rec);
    assert_eq!(field(&theirs, "Name"), "busy");
    for f in ["CapEff", "CapPrm", "CapBnd"] {
        assert_eq!(
            cap_field(&theirs, f),
            cap_field(&ours, f),
            "the command's {f}"
        );
    }
    assert_eq!(field(&theirs, "NoNewPrivs"), field(&ours, "NoNewPrivs"));
    assert_ne!(
        cap_field(&recorder, "CapEff"),
        cap_field(&ours, "CapEff"),
        "the recorder itself did drop"
    );
}

fn run_ok_child(rec: Child) {
    let res = rec.wait_with_output().expect("wait");
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
}

/// `hotspot record -d 0.2 -o PATH -- true` with umask 0; its output.
fn record_to(path: &Path) -> Output {
    let _g = serial();
    let mut cmd = hotspot();
    cmd.args(["record", "-d", "0.2", "-o"])
        .arg(path)
        .args(["--", "true"]);
    // SAFETY: umask is async-signal-safe and only affects the child.
    unsafe {
        cmd.pre_exec(|| {
            libc::umask(0);
            Ok(())
        });
    }
    cmd.output().expect("run hotspot")
}

#[test]
fn the_output_file_is_never_reached_through_a_symlink_nor_left_readable() {
    let d = tmp();
    // A new capture is 0600 even with umask 0.
    let fresh = d.path().join("fresh.hsp");
    let res = record_to(&fresh);
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode(&fresh), 0o600);
    // An old capture left readable by all is replaced, and made private.
    std::fs::set_permissions(&fresh, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let res = record_to(&fresh);
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    assert_eq!(mode(&fresh), 0o600);
    assert!(Capture::open(&fresh).expect("opens").end.is_some());

    // A symlink at -o is refused, whether it points at a capture, at another file or
    // nowhere; what it points at is untouched and nothing is created.
    let precious = d.path().join("precious.txt");
    std::fs::write(&precious, "keep me").expect("write");
    let missing: PathBuf = d.path().join("would-be-created.hsp");
    for (name, target) in [
        ("to-capture.hsp", fresh.as_path()),
        ("to-file.hsp", precious.as_path()),
        ("dangling.hsp", missing.as_path()),
    ] {
        let link = d.path().join(name);
        std::os::unix::fs::symlink(target, &link).expect("symlink");
        let before = std::fs::read(target).ok();
        let res = record_to(&link);
        let err = String::from_utf8_lossy(&res.stderr);
        assert!(!res.status.success(), "{name}: followed the symlink");
        assert!(
            err.contains("symbolic link") || err.contains("symlink"),
            "{name}: {err}"
        );
        assert_eq!(std::fs::read(target).ok(), before, "{name}: target changed");
        assert!(
            std::fs::symlink_metadata(&link)
                .expect("link")
                .file_type()
                .is_symlink()
        );
    }
    assert!(!missing.exists(), "a dangling symlink's target was created");

    // An empty file (what a recorder killed during set-up leaves) is replaced.
    let empty = d.path().join("empty.hsp");
    std::fs::write(&empty, "").expect("write");
    let res = record_to(&empty);
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    assert!(Capture::open(&empty).expect("opens").end.is_some());
    assert_eq!(mode(&empty), 0o600);

    // A file that is not a capture is not overwritten.
    let res = record_to(&precious);
    assert!(!res.status.success());
    assert!(String::from_utf8_lossy(&res.stderr).contains("not a hotspot capture"));
    assert_eq!(std::fs::read_to_string(&precious).expect("read"), "keep me");
}
