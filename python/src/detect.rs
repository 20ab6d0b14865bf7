//! Recognising CPython from an ELF file alone (an executable with the interpreter linked
//! in, or a `libpython` shared library): which version, whether hotspot supports it and
//! why not, and for a supported one everything the recorder needs, as file addresses.

use thiserror::Error;

use crate::debug_offsets::{DebugHeader, DebugOffsets, DebugOffsetsError};
use crate::elf::{ElfError, ElfImage, Sym};
use crate::eval_loop::{self, EvalLoop};
use crate::layout::Layout;
use crate::tss_key;
use crate::version::{FIRST_IN, PyVersion};
use crate::walk::WalkDescription;

/// Exported symbols detection looks at.
const RUNTIME: &str = "_PyRuntime";
const EVAL: &str = "_PyEval_EvalFrameDefault";
const GILSTATE: &str = "PyGILState_GetThisThreadState";
const TSS_GET: &str = "PyThread_tss_get";
const CODE_TYPE: &str = "PyCode_Type";
const STR_TYPE: &str = "PyUnicode_Type";
const BYTES_TYPE: &str = "PyBytes_Type";
const PY_VERSION: &str = "Py_Version";
/// Python 2's module init, in every 2.x build.
const PYTHON2: [&str; 2] = ["Py_InitModule4_64", "Py_InitModule4"];
/// Defined with `Py_REF_DEBUG`, which every debug build (`--with-pydebug`) has.
const DEBUG_BUILD: [&str; 3] = ["_Py_NegativeRefcount", "_Py_RefTotal", "_Py_GetRefTotal"];

const NAMES: [&str; 21] = [
    RUNTIME,
    EVAL,
    GILSTATE,
    TSS_GET,
    CODE_TYPE,
    STR_TYPE,
    BYTES_TYPE,
    PY_VERSION,
    PYTHON2[0],
    PYTHON2[1],
    DEBUG_BUILD[0],
    DEBUG_BUILD[1],
    DEBUG_BUILD[2],
    FIRST_IN[1].0,
    FIRST_IN[2].0,
    FIRST_IN[3].0,
    FIRST_IN[4].0,
    "Py_BytesMain",
    "Py_Main",
    "PyEval_EvalFrameEx",
    "Py_GetVersion",
];

/// What an ELF file is, to hotspot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detection {
    /// No CPython interpreter in this file.
    NotPython(NotPython),
    /// A CPython interpreter hotspot does not walk: its frames stay native.
    Unsupported(Unsupported),
    /// A CPython interpreter hotspot walks.
    Supported(Box<Interpreter>),
}

/// A file without an interpreter; it may link one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotPython {
    /// The `libpython` this file needs (`DT_NEEDED`), where its interpreter is: pyenv's
    /// `python3.X` executables are such small launchers.
    pub links_libpython: Option<String>,
}

/// An interpreter hotspot does not support, and why.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("CPython{} not supported: {reason}", version.map(|v| format!(" {v}")).unwrap_or_default())]
pub struct Unsupported {
    pub version: Option<PyVersion>,
    pub reason: Reason,
}

/// Why an interpreter is not supported; each names what would be needed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Reason {
    #[error("Python 2 has none of the structures hotspot reads (3.8-3.13 are supported)")]
    Python2,
    #[error("older than 3.8 (3.8-3.13 are supported)")]
    TooOld,
    #[error("newer than 3.13, whose layout hotspot has not been validated on")]
    TooNew,
    #[error("a free-threaded (no-GIL) build, whose layout hotspot has not been validated on")]
    FreeThreaded,
    #[error("a debug build (Py_DEBUG), whose layout hotspot has not been validated on")]
    DebugBuild,
    #[error("not x86-64 code (the only architecture hotspot decodes)")]
    NotX86_64,
    #[error("its version cannot be told from the file (no Py_Version, no libpython3.X name)")]
    UnknownVersion,
    #[error("the file says two versions: {0} and {1}")]
    VersionConflict(PyVersion, PyVersion),
    #[error("the exported symbol {0} is missing")]
    MissingSymbol(&'static str),
    #[error("{RUNTIME}'s initial data is not in the file")]
    RuntimeNotInFile,
    #[error("_Py_DebugOffsets: {0}")]
    DebugOffsets(DebugOffsetsError),
    #[error("its code reads the pthread key at _PyRuntime+{binary}, the table says +{table}")]
    KeyOffsetMismatch { table: u32, binary: u32 },
    #[error("PyThread_tss_get reads the key elsewhere than Py_tss_t+4")]
    KeyInTss,
}

/// Where the struct offsets came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetsSource {
    /// The interpreter's own `_Py_DebugOffsets` (3.13+).
    DebugOffsets,
    /// hotspot's table for the minor version.
    Table,
}

