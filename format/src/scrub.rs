//! Scrubbing: the one rule for what a capture keeps of the machine and its people when it
//! is meant to leave them (a ticket, a chat). Pure: a record in, the record as a scrubbed
//! capture holds it out. The [`Writer`](crate::Writer) applies it to every record it
//! writes when told to (`record --scrub`, and `hotspot scrub`, which rewrites a capture
//! through a scrubbing writer), and writes the [`Scrubbed`] record saying what it removed.
//!
//! - **arguments**: a command line keeps its program name (`argv[0]`) and loses the rest,
//!   for every process and for the recorder's own (the session's `command_line`);
//! - **host**: the session's host name becomes [`HOST`];
//! - **user paths**: in every string of the capture (module paths, executables, source
//!   file names in symbols, Rust closure names, names, marks), a path component right
//!   after `/home/` or `/Users/` that is itself a directory (followed by `/`, with no white
//!   space in it) becomes [`USER`]:
//!   `/home/alice/src/x.rs` → `/home/USER/src/x.rs`. A file directly under `/home`
//!   (`/home/swapfile`) and `/root/…` (root's home names no person) are kept.
//!
//! Nothing else changes: ids, samples, frames, times and thread names (which a program
//! chooses) are kept, so every profile computed from a scrubbed capture equals the
//! original's apart from the strings above.

use std::borrow::Cow;

use crate::records::{Module, Process, Record, Scrubbed, SessionHeader, Thread};

/// What a scrubbed host name reads (brackets: no host name can contain them).
pub const HOST: &str = "[scrubbed]";
/// What a user name in a path becomes.
pub const USER: &str = "USER";
/// Directories whose entries are named after people.
const HOMES: [&str; 2] = ["/home/", "/Users/"];

impl Scrubbed {
    /// Everything the rule knows how to remove.
    pub const ALL: Scrubbed = Scrubbed {
        arguments: true,
        host: true,
        user_paths: true,
    };

    /// Whether anything is removed at all.
    pub fn any(&self) -> bool {
        self.arguments || self.host || self.user_paths
    }

    /// What two scrubs together removed (a scrubbed capture scrubbed again).
    pub fn union(self, other: Scrubbed) -> Scrubbed {
        Scrubbed {
            arguments: self.arguments || other.arguments,
            host: self.host || other.host,
            user_paths: self.user_paths || other.user_paths,
        }
    }
}

/// `record` as a capture scrubbed of `what` holds it (borrowed when nothing changes).
pub fn record<'a>(what: &Scrubbed, record: &'a Record) -> Cow<'a, Record> {
    if !what.any() {
        return Cow::Borrowed(record);
    }
    let scrub = |s: &str| text(what, s).into_owned();
    match record {
        Record::Session(s) => Cow::Owned(Record::Session(session(what, s))),
        Record::String { id, text: t } => match text(what, t) {
            Cow::Borrowed(_) => Cow::Borrowed(record),
            Cow::Owned(t) => Cow::Owned(Record::String { id: *id, text: t }),
        },
        Record::Process(p) => Cow::Owned(Record::Process(Process {
            name: scrub(&p.name),
            cmdline: command_line(what, &p.cmdline),
            exe: scrub(&p.exe),
            ..p.clone()
        })),
        Record::Thread(t) => Cow::Owned(Record::Thread(Thread {
            name: scrub(&t.name),
            ..t.clone()
        })),
        Record::Module(m) => Cow::Owned(Record::Module(Module {
            path: scrub(&m.path),
            ..m.clone()
        })),
        Record::Mark(m) => Cow::Owned(Record::Mark(crate::records::Mark {
            text: scrub(&m.text),
            ..m.clone()
        })),
        // The kernel's words; a path in them gets the same rule as any string.
        Record::FeatureOff(f) => Cow::Owned(Record::FeatureOff(crate::records::FeatureOff {
            instead: scrub(&f.instead),
            reason: scrub(&f.reason),
            ..f.clone()
        })),
        // The interpreter's file (a user's pyenv is under their home) and why it was not
        // walked, which may name it.
        Record::InterpreterProcess(p) => Cow::Owned(Record::InterpreterProcess(
            crate::records::InterpreterProcess {
                path: scrub(&p.path),
                version: scrub(&p.version),
                status: match &p.status {
                    crate::records::InterpreterStatus::Unsupported { reason } => {
                        crate::records::InterpreterStatus::Unsupported {
                            reason: scrub(reason),
                        }
                    }
                    walked => walked.clone(),
                },
                ..p.clone()
            },
        )),
        // No strings in these (a frame's kernel symbol is a String id, scrubbed there).
        Record::InterpreterModule(_)
        | Record::ProcessExit(_)
        | Record::Frame(_)
        | Record::Stack(_)
        | Record::Samples(_)
        | Record::Symbol(_)
        | Record::Lost(_)
        | Record::Index(_)
        | Record::End(_)
        | Record::Unwinding(_)
        | Record::LostMappings(_)
        | Record::OffCpuSamples(_)
        | Record::OffCpu(_)
        | Record::ThreadTimes(_)
        | Record::LostOffCpu(_)
        | Record::Scrubbed(_) => Cow::Borrowed(record),
    }
}

/// The session header as a capture scrubbed of `what` holds it.
pub fn session(what: &Scrubbed, s: &SessionHeader) -> SessionHeader {
    let t = |x: &str| text(what, x).into_owned();
    SessionHeader {
        host: if what.host {
            HOST.to_string()
        } else {
            t(&s.host)
        },
        kernel_release: t(&s.kernel_release),
        arch: t(&s.arch),
        command_line: command_line(what, &s.command_line),
        recorder_version: t(&s.recorder_version),
        ..s.clone()
    }
}

