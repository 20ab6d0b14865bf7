//! What the tests run against: the CPython interpreters installed on the machine (pyenv's
//! shared builds, with symbols and DWARF, and Debian's static, stripped `/usr/bin/python3`).
//!
//! pyenv's root is `$PYENV_ROOT`, else `~/.pyenv`. Every minor version 3.8–3.13 must be
//! there (and 2.7, 3.6, 3.7 for the unsupported ones): a test that found none would pass
//! without checking anything. `HOTSPOT_TEST_PYENV=3.11,3.12` narrows the list on purpose
//! (`HOTSPOT_TEST_PYENV=none` for a machine with Debian's python3 only); the tests print
//! what they ran on.

#![allow(dead_code, clippy::unwrap_used)]

pub mod dwarf;

use std::path::{Path, PathBuf};

/// One interpreter.
#[derive(Debug, Clone)]
pub struct Python {
    /// `pyenv 3.11.7` or `debian 3.11`.
    pub label: String,
    /// The executable to run.
    pub exe: PathBuf,
    /// The ELF file the interpreter is in: pyenv's `libpython3.X.so.1.0`, Debian's
    /// executable itself.
    pub elf: PathBuf,
    pub minor: (u8, u8),
    /// Whether `elf` has DWARF (pyenv's do, Debian's has not).
    pub dwarf: bool,
}

fn pyenv_root() -> PathBuf {
    if let Some(r) = std::env::var_os("PYENV_ROOT") {
        return PathBuf::from(r);
    }
    Path::new(&std::env::var_os("HOME").expect("HOME is set")).join(".pyenv")
}

/// The minor versions asked for, of those `wanted`.
fn expected(wanted: &[(u8, u8)]) -> Vec<(u8, u8)> {
    match std::env::var("HOTSPOT_TEST_PYENV") {
        Ok(list) if list == "none" => Vec::new(),
        Ok(list) => wanted
            .iter()
            .copied()
            .filter(|(a, b)| list.split(',').any(|v| v.trim() == format!("{a}.{b}")))
            .collect(),
        Err(_) => wanted.to_vec(),
    }
}

/// pyenv's newest patch release of each minor version in `wanted` (as narrowed by
/// `HOTSPOT_TEST_PYENV`); panics naming the missing ones.
pub fn pyenv(wanted: &[(u8, u8)]) -> Vec<Python> {
    let root = pyenv_root().join("versions");
    let mut found: Vec<(u8, u8, u8, PathBuf)> = Vec::new();
    if let Ok(dir) = std::fs::read_dir(&root) {
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let parts: Vec<Option<u8>> = name.split('.').map(|p| p.parse().ok()).collect();
            if let [Some(a), Some(b), Some(c)] = parts[..] {
                found.push((a, b, c, e.path()));
            }
        }
    }
    let mut out = Vec::new();
    let mut missing = Vec::new();
    for (a, b) in expected(wanted) {
        let Some((_, _, c, path)) = found
            .iter()
            .filter(|(x, y, _, _)| (*x, *y) == (a, b))
            .max_by_key(|(_, _, c, _)| *c)
        else {
            missing.push(format!("{a}.{b}"));
            continue;
        };
        let lib_dir = path.join("lib");
        let lib = ["", "m"]
            .iter()
            .map(|abi| lib_dir.join(format!("libpython{a}.{b}{abi}.so.1.0")))
            .find(|p| p.exists())
            .unwrap_or_else(|| {
                panic!(
                    "{}: no libpython{a}.{b}.so.1.0 (not a shared build)",
                    path.display()
                )
            });
        let exe = path.join("bin").join(format!("python{a}.{b}"));
        out.push(Python {
            label: format!("pyenv {a}.{b}.{c}"),
            exe,
            elf: lib,
            minor: (a, b),
            dwarf: true,
        });
    }
    assert!(
        missing.is_empty(),
        "pyenv has no CPython {} under {} (install with `pyenv install`, with \
         PYTHON_CONFIGURE_OPTS=--enable-shared; or narrow the list with HOTSPOT_TEST_PYENV)",
        missing.join(", "),
        root.display()
    );
    out
}

/// Debian's `/usr/bin/python3` (static, stripped), resolved to `python3.X`.
pub fn debian() -> Python {
    let exe = std::fs::canonicalize("/usr/bin/python3")
        .expect("/usr/bin/python3 (Debian's python3 package, installed by .ci/run)");
    let (v, _) = hotspot_python::PyVersion::from_file_name(&exe.to_string_lossy())
        .unwrap_or_else(|| panic!("{}: no version in the name", exe.display()));
    Python {
        label: format!("debian {}.{}", v.major, v.minor),
        exe: exe.clone(),
        elf: exe,
        minor: (v.major, v.minor),
        dwarf: false,
    }
}

/// Every supported interpreter: pyenv's 3.8–3.13 and Debian's.
pub fn supported() -> Vec<Python> {
    let mut all = pyenv(&[(3, 8), (3, 9), (3, 10), (3, 11), (3, 12), (3, 13)]);
    all.push(debian());
    all
}
