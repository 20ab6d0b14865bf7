//! Replays `tests/fuzz_inputs/` through the CPython fuzz targets' checks
//! (`hotspot_testkit::python::fuzz_check`), and checks their seeds too: `python_memory-*`
//! files through the decoders' check, `python_elf-*` through detection's. A 300-second run
//! of each target found nothing (python_memory: 6.0 million inputs, python_elf: 3.8
//! million); `*-corpus-*` are corpus inputs of that run kept so that each outcome stays
//! covered (a code object decoded with and without lines per layout, each decoding error;
//! a mutated fake supported with its cold part from the code, a `PyThread_tss_get` reading
//! the key elsewhere, a non-x86-64 header). Anything a run finds goes here, minimised, as
//! `python_memory-crash-<hash>` or `python_elf-crash-<hash>`.
//!
//! `HS_FUZZ_SEEDS=DIR cargo test -p hotspot-python --test fuzz_inputs` writes the seeds
//! to `DIR/python_memory` and `DIR/python_elf` (DIR absolute, e.g. `$PWD/fuzz/corpus`;
//! cargo runs tests in `python/`): a memory image
//! per layout with a code object, its strings, line table and a frame naming it; fake
//! interpreters built with gcc (3.11, 3.12 stripped, 3.13).

#![allow(clippy::unwrap_used)]

use hotspot_python::{Layout, PyVersion, RegionMemory, TypeAddresses, read_code};
use hotspot_testkit::python::craft::FakePython;
use hotspot_testkit::python::fuzz_check::{BASE, check_elf, check_memory, seed_memory};

fn seeds() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for minor in 8..=12 {
        out.push((format!("python_memory/seed-3.{minor}"), seed_memory(minor)));
    }
    for (tag, fake) in [
        ("3.11", FakePython::new(0x030B_07F0)),
        (
            "3.12-stripped",
            FakePython {
                stripped: true,
                ..FakePython::new(0x030C_01F0)
            },
        ),
        ("3.13", FakePython::new(0x030D_00F0)),
    ] {
        let path = fake.build(&format!("seed-{tag}"), "libpython.so");
        out.push((
            format!("python_elf/seed-{tag}"),
            std::fs::read(path).unwrap(),
        ));
    }
    out
}

#[test]
fn seeds_reach_the_decoders() {
    // The memory seeds are what they claim: a code object the decoder reads whole.
    for minor in 8..=12 {
        let input = seed_memory(minor);
        let mut mem = RegionMemory::new();
        mem.add(BASE, input[13..].to_vec());
        let layout = Layout::for_version(PyVersion::minor(3, minor)).unwrap();
        let code = read_code(&mem, &layout, &TypeAddresses::default(), BASE + 0x100).unwrap();
        assert_eq!(
            (
                code.qualname.as_str(),
                code.filename.as_str(),
                code.first_line
            ),
            ("f", "a.py", 5)
        );
        let instr = u64::from_le_bytes(input[1..9].try_into().unwrap());
        assert!(
            code.line_at(instr).is_some(),
            "3.{minor}: the seed's frame has a line"
        );
    }
    for (name, bytes) in seeds() {
        if name.starts_with("python_memory") {
            check_memory(&bytes);
        } else {
            check_elf(&bytes);
        }
    }
    if let Some(dir) = std::env::var_os("HS_FUZZ_SEEDS") {
        for (name, bytes) in seeds() {
            let path = std::path::Path::new(&dir).join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, bytes).unwrap();
        }
    }
}

#[test]
fn fuzz_inputs_still_pass() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fuzz_inputs");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(&path).unwrap();
        if name.starts_with("python_memory-") {
            check_memory(&bytes);
        } else if name.starts_with("python_elf-") {
            check_elf(&bytes);
        } else {
            continue;
        }
        n += 1;
    }
    println!("{n} regression inputs");
}
