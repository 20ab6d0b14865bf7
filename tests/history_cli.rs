//! A flight recorder's history read as one capture, and a window cut from it (issue 28),
//! on three segments written here with the format's writer (no root needed). Each segment
//! numbers its strings, modules, frames and stacks from 0, with other meanings behind the
//! same ids, as three recorder processes do. The window spans all three: `report DIR` of
//! it equals the sum of each segment's report of the same window, and `snapshot` of it
//! reports the same in every format compared.

// Tests and tools: a failed unwrap is a test failure with a backtrace.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::Path;

use hotspot_format::{
    Frame, FrameAddr, Mark, Module, ModuleKind, Record, Sample, SessionHeader, SourceLoc, Stack,
    Symbol, Writer,
};
use hotspot_testkit::e2e::{hotspot, tmp};

const S: u64 = 1_000_000_000;
/// Unix ns of the first segment's start: 2026-12-01T10:00:00Z.
const WALL0: u64 = 1_796_119_200 * S;
const MONO0: u64 = 50 * S;
/// Each segment covers 10 s; samples every 10 ms.
const SEG: u64 = 10 * S;

/// Segment `k`: module 0 and the first strings mean different things in each, and its
/// stacks split their samples by `k` so that each segment's profile differs.
fn segment(k: u64) -> Vec<u8> {
    let session = SessionHeader {
        host: "box".into(),
        cpus: 2,
        freq_hz: 100,
        all_processes: true,
        start_wall_ns: WALL0 + k * SEG,
        start_mono_ns: MONO0 + k * SEG,
        recorder_version: "test".into(),
        ..SessionHeader::default()
    };
    let mut w = Writer::new(Vec::new(), session).unwrap();
    // Segment k's module 0 is `lib{k}`, module 1 is the shared `app`.
    let libs = [format!("/usr/lib/lib{k}.so"), "/usr/bin/app".to_string()];
    for (id, path) in libs.iter().enumerate() {
        w.push(Record::Module(Module {
            id: id as u32,
            kind: ModuleKind::Elf,
            path: path.clone(),
            build_id: if id == 0 { vec![1, k as u8] } else { vec![2] },
        }))
        .unwrap();
    }
    // Frames: 0 = lib{k}'s `work{k}`, 1 = app's `main`, 2 = app's `helper`.
    let names = [format!("work{k}"), "main".into(), "helper".into()];
    for (id, (module, name)) in [(0, &names[0]), (1, &names[1]), (1, &names[2])]
        .into_iter()
        .enumerate()
    {
        let function = w.intern(name);
        w.push(Record::Frame(Frame {
            id: id as u32,
            module,
            addr: FrameAddr::FileOffset(0x1000 * (id as u64 + 1)),
        }))
        .unwrap();
        w.push(Record::Symbol(Symbol {
            frame: id as u32,
            function,
            loc: SourceLoc::default(),
            inlined: Vec::new(),
        }))
        .unwrap();
    }
    // Stacks (leaf first): 0 = work{k} ← main, 1 = helper ← main.
    w.push(Record::Stack(Stack {
        id: 0,
        frames: vec![0, 1],
    }))
    .unwrap();
    w.push(Record::Stack(Stack {
        id: 1,
        frames: vec![2, 1],
    }))
    .unwrap();
    w.push(Record::Process(hotspot_format::Process {
        pid: 10,
        ppid: 1,
        name: "app".into(),
        cmdline: vec!["app".into(), "--secret=x".into()],
        exe: "/usr/bin/app".into(),
        start_ns: 0,
    }))
    .unwrap();
    w.push(Record::Thread(hotspot_format::Thread {
        tid: 10,
        pid: 10,
        name: "app".into(),
        time_ns: 0,
    }))
    .unwrap();
    let start = MONO0 + k * SEG;
    for i in 0..1000u64 {
        let t = start + i * 10_000_000;
        w.push_sample(Sample {
            time_ns: t,
            tid: 10,
            cpu: 0,
            // Segment k puts (k+1) of every 4 samples in helper.
            stack: u32::from(i % 4 <= k),
        })
        .unwrap();
        if i % 100 == 99 {
            w.flush_block().unwrap();
        }
    }
    if k == 1 {
        w.push(Record::Mark(Mark {
            time_ns: start + 5 * S,
            text: "deploy 4.2".into(),
        }))
        .unwrap();
    }
    w.finish(WALL0 + (k + 1) * SEG, start + SEG, 0).unwrap()
}