/// Where the version came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionSource {
    DebugOffsets,
    /// The value of the exported `Py_Version` (3.11+).
    PyVersionSymbol,
    /// A `libpython3.X` / `python3.X` file name or `DT_SONAME`.
    FileName,
    /// Which API functions the file exports.
    Exports,
}

/// Whether the key's offset in `_PyRuntime` was seen in the interpreter's code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyCheck {
    /// `PyGILState_GetThisThreadState` reads the key at the offset of the layout.
    Matched,
    /// Its code has a shape not seen before: the layout's offset is used unchecked (the
    /// walk's thread-id check still catches a wrong state).
    Unrecognised,
}

/// A supported interpreter, as the file gives it. Addresses are the file's virtual
/// addresses: add the load bias of the mapping (start of the mapping minus the file's
/// virtual address mapped there, `hotspot_symbols::segments`) for the process's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interpreter {
    pub version: PyVersion,
    pub version_from: VersionSource,
    /// `_PyRuntime`, the interpreter's global state.
    pub runtime: Sym,
    /// `PyCode_Type`, `PyUnicode_Type`, `PyBytes_Type`: objects are checked against them.
    pub code_type: u64,
    pub str_type: u64,
    pub bytes_type: u64,
    pub eval_loop: EvalLoop,
    pub layout: Layout,
    pub offsets_from: OffsetsSource,
    pub key_check: KeyCheck,
}

impl Interpreter {
    /// What the BPF program is given: the walk's offsets of [`Self::layout`].
    pub fn walk(&self) -> WalkDescription {
        WalkDescription::new(self.version, &self.layout)
    }

    /// The file address of the `Py_tss_t` holding the interpreter's pthread key.
    pub fn tss_address(&self) -> u64 {
        self.runtime.address + u64::from(self.layout.runtime_tss)
    }

    /// The type addresses in a process where the file is loaded with `bias`.
    pub fn type_addresses(&self, bias: u64) -> crate::TypeAddresses {
        crate::TypeAddresses {
            code: Some(self.code_type.wrapping_add(bias)),
            str: Some(self.str_type.wrapping_add(bias)),
            bytes: Some(self.bytes_type.wrapping_add(bias)),
        }
    }
}

/// Options of [`detect_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DetectOptions {
    /// Whether the eval loop's `.cold` part may be taken from `.symtab` (else it is found
    /// from the code; tests compare the two).
    pub cold_from_symbols: bool,
    /// Whether the file name and `DT_SONAME` count as evidence of the version (else the
    /// exported API alone tells 3.8-3.10 apart; tests check it does).
    pub version_from_names: bool,
}

impl Default for DetectOptions {
    fn default() -> Self {
        DetectOptions {
            cold_from_symbols: true,
            version_from_names: true,
        }
    }
}

/// Recognises CPython in the ELF file `data`, whose path or name (for `libpython3.X`
/// evidence) is `file_name`. Cheap for files that are not CPython: one pass over the
/// exported symbols. The recorder calls it once per file (by build-id), not per process.
pub fn detect(data: &[u8], file_name: Option<&str>) -> Result<Detection, ElfError> {
    detect_with(data, file_name, DetectOptions::default())
}

