//! `hotspot scrub` as a user runs it (issue 28): a capture crafted with a secret on a
//! command line, a host name and a person's home directory in its paths is copied
//! without any of them in any decompressed byte, `info` says what the original holds and
//! that the copy was scrubbed, and every report format of the copy equals the original's
//! once the scrubbed strings are replaced the same way.

// Tests and tools: a failed unwrap is a test failure with a backtrace.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use hotspot_format::{Mark, Process, Record, Writer};
use hotspot_testkit::e2e::{hotspot, run_ok as ok, tmp};
use hotspot_testkit::synthetic::{self, Config};
use serde_json::Value;

const SECRET: &str = "topsecret";
const HOST: &str = "db-7.internal.example";
const PERSON: &str = "alice";

/// The synthetic capture, with the secret on its process's and its recorder's command
/// lines, the host, and the person's home in a module path, source files and a mark.
fn crafted(path: &Path) {
    let cfg = Config {
        seconds: 3.0,
        stacks: 20,
        ..Config::default()
    };
    let mut session = synthetic::session(&cfg);
    session.host = HOST.into();
    session.command_line.push(format!("--password={SECRET}"));
    let mut w = Writer::new(Vec::new(), session).unwrap();
    let home = |s: &str| s.replace("/usr/bin/", &format!("/home/{PERSON}/bin/"));
    let defs = synthetic::definitions(&cfg, &mut |s| {
        w.intern(&if s.starts_with("src/") {
            format!("/home/{PERSON}/{s}")
        } else {
            s.to_string()
        })
    });
    for r in defs {
        let r = match r {
            Record::Process(p) => Record::Process(Process {
                cmdline: vec![home(&p.exe), "-c".into(), format!("--password={SECRET}")],
                exe: home(&p.exe),
                ..p
            }),
            Record::Module(mut m) => {
                m.path = home(&m.path);
                Record::Module(m)
            }
            r => r,
        };
        w.push(r).unwrap();
    }
    let samples = synthetic::samples(&cfg);
    let mid = samples[samples.len() / 2].time_ns;
    for (i, s) in samples.into_iter().enumerate() {
        w.push_sample(s).unwrap();
        if i == 700 {
            w.push(Record::Mark(Mark {
                time_ns: mid,
                text: format!("deploy 4.2 from /home/{PERSON}/rel"),
            }))
            .unwrap();
        }
    }
    let end = cfg.start_mono_ns + 4_000_000_000;
    std::fs::write(path, w.finish(1_700_000_004_000_000_000, end, 0).unwrap()).unwrap();
}

/// Every decompressed payload of the capture at `path`, as the reader meets its records,
/// re-encoded: the strings a scrub must have removed are looked for in these bytes.
fn record_bytes(path: &Path) -> Vec<u8> {
    let data = std::fs::read(path).unwrap();
    let mut out = Vec::new();
    let mut scratch = Vec::new();
    for event in hotspot_format::Reader::new(&data).unwrap() {
        let hotspot_format::Event::Block(b) = event else {
            panic!("damage in a fresh capture: {event:?}")
        };
        assert!(b.unknown_kinds.is_empty());
        for r in &b.records {
            hotspot_format::codec::encode_record(r, &mut out, &mut scratch).unwrap();
        }
    }
    out
}

fn holds(bytes: &[u8], s: &str) -> bool {
    bytes.windows(s.len()).any(|w| w == s.as_bytes())
}

fn stdout(args: &[&str]) -> String {
    String::from_utf8(ok(hotspot().args(args)).stdout).unwrap()
}

/// What the scrub does to any output: the person's name in paths, and the file's name.
fn as_scrubbed(s: &str, original: &Path, copy: &Path) -> String {
    s.replace(&format!("/home/{PERSON}/"), "/home/USER/")
        .replace(&original.display().to_string(), &copy.display().to_string())
        .replace(
            &original.file_name().unwrap().to_string_lossy().into_owned(),
            &copy.file_name().unwrap().to_string_lossy(),
        )
}

/// `a` and `b` equal, or the first line where they differ.
fn same_lines(a: &str, b: &str, what: &str) {
    for (i, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        assert!(x == y, "{what}, line {}:\n{x}\n{y}", i + 1);
    }
    assert_eq!(a.lines().count(), b.lines().count(), "{what}: line counts");
}

