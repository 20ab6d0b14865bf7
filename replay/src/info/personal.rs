//! What a capture holds about the machine and its people (host name, kernel, command-line
//! arguments, user names in paths, thread names), whether it was scrubbed, and its marks:
//! what someone about to attach it to a ticket needs to know. Which strings hold a user
//! name is `hotspot_format::scrub`'s rule, the one `hotspot scrub` applies.

use std::fmt::Write;

use hotspot_format::Scrubbed;
use hotspot_format::scrub;
use serde::Serialize;

use super::Facts;
use crate::capture::Capture;
use crate::sanitize::display;

/// The personal strings a capture holds, counted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Personal {
    /// The host name (absent, or scrubbed, is `false`).
    pub host: bool,
    /// The kernel release (`uname -r`).
    pub kernel_release: bool,
    /// Command lines with arguments beyond the program name: the processes' and the
    /// recorder's own.
    pub command_lines_with_arguments: usize,
    /// Distinct strings naming a path under a person's home directory (`/home/NAME/…`).
    pub home_paths: usize,
    /// Threads with a name.
    pub thread_names: usize,
    /// Environment variables: a capture never holds any.
    pub environment: usize,
}

/// Counts what `c` holds.
pub fn personal(c: &Capture) -> Personal {
    let session = c.session.as_ref();
    let has_user = |s: &str| matches!(scrub::user_paths(s), std::borrow::Cow::Owned(_));
    let mut homes: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
    let strings = c
        .strings
        .values()
        .map(|s| &**s)
        .chain(c.modules.values().map(|m| m.path.as_str()))
        .chain(
            c.processes
                .values()
                .flat_map(|p| p.cmdline.iter().chain([&p.exe, &p.name]))
                .map(String::as_str),
        )
        .chain(
            session
                .into_iter()
                .flat_map(|s| s.command_line.iter().map(String::as_str)),
        )
        .chain(c.threads.values().map(|t| t.name()))
        .chain(c.marks.iter().map(|m| m.text.as_str()));
    for s in strings {
        if has_user(s) {
            homes.insert(s);
        }
    }
    let with_args = |argv: &[String]| argv.len() > 1;
    Personal {
        host: session.is_some_and(|s| !s.host.is_empty() && s.host != scrub::HOST),
        kernel_release: session.is_some_and(|s| !s.kernel_release.is_empty()),
        command_lines_with_arguments: c
            .processes
            .values()
            .filter(|p| with_args(&p.cmdline))
            .count()
            + usize::from(session.is_some_and(|s| with_args(&s.command_line))),
        home_paths: homes.len(),
        thread_names: c.threads.values().filter(|t| !t.name().is_empty()).count(),
        environment: 0,
    }
}

/// What was scrubbed, in words.
fn scrubbed_words(s: &Scrubbed) -> String {
    let parts: Vec<&str> = [
        (s.arguments, "command-line arguments"),
        (s.host, "the host name"),
        (s.user_paths, "user names in paths"),
    ]
    .into_iter()
    .filter_map(|(on, w)| on.then_some(w))
    .collect();
    if parts.is_empty() {
        "nothing (rewritten by `hotspot scrub` with everything kept)".into()
    } else {
        parts.join(", ")
    }
}

/// The `personal:`, `scrubbed:` and `marks:` lines of `info`.
pub fn text(o: &mut String, f: &Facts) {
    let c = f.capture;
    let p = personal(c);
    let mut held = Vec::new();
    if p.host {
        held.push("host name".to_string());
    }
    if p.kernel_release {
        held.push("kernel release".to_string());
    }
    let count =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    if p.command_lines_with_arguments > 0 {
        held.push(count(
            p.command_lines_with_arguments,
            "command line with arguments",
            "command lines with arguments",
        ));
    }
    if p.home_paths > 0 {
        held.push(count(
            p.home_paths,
            "path under a home directory",
            "paths under home directories",
        ));
    }
    if p.thread_names > 0 {
        held.push(count(p.thread_names, "thread name", "thread names"));
    }
    let held = if held.is_empty() {
        "nothing".to_string()
    } else {
        held.join(", ")
    };
    let _ = writeln!(o, "personal:   {held}; no environment");
    match &c.scrubbed {
        Some(s) => {
            let _ = writeln!(o, "scrubbed:   {}", scrubbed_words(s));
        }
        None => {
            let _ = writeln!(
                o,
                "scrubbed:   no (`hotspot scrub` removes arguments, the host name, user names in paths)"
            );
        }
    }
    if !c.marks.is_empty() {
        let _ = writeln!(o, "marks:      {}", c.marks.len());
        for m in &c.marks {
            let _ = writeln!(
                o,
                "  {:>10.3} s  {}",
                f.offset_s(m.time_ns),
                display(&m.text)
            );
        }
    }
}

pub use crate::export::summary::MarkJson;

/// The marks for the JSON document.
pub fn marks_json(f: &Facts) -> Vec<MarkJson> {
    crate::export::summary::marks_of(f.capture, f.counts.clock)
}