/// A command line: its program name only when arguments are scrubbed; user paths in what
/// is kept.
fn command_line(what: &Scrubbed, argv: &[String]) -> Vec<String> {
    let keep = if what.arguments {
        &argv[..argv.len().min(1)]
    } else {
        argv
    };
    keep.iter().map(|a| text(what, a).into_owned()).collect()
}

/// A string as a capture scrubbed of `what` holds it: user names in paths replaced.
pub fn text<'a>(what: &Scrubbed, s: &'a str) -> Cow<'a, str> {
    if what.user_paths {
        user_paths(s)
    } else {
        Cow::Borrowed(s)
    }
}

/// Every `/home/NAME/` (and `/Users/NAME/`) in `s` with NAME replaced by [`USER`].
pub fn user_paths(s: &str) -> Cow<'_, str> {
    let mut out: Option<String> = None;
    // `done`: bytes of `s` already copied to `out` (or checked, with nothing to change).
    let mut done = 0;
    let mut at = 0;
    while let Some((start, home)) = next_home(s, at) {
        let name_start = start + home.len();
        let rest = &s[name_start..];
        let Some(len) = rest.find('/') else {
            break;
        };
        let name = &rest[..len];
        // No name holds white space: `/home/a b/x` is `/home/a` followed by other text
        // (an argument list, a message), and the next home may start within it.
        if let Some(space) = name.find(char::is_whitespace) {
            at = name_start + space;
            continue;
        }
        at = name_start + len;
        if name.is_empty() || name == USER {
            continue;
        }
        let o = out.get_or_insert_with(|| String::with_capacity(s.len()));
        o.push_str(&s[done..name_start]);
        o.push_str(USER);
        done = name_start + len;
    }
    match out {
        None => Cow::Borrowed(s),
        Some(mut o) => {
            o.push_str(&s[done..]);
            Cow::Owned(o)
        }
    }
}

/// The first home-directory prefix at or after byte `from`: its position and which.
fn next_home(s: &str, from: usize) -> Option<(usize, &'static str)> {
    HOMES
        .iter()
        .filter_map(|h| s[from..].find(h).map(|i| (from + i, *h)))
        .min_by_key(|&(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_names_in_paths_are_replaced_and_nothing_else() {
        let cases = [
            ("/home/alice/src/main.rs", "/home/USER/src/main.rs"),
            ("/Users/bob/lib/x.dylib", "/Users/USER/lib/x.dylib"),
            (
                "{closure@/home/alice/a.rs:3:5} and /home/carol/b/",
                "{closure@/home/USER/a.rs:3:5} and /home/USER/b/",
            ),
            ("/var/home/dave/x", "/var/home/USER/x"),
            ("/home/USER/x", "/home/USER/x"),
            ("/home/swapfile", "/home/swapfile"),
            ("/home//x", "/home//x"),
            ("/root/bin/tool", "/root/bin/tool"),
            ("/usr/lib/libc.so.6", "/usr/lib/libc.so.6"),
            ("/home/ünï/côde", "/home/USER/côde"),
            (
                "--a=/home/alice --b=/home/bob/x",
                "--a=/home/alice --b=/home/USER/x",
            ),
            ("/home/a b/x", "/home/a b/x"),
            ("", ""),
        ];
        for (input, want) in cases {
            assert_eq!(user_paths(input), want, "{input}");
        }
        assert!(matches!(user_paths("/usr/bin/x"), Cow::Borrowed(_)));
    }

    #[test]
    fn command_lines_keep_their_program_name() {
        let p = Record::Process(Process {
            pid: 7,
            name: "sh".into(),
            cmdline: vec![
                "/home/alice/bin/sh".into(),
                "-c".into(),
                "x --password=topsecret".into(),
            ],
            exe: "/home/alice/bin/sh".into(),
            ..Process::default()
        });
        let Record::Process(got) = record(&Scrubbed::ALL, &p).into_owned() else {
            panic!("kind changed")
        };
        assert_eq!(got.cmdline, ["/home/USER/bin/sh"]);
        assert_eq!(got.exe, "/home/USER/bin/sh");
        let only_args = Scrubbed {
            arguments: true,
            ..Scrubbed::default()
        };
        let Record::Process(got) = record(&only_args, &p).into_owned() else {
            panic!("kind changed")
        };
        assert_eq!(
            (got.cmdline.as_slice(), got.exe.as_str()),
            (
                &["/home/alice/bin/sh".to_string()][..],
                "/home/alice/bin/sh"
            )
        );
        assert_eq!(record(&Scrubbed::default(), &p).as_ref(), &p);
    }

    #[test]
    fn the_session_loses_its_host_and_arguments() {
        let s = SessionHeader {
            host: "db-7.example.com".into(),
            command_line: vec!["hotspot".into(), "record".into(), "-a".into()],
            freq_hz: 499,
            ..SessionHeader::default()
        };
        let got = session(&Scrubbed::ALL, &s);
        assert_eq!(got.host, HOST);
        assert_eq!(got.command_line, ["hotspot"]);
        assert_eq!(got.freq_hz, 499);
        let keep_host = Scrubbed {
            host: false,
            ..Scrubbed::ALL
        };
        assert_eq!(session(&keep_host, &s).host, "db-7.example.com");
    }
}