#[test]
fn a_scrubbed_capture_holds_no_secret_and_reports_the_same() {
    let dir = tmp();
    let original = dir.path().join("crafted.hsp");
    let copy = dir.path().join("ticket.hsp");
    crafted(&original);
    let before = record_bytes(&original);
    for s in [SECRET, HOST, PERSON] {
        assert!(holds(&before, s), "the crafted capture lacks {s}");
    }

    let out = ok(hotspot()
        .args(["scrub"])
        .arg(&original)
        .arg("-o")
        .arg(&copy));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("no command-line arguments, no host name, no user names in paths"),
        "{said}"
    );
    let after = record_bytes(&copy);
    for s in [SECRET, HOST, PERSON] {
        assert!(!holds(&after, s), "the scrubbed capture still holds {s}");
    }
    let raw = std::fs::read(&copy).unwrap();
    for s in [SECRET, HOST, PERSON] {
        assert!(!holds(&raw, s), "the scrubbed file still holds {s}");
    }

    // info: the original says what it holds, the copy that it was scrubbed.
    let info = stdout(&["info", original.to_str().unwrap()]);
    assert!(
        info.contains(
            "personal:   host name, kernel release, 2 command lines with arguments, \
             19 paths under home directories, 2 thread names; no environment"
        ),
        "{info}"
    );
    assert!(info.contains("scrubbed:   no"), "{info}");
    let info = stdout(&["info", copy.to_str().unwrap()]);
    assert!(
        info.contains("scrubbed:   command-line arguments, the host name, user names in paths"),
        "{info}"
    );
    assert!(
        info.contains("personal:   kernel release, 2 thread names; no environment"),
        "{info}"
    );
    assert!(info.contains("deploy 4.2 from /home/USER/rel"), "{info}");
    let json: Value =
        serde_json::from_str(&stdout(&["info", "--json", copy.to_str().unwrap()])).unwrap();
    assert_eq!(
        json["scrubbed"],
        serde_json::json!({"arguments": true, "host": true, "user_paths": true})
    );
    assert_eq!(json["personal"]["command_lines_with_arguments"], 0);
    assert_eq!(json["personal"]["home_paths"], 0);
    assert_eq!(json["marks"].as_array().unwrap().len(), 1);

    // Every report format: the same but for the scrubbed strings.
    for format in ["text", "json", "folded", "svg", "speedscope"] {
        let a = stdout(&["report", original.to_str().unwrap(), "--format", format]);
        let b = stdout(&["report", copy.to_str().unwrap(), "--format", format]);
        let a = as_scrubbed(&a, &original, &copy);
        if format == "json" {
            // The session names the host and the recorder's arguments.
            let (mut a, mut b): (Value, Value) = (
                serde_json::from_str(&a).unwrap(),
                serde_json::from_str(&b).unwrap(),
            );
            // The session names the host and the recorder's arguments; the files' sizes
            // differ (the copy's blocks are its own).
            for doc in [&mut a, &mut b] {
                let s = doc["session"].as_object_mut().unwrap();
                assert!(s.remove("host").is_some() && s.remove("command_line").is_some());
                let c = doc["capture"].as_object_mut().unwrap();
                assert!(c.remove("size_bytes").is_some());
            }
            assert!(a == b, "report --format json differs");
        } else {
            same_lines(&a, &b, format);
        }
    }

    // Nothing is overwritten.
    let out = hotspot()
        .args(["scrub"])
        .arg(&original)
        .arg("-o")
        .arg(&copy)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("never overwrites"), "{err}");
}

#[test]
fn keep_flags_keep_what_they_name() {
    let dir = tmp();
    let original = dir.path().join("crafted.hsp");
    let copy = dir.path().join("args-kept.hsp");
    crafted(&original);
    ok(hotspot()
        .args(["scrub", "--keep-arguments", "--keep-host"])
        .arg(&original)
        .arg("-o")
        .arg(&copy));
    let after = record_bytes(&copy);
    assert!(holds(&after, SECRET) && holds(&after, HOST));
    assert!(!holds(&after, &format!("/home/{PERSON}/")));
    let info = stdout(&["info", copy.to_str().unwrap()]);
    assert!(info.contains("scrubbed:   user names in paths\n"), "{info}");
}
