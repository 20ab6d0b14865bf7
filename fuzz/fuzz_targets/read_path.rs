//! The whole read path: arbitrary bytes (as a file whose block checksums are repaired, or
//! as record payloads packed into valid blocks) through the reader, the capture and scan,
//! `info`, every `report` format, `diff` against itself and every view of the TUI, checking
//! that no output carries terminal controls (see `tui/tests/read_path/mod.rs`).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tui/tests/read_path/mod.rs"]
mod read_path;

fuzz_target!(|input: &[u8]| {
    read_path::check(&read_path::capture_bytes(input));
});
