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

#[test]
fn the_title_and_the_header_name_the_version_written() {
    let minor = hotspot_format::header::MINOR;
    let major = hotspot_format::header::MAJOR;
    assert!(
        SPEC.starts_with(&format!(
            "# The hotspot capture format, version {major}.{minor}\n"
        )),
        "SPEC.md's title"
    );
    assert!(
        SPEC.contains(&format!("| 10 | 2 | minor version | u16, `{minor}` (")),
        "SPEC.md's minor version row"
    );
    assert!(
        SPEC.contains(&format!("\n| {major}.{minor} | ")),
        "SPEC.md's history has no row for {major}.{minor}"
    );
}

/// A kind's "Added in 1.N" and the history row of 1.N say the same: no kind is claimed by
/// a version this writer does not write, or left out of the version that added it.
#[test]
fn every_added_kind_is_in_its_versions_history_row() {
    let minor = hotspot_format::header::MINOR;
    let lines: Vec<&str> = SPEC.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let Some(heading) = line.strip_prefix("### Kind ") else {
            continue;
        };
        let (number, name) = heading.split_once(": ").unwrap();
        let Some(added) = lines[i + 1..]
            .iter()
            .take_while(|l| !l.starts_with("### "))
            .find_map(|l| l.strip_prefix("Added in 1."))
        else {
            continue;
        };
        let version: u16 = added.split('.').next().unwrap().parse().unwrap();
        assert!(version <= minor, "kind {number} added in 1.{version}");
        let row = lines
            .iter()
            .find(|l| l.starts_with(&format!("| 1.{version} | ")))
            .unwrap_or_else(|| panic!("no history row for 1.{version}"));
        assert!(
            row.contains(&format!("{number} `{name}`")),
            "the 1.{version} row does not name kind {number} `{name}`: {row}"
        );
    }
}

/// The example records §5 spells out byte by byte are what the encoder writes.
#[test]
fn the_1_6_examples_match() {
    use hotspot_format::{Mark, Scrubbed};
    let mut scratch = Vec::new();
    for (record, want) in [
        (
            Record::Mark(Mark {
                time_ns: 5,
                text: "go".into(),
            }),
            "17 04 05 02 67 6F",
        ),
        (Record::Scrubbed(Scrubbed::ALL), "18 03 01 01 01"),
    ] {
        let mut out = Vec::new();
        encode_record(&record, &mut out, &mut scratch).unwrap();
        assert_eq!(hex(&out), want);
        assert!(
            SPEC.contains(&format!("`{want}`")),
            "SPEC.md lacks `{want}`"
        );
    }
}
