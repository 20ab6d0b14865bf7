//! Replays the committed inputs of the `read_path` fuzz target (`fuzz/`) through the same
//! checks: every input the fuzzer found a problem with stays fixed. The fixture captures
//! go through them too, so the checks are known to pass on real captures.

#![allow(clippy::unwrap_used)]

mod read_path;

use std::path::{Path, PathBuf};

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}

#[test]
fn fuzz_inputs_still_pass() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_inputs");
    let mut n = 0;
    for path in files(&dir) {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with("read_path-") {
            continue;
        }
        let input = std::fs::read(&path).unwrap();
        eprintln!("{name}");
        read_path::check(&read_path::capture_bytes(&input));
        n += 1;
    }
    assert!(n >= 1, "no inputs in {}", dir.display());
}

#[test]
fn fixture_captures_pass_the_fuzz_checks() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/captures");
    let mut n = 0;
    for path in files(&dir) {
        if path.extension().is_none_or(|e| e != "hsp") {
            continue;
        }
        let data = std::fs::read(&path).unwrap();
        // As a fuzz input in file mode, whose checksum repair changes nothing in a capture
        // that reads whole (a torn one, such as python3-threads-cut.hsp, loses its tail).
        let whole = hotspot_format::Reader::new(&data)
            .is_ok_and(|mut r| r.all(|e| matches!(e, hotspot_format::Event::Block(_))));
        if whole {
            let mut input = vec![0u8];
            input.extend_from_slice(&data);
            assert_eq!(read_path::capture_bytes(&input), data, "{}", path.display());
        }
        read_path::check(&data);
        n += 1;
    }
    assert!(n >= 5, "{n} fixture captures");
}