/// [`detect`] with options.
pub fn detect_with(
    data: &[u8],
    file_name: Option<&str>,
    options: DetectOptions,
) -> Result<Detection, ElfError> {
    let elf = ElfImage::parse(data)?;
    let exports = elf.exports(&NAMES);
    let has = |n: &str| exports.contains_key(n);
    let unsupported = |version, reason| Ok(Detection::Unsupported(Unsupported { version, reason }));
    let name_version = file_name
        .and_then(PyVersion::from_file_name)
        .or_else(|| elf.soname().as_deref().and_then(PyVersion::from_file_name))
        .filter(|_| options.version_from_names);

    if PYTHON2.iter().any(|n| has(n)) {
        return unsupported(
            name_version.map(|(v, _)| v).filter(|v| v.major == 2),
            Reason::Python2,
        );
    }
    if !has(EVAL) && !has(RUNTIME) {
        let links_libpython = elf
            .needed()
            .into_iter()
            .find(|n| n.starts_with("libpython"));
        return Ok(Detection::NotPython(NotPython { links_libpython }));
    }

    // The version, from the strongest evidence down; two that disagree are refused.
    let runtime_bytes = exports
        .get(RUNTIME)
        .and_then(|s| elf.bytes_at(s.address, s.size.min(1 << 16)));
    let debug_header = match runtime_bytes.map(DebugHeader::parse) {
        Some(Ok(h)) => h,
        Some(Err(e)) => return unsupported(None, Reason::DebugOffsets(e)),
        None => None,
    };
    let py_version = exports.get(PY_VERSION).and_then(|s| {
        let b = elf.bytes_at(s.address, 4)?;
        PyVersion::from_hex(u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
    });
    let by_exports = version_by_exports(&|n| has(n));
    let mut evidence: Vec<(PyVersion, VersionSource)> = Vec::new();
    if let Some(h) = debug_header {
        evidence.push((h.version, VersionSource::DebugOffsets));
    }
    if let Some(v) = py_version {
        evidence.push((v, VersionSource::PyVersionSymbol));
    }
    if let Some((v, _)) = name_version {
        evidence.push((v, VersionSource::FileName));
    }
    if let Some(v) = by_exports {
        evidence.push((v, VersionSource::Exports));
    }
    let Some(&(version, version_from)) = evidence.first() else {
        // No exact evidence: old enough to lack `_PyRuntime` (3.6 and before)?
        return unsupported(
            None,
            if has(RUNTIME) {
                Reason::UnknownVersion
            } else {
                Reason::TooOld
            },
        );
    };
    for &(other, source) in &evidence[1..] {
        // Evidence from exports knows 3.11+ only as "3.11 or later".
        let same = other.key() == version.key()
            || (source == VersionSource::Exports
                && other.key() == (3, 11)
                && version.key() >= (3, 11));
        if !same {
            return unsupported(Some(version), Reason::VersionConflict(version, other));
        }
    }
    if version.major != 3 {
        return unsupported(Some(version), Reason::Python2);
    }
    if version.minor < 8 {
        return unsupported(Some(version), Reason::TooOld);
    }
    if version.minor > 13 {
        return unsupported(Some(version), Reason::TooNew);
    }
    if name_version.is_some_and(|(_, t)| t) {
        return unsupported(Some(version), Reason::FreeThreaded);
    }
    if DEBUG_BUILD.iter().any(|n| has(n)) {
        return unsupported(Some(version), Reason::DebugBuild);
    }
    if !elf.is_x86_64() {
        return unsupported(Some(version), Reason::NotX86_64);
    }
    let need = |n: &'static str| exports.get(n).copied().ok_or(Reason::MissingSymbol(n));
    let symbols = (|| {
        Ok::<_, Reason>((
            need(RUNTIME)?,
            need(EVAL)?,
            need(GILSTATE)?,
            need(CODE_TYPE)?,
            need(STR_TYPE)?,
            need(BYTES_TYPE)?,
        ))
    })();
    let (runtime, eval, gilstate, code_type, str_type, bytes_type) = match symbols {
        Ok(s) => s,
        Err(reason) => return unsupported(Some(version), reason),
    };

    // The offsets: the interpreter's own description, else the table.
    let (layout, offsets_from) = if debug_header.is_some() {
        let Some(bytes) = runtime_bytes else {
            return unsupported(Some(version), Reason::RuntimeNotInFile);
        };
        let offsets = match DebugOffsets::parse(bytes) {
            Ok(o) => o,
            Err(DebugOffsetsError::UnknownLayout(_)) => {
                return unsupported(Some(version), Reason::TooNew);
            }
            Err(e) => return unsupported(Some(version), Reason::DebugOffsets(e)),
        };
        if offsets.free_threaded {
            return unsupported(Some(version), Reason::FreeThreaded);
        }
        let Some(tss) = Layout::runtime_tss_beyond_table(version) else {
            return unsupported(Some(version), Reason::TooNew);
        };
        (offsets.layout(tss), OffsetsSource::DebugOffsets)
    } else {
        match Layout::for_version(version) {
            Some(l) => (l, OffsetsSource::Table),
            // 3.13 without its cookie: not a build hotspot knows.
            None => {
                return unsupported(
                    Some(version),
                    Reason::DebugOffsets(DebugOffsetsError::NoCookie),
                );
            }
        }
    };

    // The key's offset, checked against the interpreter's own code.
    let key_check = match tss_key::tss_offset_in_code(&elf, gilstate, runtime) {
        Some(binary) if binary == layout.runtime_tss => KeyCheck::Matched,
        Some(binary) => {
            return unsupported(
                Some(version),
                Reason::KeyOffsetMismatch {
                    table: layout.runtime_tss,
                    binary,
                },
            );
        }
        None => KeyCheck::Unrecognised,
    };
    if let Some(tss_get) = exports.get(TSS_GET)
        && tss_key::key_in_tss_matches(&elf, *tss_get) == Some(false)
    {
        return unsupported(Some(version), Reason::KeyInTss);
    }

    let eval_loop = eval_loop::find(&elf, eval, options.cold_from_symbols);
    Ok(Detection::Supported(Box::new(Interpreter {
        version,
        version_from,
        runtime,
        code_type: code_type.address,
        str_type: str_type.address,
        bytes_type: bytes_type.address,
        eval_loop,
        layout,
        offsets_from,
        key_check,
    })))
}

/// The minor version the exported API gives: the newest of [`FIRST_IN`] present, when the
/// one after it is absent; 3.11 stands for "3.11 or later". `None` when none is there.
fn version_by_exports(has: &dyn Fn(&str) -> bool) -> Option<PyVersion> {
    FIRST_IN.iter().find(|(n, _)| has(n)).map(|(_, v)| *v)
}