fn history(dir: &Path) {
    std::fs::create_dir(dir).unwrap();
    for k in 0..3 {
        let ms = (WALL0 + k * SEG) / 1_000_000;
        std::fs::write(
            dir.join(hotspot_format::segment::name(ms.into())),
            segment(k),
        )
        .unwrap();
    }
}

fn run(args: &[&str]) -> String {
    let out = hotspot().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "hotspot {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Folded lines as stack → count.
fn folded(text: &str) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for line in text.lines() {
        let (stack, n) = line.rsplit_once(' ').unwrap();
        *m.entry(stack.to_string()).or_default() += n.parse::<u64>().unwrap();
    }
    m
}

fn functions(json: &str) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    v["functions"].clone()
}

/// The window 5 s to 25 s from the history's start: the second half of segment 0, all of
/// segment 1, the first half of segment 2.
const FROM: &str = "2026-12-01T10:00:05Z";
const TO: &str = "2026-12-01T10:00:25Z";

#[test]
fn a_window_across_three_segments_reports_what_their_samples_in_it_hold() {
    let d = tmp();
    let dir = d.path().join("history");
    history(&dir);
    let dir_s = dir.to_str().unwrap();
    let whole = folded(&run(&[
        "report", dir_s, "--format", "folded", "--from", FROM, "--to", TO,
    ]));
    // The oracle: each segment's own report of the same window, summed.
    let mut oracle = BTreeMap::new();
    let mut segs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    segs.sort();
    assert_eq!(segs.len(), 3);
    for seg in &segs {
        let out = hotspot()
            .args(["report", "--format", "folded", "--from", FROM, "--to", TO])
            .arg(seg)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for (stack, n) in folded(&String::from_utf8(out.stdout).unwrap()) {
            *oracle.entry(stack).or_default() += n;
        }
    }
    assert_eq!(whole, oracle);
    // Every segment's own function is in it: ids 0 of three segments kept apart.
    for f in ["work0", "work1", "work2", "helper"] {
        assert!(
            whole.keys().any(|k| k.contains(f)),
            "{f} missing: {whole:?}"
        );
    }
    // 5 s of segment 0, 10 s of segment 1, 5 s of segment 2 at 100 Hz, ends inclusive.
    let total: u64 = whole.values().sum();
    assert!(
        (2000..=2002).contains(&total),
        "{total} samples in the window"
    );

    // The snapshot of the window: one self-contained capture reporting the same.
    let snap = d.path().join("incident.hsp");
    let snap_s = snap.to_str().unwrap();
    run(&["snapshot", dir_s, "--from", FROM, "--to", TO, "-o", snap_s]);
    assert_eq!(
        folded(&run(&["report", snap_s, "--format", "folded"])),
        whole
    );
    assert_eq!(
        functions(&run(&["report", snap_s, "--format", "json"])),
        functions(&run(&[
            "report", dir_s, "--format", "json", "--from", FROM, "--to", TO
        ]))
    );
    // It never overwrites.
    let again = hotspot()
        .args(["snapshot", dir_s, "--last", "1s", "-o", snap_s])
        .output()
        .unwrap();
    assert!(!again.status.success());
    // --from mark:NAME: the mark is 15 s from the history's start (segment 1's 5 s).
    let from_mark = folded(&run(&[
        "report",
        dir_s,
        "--format",
        "folded",
        "--from",
        "mark:deploy 4.2",
        "--to",
        TO,
    ]));
    let from_time = folded(&run(&[
        "report",
        dir_s,
        "--format",
        "folded",
        "--from",
        "2026-12-01T10:00:15Z",
        "--to",
        TO,
    ]));
    assert_eq!(from_mark, from_time);
    assert_eq!(from_mark.values().sum::<u64>(), 1001);
    let out = hotspot()
        .args(["report", dir_s, "--from", "mark:nope"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("'deploy 4.2'"),
        "{err}"
    );
    let marked = d.path().join("marked.hsp");
    run(&[
        "snapshot",
        dir_s,
        "--from",
        "mark:deploy 4.2",
        "-o",
        marked.to_str().unwrap(),
    ]);
    assert_eq!(
        folded(&run(&[
            "report",
            marked.to_str().unwrap(),
            "--format",
            "folded"
        ])),
        folded(&run(&[
            "report",
            dir_s,
            "--format",
            "folded",
            "--from",
            "mark:deploy 4.2"
        ]))
    );
    // The mark inside the window came along; info reads the history and the copy.
    assert!(run(&["info", snap_s]).contains("deploy 4.2"));
    assert!(run(&["info", dir_s]).contains("deploy 4.2"));
}

#[test]
fn the_whole_history_is_one_capture_and_last_counts_back_from_its_newest_sample() {
    let d = tmp();
    let dir = d.path().join("history");
    history(&dir);
    let dir_s = dir.to_str().unwrap();
    let whole = folded(&run(&["report", dir_s, "--format", "folded"]));
    assert_eq!(whole.values().sum::<u64>(), 3000);
    let info: serde_json::Value = serde_json::from_str(&run(&["info", "--json", dir_s])).unwrap();
    assert_eq!(info["counts"]["samples"], 3000);
    // Equal content is one definition: app and main once, not three times.
    assert_eq!(info["counts"]["modules"], 4, "lib0..2 and app");
    assert_eq!(
        info["counts"]["stacks"], 4,
        "helper←main, and work{{k}}←main ×3"
    );

    // The report's JSON lists the marks, on the history's clock: 15 s from its start.
    let report: serde_json::Value =
        serde_json::from_str(&run(&["report", "--format", "json", dir_s])).unwrap();
    assert_eq!(report["marks"][0]["text"], "deploy 4.2");
    assert_eq!(report["marks"][0]["time_s"], 15.0);
    assert_eq!(report["marks"].as_array().unwrap().len(), 1);

    let snap = d.path().join("last.hsp");
    run(&[
        "snapshot",
        dir_s,
        "--last",
        "3s",
        "--scrub",
        "-o",
        snap.to_str().unwrap(),
    ]);
    let last = folded(&run(&[
        "report",
        snap.to_str().unwrap(),
        "--format",
        "folded",
    ]));
    // 3 s back from the last sample, both ends inclusive, at 100 Hz: all in segment 2.
    assert_eq!(last.values().sum::<u64>(), 301);
    assert!(
        last.keys()
            .all(|k| !k.contains("work0") && !k.contains("work1"))
    );
    let info = run(&["info", snap.to_str().unwrap()]);
    assert!(info.contains("scrubbed"), "{info}");
    assert!(!std::fs::read(&snap).unwrap().is_empty());
    let json = run(&["info", "--json", snap.to_str().unwrap()]);
    assert!(!json.contains("--secret=x"), "arguments scrubbed");
}

#[test]
fn a_directory_without_segments_or_with_a_fifo_for_one_is_refused() {
    let d = tmp();
    let empty = d.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = hotspot().arg("report").arg(&empty).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no flight-recorder segments"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");

    let dir = d.path().join("history");
    history(&dir);
    let fifo = dir.join(hotspot_format::segment::name(9_999_999_999_999));
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo(3) on a NUL-terminated path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let out = hotspot().arg("info").arg(&dir).output().unwrap();
    assert!(!out.status.success(), "a FIFO segment must not be read");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a regular file"), "{err}");
}
