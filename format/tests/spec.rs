//! SPEC.md documents every record kind and the constants the code uses.

// Tests and tools: a failed unwrap is a test failure with a backtrace.
#![allow(clippy::unwrap_used)]

use hotspot_format::block::SYNC;
use hotspot_format::codec::encode_record;
use hotspot_format::header::MAGIC;
use hotspot_format::{FeatureOff, Record, feature, kind};

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

#[test]
fn the_feature_off_example_is_what_the_codec_writes() {
    let mut framed = Vec::new();
    encode_record(
        &Record::FeatureOff(FeatureOff {
            feature: feature::CFI_UNWINDING,
            instead: "fp".into(),
            reason: "no".into(),
        }),
        &mut framed,
        &mut Vec::new(),
    )
    .unwrap();
    // kind 20, body length 7, then the body SPEC.md spells out.
    assert_eq!(&framed[..2], &[20, 7]);
    let body = hex(&framed[2..]);
    assert_eq!(body, "01 02 66 70 02 6E 6F");
    assert!(
        SPEC.contains(&format!("`{body}`")),
        "SPEC.md's kind 20 example"
    );
}

#[test]
fn every_feature_code_has_a_row() {
    for (code, name) in feature::ALL {
        let row = format!("| `{code}` | `{name}` |");
        assert!(SPEC.contains(&row), "SPEC.md has no row `{row}`");
    }
}
