//! The line-table decoders against CPython itself: under every installed interpreter
//! (3.8–3.13, Debian's), `scripts/line_tables.py` prints for each code object of a
//! synthetic module, itself and six standard-library modules its raw table and, for every
//! instruction offset, `PyCode_Addr2Line` (what `frame.f_lineno` reports) and the
//! Python-level answer (`co_positions`, `co_lines`, `dis.findlinestarts` by version). The
//! decoder, picked by detection from the interpreter's ELF, must give the same line at
//! every offset.

#![allow(clippy::unwrap_used)]

mod common;

use std::process::Command;

use hotspot_python::{Detection, LineTable, detect};

#[derive(serde::Deserialize)]
struct Code {
    file: String,
    qualname: String,
    first: u32,
    table: String,
    nbytes: usize,
    addr2line: Vec<i64>,
    python: Vec<Option<i64>>,
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn every_offset_has_cpythons_line() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/line_tables.py");
    for py in common::supported() {
        let data = std::fs::read(&py.elf).unwrap();
        let Detection::Supported(interp) = detect(&data, Some(&py.elf.to_string_lossy())).unwrap()
        else {
            panic!("{}: not supported", py.label);
        };
        let format = interp.layout.code.line_format;
        let out = Command::new(&py.exe).arg(script).output().unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            py.label,
            String::from_utf8_lossy(&out.stderr)
        );
        let (mut codes, mut offsets, mut no_line) = (0, 0, 0);
        for line in String::from_utf8(out.stdout).unwrap().lines() {
            let c: Code = serde_json::from_str(line).unwrap();
            let table = LineTable::decode(format, c.first, &hex(&c.table))
                .unwrap_or_else(|e| panic!("{}: {} {}: {e}", py.label, c.file, c.qualname));
            assert_eq!(c.addr2line.len(), c.nbytes / 2);
            for (i, (&want, python)) in c.addr2line.iter().zip(&c.python).enumerate() {
                let offset = 2 * i as u32;
                let got = table.line_at(offset).map(i64::from);
                let want = (want >= 0).then_some(want);
                assert_eq!(
                    got, want,
                    "{}: {} {} at byte {offset}: PyCode_Addr2Line says {want:?}",
                    py.label, c.file, c.qualname
                );
                assert_eq!(
                    got, *python,
                    "{}: {} {} at byte {offset}: the Python-level answer is {python:?}",
                    py.label, c.file, c.qualname
                );
                offsets += 1;
                no_line += usize::from(got.is_none());
            }
            codes += 1;
        }
        assert!(codes > 500, "{}: only {codes} code objects", py.label);
        println!(
            "{}: {format:?}: {codes} code objects, {offsets} instruction offsets ({no_line} without a line), all as CPython",
            py.label
        );
    }
}
