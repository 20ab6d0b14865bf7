//! `record --scrub` (issue 28), as root with the real BPF recorder: the command line of a
//! recorded `sh -c '… --password=topsecret'` (which a plain recording keeps, for `sh`)
//! and the host name are in none of the scrubbed capture's records, whose profile still
//! has its samples and says it was scrubbed. Needs root, like `record_e2e`.

// Tests and tools: a failed unwrap is a test failure with a backtrace.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use hotspot_testkit::e2e::{hotspot, record_cmd, run_ok, tmp};

const SECRET: &str = "topsecret";
const SCRIPT: &str = "x=0; while [ $x -lt 300000 ]; do x=$((x+1)); done; : --password=topsecret";

/// Every record of the capture re-encoded: what its decompressed blocks hold.
fn record_bytes(path: &Path) -> Vec<u8> {
    let data = std::fs::read(path).unwrap();
    let mut out = Vec::new();
    let mut scratch = Vec::new();
    for event in hotspot_format::Reader::new(&data).unwrap() {
        if let hotspot_format::Event::Block(b) = event {
            for r in &b.records {
                hotspot_format::codec::encode_record(r, &mut out, &mut scratch).unwrap();
            }
        }
    }
    out
}

fn holds(bytes: &[u8], s: &str) -> bool {
    bytes.windows(s.len()).any(|w| w == s.as_bytes())
}

#[test]
fn record_scrub_keeps_no_command_line_argument_nor_host() {
    // The host name may be as short as `vm`, which kernel symbols hold too: it is looked
    // for where the session keeps it.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let host = host.trim();
    let d = tmp();
    let plain = d.path().join("plain.hsp");
    let c = record_cmd(&plain, &[], &["sh", "-c", SCRIPT]);
    assert!(
        c.processes
            .values()
            .any(|p| p.cmdline.join(" ").contains(SECRET)),
        "a plain recording should hold the command line: {:?}",
        c.processes
    );
    assert_eq!(c.session.as_ref().unwrap().host, host);

    let scrubbed = d.path().join("scrubbed.hsp");
    let c = record_cmd(&scrubbed, &["--scrub"], &["sh", "-c", SCRIPT]);
    assert!(
        !c.samples.is_empty(),
        "the scrubbed recording has no samples"
    );
    assert!(
        c.processes.values().any(|p| p.name == "sh"),
        "{:?}",
        c.processes
    );
    let bytes = record_bytes(&scrubbed);
    assert!(
        !holds(&bytes, SECRET),
        "the secret is in the scrubbed capture"
    );
    assert!(
        !holds(&bytes, host),
        "the host name is in the scrubbed capture"
    );
    assert!(
        !holds(&bytes, "--scrub"),
        "the recorder's own arguments are kept"
    );
    assert_eq!(c.scrubbed, Some(hotspot_format::Scrubbed::ALL));
    let info = run_ok(hotspot().arg("info").arg(&scrubbed)).stdout;
    let info = String::from_utf8(info).unwrap();
    assert!(
        info.contains("scrubbed:   command-line arguments, the host name, user names in paths"),
        "{info}"
    );
}
