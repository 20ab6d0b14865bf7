//! Writes the committed test fixture `fixtures/captures/synthetic-v1.hsp`.
//!
//! Run from the repository root:
//! `cargo run -p hotspot-format --example make_fixture -- fixtures/captures/synthetic-v1.hsp`

// Tests and tools: a failed unwrap is a test failure with a backtrace.
#![allow(clippy::unwrap_used)]

use hotspot_testkit::synthetic::fixture;

fn main() -> std::io::Result<()> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "fixtures/captures/synthetic-v1.hsp".into());
    let f = fixture::build();
    std::fs::write(&path, &f.bytes)?;
    println!(
        "wrote {path}: {} bytes, {} samples, {} records",
        f.bytes.len(),
        f.samples.len(),
        f.records.len()
    );
    Ok(())
}
