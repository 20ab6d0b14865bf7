//! Detection on fake interpreters (gcc-built libraries exporting what detection reads,
//! `hotspot_testkit::python::craft`): a faithful fake is supported, stripped or not, and
//! every way a file can be unsupported, inconsistent or crafted is named, never a panic.

#![allow(clippy::unwrap_used)]

use hotspot_python::debug_offsets::{DebugOffsetsError, FIELDS};
use hotspot_python::{
    ColdSource, Detection, Interpreter, OffsetsSource, PyVersion, Reason, detect,
};
use hotspot_testkit::python::craft::FakePython;

fn verdict(fake: &FakePython, tag: &str, name: &str) -> Detection {
    let path = fake.build(tag, name);
    detect(
        &std::fs::read(&path).unwrap(),
        Some(&path.to_string_lossy()),
    )
    .unwrap()
}

fn supported(d: Detection) -> Interpreter {
    match d {
        Detection::Supported(i) => *i,
        other => panic!("{other:?}"),
    }
}

fn reason(d: Detection) -> (Option<PyVersion>, Reason) {
    match d {
        Detection::Unsupported(u) => (u.version, u.reason),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_faithful_fake_is_supported_stripped_or_not() {
    let fake = FakePython::new(0x030C_01F0);
    let named = supported(verdict(&fake, "3.12", "libpython3.12.so"));
    assert_eq!(named.version.to_string(), "3.12.1");
    assert_eq!(named.eval_loop.cold_source, ColdSource::Symbols);
    let stripped = supported(verdict(
        &FakePython {
            stripped: true,
            ..fake
        },
        "3.12-stripped",
        "libpython3.12.so",
    ));
    assert!(matches!(
        stripped.eval_loop.cold_source,
        ColdSource::Code {
            jump_targets: 1..,
            unexplained: 0,
            ..
        }
    ));
    assert_eq!(
        stripped.eval_loop.cold, named.eval_loop.cold,
        "the unnamed cold part is found"
    );
}

#[test]
fn a_3_13_fake_is_described_by_its_debug_offsets() {
    let i = supported(verdict(
        &FakePython::new(0x030D_02F0),
        "3.13",
        "libpython3.13.so",
    ));
    assert_eq!(i.version.to_string(), "3.13.2");
    assert_eq!(i.offsets_from, OffsetsSource::DebugOffsets);
    assert_eq!(
        (
            i.layout.thread.frame,
            i.layout.frame.instr,
            i.layout.code.qualname
        ),
        (72, 56, Some(128))
    );
    assert_eq!(
        (i.layout.unicode.ascii_data, i.layout.unicode.compact_data),
        (40, 56)
    );
}

#[test]
fn every_unsupported_build_is_named() {
    let v = |hex| PyVersion::from_hex(hex);
    // 3.14 describes itself in a layout hotspot does not read.
    let mut f = FakePython::new(0x030E_00F0);
    assert_eq!(
        reason(verdict(&f, "3.14", "libpython3.14.so")),
        (v(0x030E_00F0), Reason::TooNew)
    );
    // Free-threaded, by _Py_DebugOffsets or by name.
    f = FakePython::new(0x030D_00F0);
    f.runtime_prefix[16] = 1;
    assert_eq!(
        reason(verdict(&f, "3.13t", "libpython3.13.so")).1,
        Reason::FreeThreaded
    );
    let f = FakePython::new(0x030D_00F0);
    assert_eq!(
        reason(verdict(&f, "3.13t-name", "libpython3.13t.so")).1,
        Reason::FreeThreaded
    );
    // A debug build.
    let mut f = FakePython::new(0x030B_07F0);
    f.extra.push("_Py_NegativeRefcount");
    assert_eq!(
        reason(verdict(&f, "debug", "libpython3.11d.so")).1,
        Reason::DebugBuild
    );
    // Python 2.
    let mut f = FakePython::new(0x030B_07F0);
    f.py_version = None;
    f.extra.push("Py_InitModule4_64");
    assert_eq!(
        reason(verdict(&f, "py2", "libpython2.7.so")),
        (Some(PyVersion::minor(2, 7)), Reason::Python2)
    );
    // 3.13 without its cookie.
    let mut f = FakePython::new(0x030D_00F0);
    f.runtime_prefix.clear();
    assert_eq!(
        reason(verdict(&f, "3.13-nocookie", "libpython3.13.so")).1,
        Reason::DebugOffsets(DebugOffsetsError::NoCookie)
    );
}

#[test]
fn inconsistent_or_crafted_files_are_refused() {
    // The key read elsewhere than the table says.
    let mut f = FakePython::new(0x030B_07F0);
    f.tss_offset = 600;
    assert_eq!(
        reason(verdict(&f, "key", "libpython3.11.so")).1,
        Reason::KeyOffsetMismatch {
            table: 592,
            binary: 600
        }
    );
    // A type object missing.
    let mut f = FakePython::new(0x030C_01F0);
    f.without.push("PyCode_Type");
    assert_eq!(
        reason(verdict(&f, "notype", "libpython3.12.so")).1,
        Reason::MissingSymbol("PyCode_Type")
    );
    // Py_Version against the file name, and against _Py_DebugOffsets.
    let f = FakePython::new(0x030C_01F0);
    assert!(matches!(
        reason(verdict(&f, "conflict", "libpython3.11.so")).1,
        Reason::VersionConflict(a, b) if a.minor == 12 && b.minor == 11
    ));
    let mut f = FakePython::new(0x030D_00F0);
    f.py_version = Some(0x030C_00F0);
    assert!(matches!(
        reason(verdict(&f, "conflict-dbg", "x.so")).1,
        Reason::VersionConflict(..)
    ));
    // _Py_DebugOffsets pointing outside its structs.
    let mut f = FakePython::new(0x030D_00F0);
    let at = FIELDS
        .iter()
        .find(|(n, _)| *n == "code_object.qualname")
        .unwrap()
        .1;
    f.runtime_prefix[at..at + 8].copy_from_slice(&10_000u64.to_le_bytes());
    assert!(matches!(
        reason(verdict(&f, "outside", "libpython3.13.so")).1,
        Reason::DebugOffsets(DebugOffsetsError::OutOfStruct {
            field: "code_object.qualname",
            ..
        })
    ));
}

#[test]
fn truncated_and_foreign_bytes_are_errors_or_verdicts() {
    assert!(detect(b"\x7fELF but not really", None).is_err());
    assert!(detect(&[], None).is_err());
    let path = FakePython::new(0x030C_01F0).build("3.12-cut", "libpython3.12.so");
    let data = std::fs::read(path).unwrap();
    for cut in (0..data.len()).step_by(97) {
        let _ = detect(&data[..cut], Some("libpython3.12.so"));
    }
}
