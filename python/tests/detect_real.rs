//! Detection on the interpreters installed here: pyenv's 3.8–3.13 (shared, with symbols)
//! and Debian's python3 (static, stripped) are recognised with the version they report
//! themselves; pyenv's 2.7, 3.6 and 3.7 are named unsupported with the reason; the eval
//! loop's cold part found from the code is the one the symbols give (pyenv 3.11, 3.12)
//! and holds every jump target objdump sees leave the hot part (all).

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::process::Command;

use hotspot_python::{
    ColdSource, DetectOptions, Detection, Interpreter, KeyCheck, OffsetsSource, PyVersion, Reason,
    VersionSource, detect, detect_with,
};

fn supported(py: &common::Python, options: DetectOptions) -> Interpreter {
    let data = std::fs::read(&py.elf).unwrap();
    match detect_with(&data, Some(&py.elf.to_string_lossy()), options).unwrap() {
        Detection::Supported(i) => *i,
        other => panic!("{}: {other:?}", py.label),
    }
}

/// `sys.hexversion` of the running interpreter.
fn hexversion(py: &common::Python) -> u64 {
    let out = Command::new(&py.exe)
        .args(["-c", "import sys; print(sys.hexversion)"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}: {out:?}", py.label);
    String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn supported_interpreters_are_recognised_with_their_version() {
    for py in common::supported() {
        let i = supported(&py, DetectOptions::default());
        let running = PyVersion::from_hex(hexversion(&py)).unwrap();
        assert_eq!(i.version.key(), running.key(), "{}", py.label);
        if running.minor >= 11 {
            // Py_Version (and 3.13's _Py_DebugOffsets) give the exact release.
            assert_eq!(i.version, running, "{}", py.label);
        }
        let expected_from = match running.minor {
            13.. => VersionSource::DebugOffsets,
            11 | 12 => VersionSource::PyVersionSymbol,
            _ => VersionSource::FileName,
        };
        assert_eq!(i.version_from, expected_from, "{}", py.label);
        let offsets = if running.minor >= 13 {
            OffsetsSource::DebugOffsets
        } else {
            OffsetsSource::Table
        };
        assert_eq!(i.offsets_from, offsets, "{}", py.label);
        assert_eq!(
            i.key_check,
            KeyCheck::Matched,
            "{}: the key's offset is in the code",
            py.label
        );
        assert!(
            i.eval_loop.hot.end - i.eval_loop.hot.start > 10_000,
            "{}",
            py.label
        );
        assert_eq!(i.walk().minor, running.minor, "{}", py.label);
        println!(
            "{}: CPython {} from {:?}, key at _PyRuntime+{} (checked in the code), cold part {:x?} ({:?})",
            py.label,
            i.version,
            i.version_from,
            i.layout.runtime_tss,
            i.eval_loop.cold,
            i.eval_loop.cold_source
        );
    }
}

#[test]
fn the_exported_api_tells_versions_apart_without_names() {
    let options = DetectOptions {
        version_from_names: false,
        ..DetectOptions::default()
    };
    for py in common::supported() {
        let i = supported(&py, options);
        assert_eq!(i.version.key(), py.minor, "{}", py.label);
        let from = if py.minor.1 >= 13 {
            VersionSource::DebugOffsets
        } else if py.minor.1 >= 11 {
            VersionSource::PyVersionSymbol
        } else {
            VersionSource::Exports
        };
        assert_eq!(i.version_from, from, "{}", py.label);
    }
}

#[test]
fn unsupported_versions_are_named_with_the_reason() {
    for (py, reason) in common::pyenv(&[(2, 7), (3, 6), (3, 7)]).into_iter().zip([
        Reason::Python2,
        Reason::TooOld,
        Reason::TooOld,
    ]) {
        let data = std::fs::read(&py.elf).unwrap();
        let name = py.elf.to_string_lossy();
        let Detection::Unsupported(u) = detect(&data, Some(&name)).unwrap() else {
            panic!("{}: not named unsupported", py.label);
        };
        assert_eq!(u.reason, reason, "{}", py.label);
        assert_eq!(u.version.map(|v| v.key()), Some(py.minor), "{}", py.label);
        let line = u.to_string();
        assert!(
            line.starts_with(&format!(
                "CPython {}.{} not supported: ",
                py.minor.0, py.minor.1
            )),
            "{line}"
        );
        assert!(line.contains("3.8-3.13 are supported"), "{line}");
        // Without its name, 3.6 (no _PyRuntime) and 3.7 (PyContext_New) are still too old.
        let options = DetectOptions {
            version_from_names: false,
            ..DetectOptions::default()
        };
        let Detection::Unsupported(u) = detect_with(&data, None, options).unwrap() else {
            panic!("{}: supported without its name", py.label);
        };
        assert_eq!(u.reason, reason, "{} without its name", py.label);
        println!("{}: {line}", py.label);
    }
}

#[test]
fn launchers_name_the_libpython_they_link() {
    for py in common::pyenv(&[(3, 8), (3, 13)]) {
        let data = std::fs::read(&py.exe).unwrap();
        let d = detect(&data, Some(&py.exe.to_string_lossy())).unwrap();
        let lib = py.elf.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(
            d,
            Detection::NotPython(hotspot_python::NotPython {
                links_libpython: Some(lib)
            }),
            "{}",
            py.label
        );
    }
    let libc = std::fs::read("/lib/x86_64-linux-gnu/libc.so.6").unwrap();
    assert!(matches!(
        detect(&libc, Some("libc.so.6")).unwrap(),
        Detection::NotPython(hotspot_python::NotPython {
            links_libpython: None
        })
    ));
}

/// Distinct targets of the direct jumps objdump sees in `hot` that land outside it.
fn objdump_outside_targets(elf: &std::path::Path, hot: &std::ops::Range<u64>) -> BTreeSet<u64> {
    let out = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(format!("--start-address={:#x}", hot.start))
        .arg(format!("--stop-address={:#x}", hot.end))
        .arg(elf)
        .output()
        .expect("objdump (binutils)");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let mut targets = BTreeSet::new();
    for line in text.lines() {
        // "  52b10a:\tjne    430f05 <...>"
        let mut fields = line.split('\t').skip(1);
        let Some(insn) = fields.next() else { continue };
        let mut words = insn.split_whitespace();
        let (Some(mnemonic), Some(target)) = (words.next(), words.next()) else {
            continue;
        };
        if !mnemonic.starts_with('j') || target.starts_with('*') {
            continue;
        }
        if let Ok(t) = u64::from_str_radix(target, 16)
            && !hot.contains(&t)
        {
            targets.insert(t);
        }
    }
    targets
}

/// Detection finding the cold part from the code, not from `.symtab`.
const BY_CODE: DetectOptions = DetectOptions {
    cold_from_symbols: false,
    version_from_names: true,
};

#[test]
fn the_cold_part_holds_every_jump_out_of_the_hot_part() {
    for py in common::supported() {
        let i = supported(&py, BY_CODE);
        let outside = objdump_outside_targets(&py.elf, &i.eval_loop.hot);
        let in_cold = outside
            .iter()
            .filter(|t| i.eval_loop.cold.iter().any(|r| r.contains(t)))
            .count();
        let ColdSource::Code {
            jump_targets,
            table_entries,
            unexplained,
        } = i.eval_loop.cold_source
        else {
            panic!("{}: {:?}", py.label, i.eval_loop.cold_source);
        };
        assert_eq!(
            unexplained, 0,
            "{}: a jump out of the hot part lands in no piece",
            py.label
        );
        // objdump sees the hot part's jumps only; the pieces' own jumps come on top.
        assert!(jump_targets >= in_cold, "{}", py.label);
        println!(
            "{}: objdump sees {} jump targets out of the hot part, {in_cold} in the cold part \
             {:x?} ({jump_targets} jump targets, {table_entries} opcode-table entries)",
            py.label,
            outside.len(),
            i.eval_loop.cold
        );
        if py.label.starts_with("debian") {
            // Debian's build, stripped, is the one whose cold part has no name: the notes
            // count 314 jump targets there, all in it.
            assert_eq!(in_cold, outside.len(), "{}", py.label);
            assert!(in_cold >= 300, "{}: {in_cold}", py.label);
            assert!(
                table_entries > 0,
                "{}: its opcode table points into the cold part",
                py.label
            );
        }
    }
}

#[test]
fn the_cold_part_from_the_code_covers_the_one_the_symbols_name() {
    let mut compared = 0;
    for py in common::pyenv(&[(3, 8), (3, 9), (3, 10), (3, 11), (3, 12), (3, 13)]) {
        let named = supported(&py, DetectOptions::default()).eval_loop;
        let found = supported(&py, BY_CODE).eval_loop;
        if named.cold_source != ColdSource::Symbols {
            assert_eq!(
                found.cold, named.cold,
                "{}: no .cold symbol, no cold part",
                py.label
            );
            continue;
        }
        // The FDE of a `.cold` symbol may extend past the symbol; it must cover it.
        for n in &named.cold {
            assert!(
                found
                    .cold
                    .iter()
                    .any(|f| f.start <= n.start && n.end <= f.end),
                "{}: {n:x?} (symbol) not in {:x?} (code)",
                py.label,
                found.cold
            );
        }
        println!(
            "{}: cold part {:x?} from the code ({:?}), {:x?} from the symbols",
            py.label, found.cold, found.cold_source, named.cold
        );
        compared += 1;
    }
    assert!(
        compared >= 1 || std::env::var("HOTSPOT_TEST_PYENV").is_ok(),
        "no build with .cold symbols to compare"
    );
}
