//! SPEC.md documents every record kind and the constants the code uses.

// Tests and tools: a failed unwrap is a test failure with a backtrace.
#![allow(clippy::unwrap_used)]

use hotspot_format::block::SYNC;
use hotspot_format::header::MAGIC;
use hotspot_format::kind;

const SPEC: &str = include_str!("../../SPEC.md");

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn every_record_kind_has_a_section() {
    let headings: Vec<&str> = SPEC
        .lines()
        .filter(|l| l.starts_with("### Kind "))
        .collect();
    for (number, name) in kind::ALL {
        let want = format!("### Kind {number}: {name}");
        assert!(
            headings.contains(&want.as_str()),
            "SPEC.md has no section `{want}`"
        );
    }
    assert_eq!(
        headings.len(),
        kind::ALL.len(),
        "SPEC.md documents unknown kinds: {headings:?}"
    );
}

#[test]
fn magic_and_sync_marker_match() {
    assert!(SPEC.contains(&hex(&MAGIC)), "magic {}", hex(&MAGIC));
    assert!(SPEC.contains(&hex(&SYNC)), "sync {}", hex(&SYNC));
}
