//! `_Py_DebugOffsets`, the table of struct offsets CPython 3.13+ keeps at the start of
//! `_PyRuntime` for out-of-process tools (cookie `xdebugpy`, then `PY_VERSION_HEX`). It is
//! initialised data, so it is read from the ELF file, never from the process. Its own
//! layout changes between minor versions; this reads the 3.13 one.

use thiserror::Error;

use crate::layout::{
    BytesLayout, CodeLayout, CodeSize, EntryRule, FRAME_OWNED_BY_CSTACK, FrameLayout, InstrField,
    Layout, LineFormat, ThreadLayout, UnicodeLayout,
};
use crate::version::PyVersion;

/// The cookie `_Py_DebugOffsets` starts with.
pub const COOKIE: &[u8; 8] = b"xdebugpy";

/// Bytes of the 3.13 `_Py_DebugOffsets` (73 `uint64_t` after the cookie).
pub const SIZE_3_13: usize = 584;

/// Largest struct size believed: the offsets come from a file that may be crafted.
const MAX_STRUCT: u64 = 1 << 16;

/// What is wrong with a `_Py_DebugOffsets`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DebugOffsetsError {
    #[error("_PyRuntime has {0} bytes of data in the file, fewer than _Py_DebugOffsets needs")]
    Short(usize),
    #[error("_PyRuntime does not start with the cookie \"xdebugpy\"")]
    NoCookie,
    #[error("_Py_DebugOffsets names no CPython version ({0:#x})")]
    BadVersion(u64),
    #[error("_Py_DebugOffsets of {0} has a layout hotspot does not read (3.13 only)")]
    UnknownLayout(PyVersion),
    #[error("_Py_DebugOffsets gives {field} = {value}, outside its struct of {size} bytes")]
    OutOfStruct {
        field: &'static str,
        value: u64,
        size: u64,
    },
}

/// The start of `_Py_DebugOffsets`, common to 3.13 and later: enough to name the version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DebugHeader {
    pub version: PyVersion,
    /// The raw `PY_VERSION_HEX`.
    pub version_hex: u64,
}

impl DebugHeader {
    /// Reads the cookie and version at the start of `_PyRuntime`'s bytes; `Ok(None)` when
    /// there is no cookie (before 3.13, `.PyRuntime` exists from 3.10 but without it).
    pub fn parse(runtime: &[u8]) -> Result<Option<DebugHeader>, DebugOffsetsError> {
        if runtime.len() < 16 || &runtime[..8] != COOKIE {
            return Ok(None);
        }
        let version_hex = u64_at(runtime, 8).ok_or(DebugOffsetsError::Short(runtime.len()))?;
        let version =
            PyVersion::from_hex(version_hex).ok_or(DebugOffsetsError::BadVersion(version_hex))?;
        Ok(Some(DebugHeader {
            version,
            version_hex,
        }))
    }
}

/// The 3.13 `_Py_DebugOffsets`, the fields hotspot uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DebugOffsets {
    pub header: DebugHeader,
    pub free_threaded: bool,
    values: [u64; FIELDS.len()],
    /// `sizeof(PyObject)`, `sizeof(PyBytesObject)`, `sizeof(PyUnicodeObject)` and
    /// `sizeof(PyASCIIObject)`, the bounds of the fields inside them.
    object_size: u64,
    bytes_size: u64,
    unicode_size: u64,
    ascii_size: u64,
}

/// Where each used field is in the 3.13 struct (bytes from its start), as `struct.field`.
/// The positions follow `Include/internal/pycore_runtime.h` of 3.13 and are checked
/// against the DWARF of pyenv's 3.13 by `tests/layout_dwarf.rs`.
pub const FIELDS: [(&str, usize); 21] = [
    ("thread_state.size", 152),
    ("thread_state.current_frame", 184),
    ("thread_state.thread_id", 192),
    ("interpreter_frame.size", 224),
    ("interpreter_frame.previous", 232),
    ("interpreter_frame.executable", 240),
    ("interpreter_frame.instr_ptr", 248),
    ("interpreter_frame.owner", 264),
    ("code_object.size", 272),
    ("code_object.filename", 280),
    ("code_object.name", 288),
    ("code_object.qualname", 296),
    ("code_object.linetable", 304),
    ("code_object.firstlineno", 312),
    ("code_object.argcount", 320),
    ("code_object.co_code_adaptive", 344),
    ("pyobject.ob_type", 360),
    ("bytes_object.ob_size", 520),
    ("bytes_object.ob_sval", 528),
    ("unicode_object.state", 544),
    ("unicode_object.length", 552),
];

/// The struct sizes read (the bounds of the fields inside them), with their positions.
pub const SIZES: [(&str, usize); 4] = [
    ("pyobject.size", OBJECT_SIZE_AT),
    ("bytes_object.size", BYTES_SIZE_AT),
    ("unicode_object.size", UNICODE_SIZE_AT),
    ("unicode_object.asciiobject_size", ASCII_SIZE_AT),
];
const OBJECT_SIZE_AT: usize = 352;
const BYTES_SIZE_AT: usize = 512;
const UNICODE_SIZE_AT: usize = 536;
/// `sizeof(PyASCIIObject)`: where an ASCII string's characters start.
const ASCII_SIZE_AT: usize = 560;

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    crate::memory::field_u64(b, at)
}

impl DebugOffsets {
    /// Parses the 3.13 `_Py_DebugOffsets` at the start of `_PyRuntime`'s bytes.
    pub fn parse(runtime: &[u8]) -> Result<DebugOffsets, DebugOffsetsError> {
        let header = DebugHeader::parse(runtime)?.ok_or(DebugOffsetsError::NoCookie)?;
        if header.version.key() != (3, 13) {
            return Err(DebugOffsetsError::UnknownLayout(header.version));
        }
        if runtime.len() < SIZE_3_13 {
            return Err(DebugOffsetsError::Short(runtime.len()));
        }
        let get = |at| u64_at(runtime, at).ok_or(DebugOffsetsError::Short(runtime.len()));
        let mut values = [0; FIELDS.len()];
        for (v, (_, at)) in values.iter_mut().zip(FIELDS) {
            *v = get(at)?;
        }
        let d = DebugOffsets {
            header,
            free_threaded: get(16)? != 0,
            values,
            object_size: get(OBJECT_SIZE_AT)?,
            bytes_size: get(BYTES_SIZE_AT)?,
            unicode_size: get(UNICODE_SIZE_AT)?,
            ascii_size: get(ASCII_SIZE_AT)?,
        };
        d.check()?;
        Ok(d)
    }

    /// A field by its `struct.field` name.
    pub fn get(&self, name: &str) -> Option<u64> {
        FIELDS
            .iter()
            .position(|(n, _)| *n == name)
            .map(|i| self.values[i])
    }

    fn value(&self, name: &'static str) -> u64 {
        // Every name used below is in FIELDS (unit-tested).
        self.get(name).unwrap_or(u64::MAX)
    }

    /// Every offset must lie inside its struct, whose size is plausible.
    fn check(&self) -> Result<(), DebugOffsetsError> {
        let size_of = |s: &str| -> u64 {
            match s {
                "thread_state" => self.value("thread_state.size"),
                "interpreter_frame" => self.value("interpreter_frame.size"),
                "code_object" => self.value("code_object.size"),
                "pyobject" => self.object_size,
                "bytes_object" => self.bytes_size,
                "unicode_object" => self.unicode_size,
                _ => 0,
            }
        };
        for (i, (name, _)) in FIELDS.iter().enumerate() {
            let Some((strukt, field)) = name.split_once('.') else {
                continue;
            };
            if field == "size" {
                continue;
            }
            let size = size_of(strukt).min(MAX_STRUCT);
            // 8 bytes for pointers; the ints and the owner byte fit a fortiori.
            let width = match field {
                "firstlineno" | "argcount" | "state" => 4,
                "owner" => 1,
                "co_code_adaptive" | "ob_sval" => 0,
                _ => 8,
            };
            let value = self.values[i];
            if value.saturating_add(width) > size {
                return Err(DebugOffsetsError::OutOfStruct {
                    field: name,
                    value,
                    size,
                });
            }
        }
        let ascii = self.ascii_size;
        let unicode = size_of("unicode_object").min(MAX_STRUCT);
        // A compact non-ASCII string's characters follow `utf8_length` and `utf8`.
        if ascii.saturating_add(16) > unicode {
            return Err(DebugOffsetsError::OutOfStruct {
                field: "unicode_object.asciiobject_size",
                value: ascii,
                size: unicode,
            });
        }
        Ok(())
    }

    /// The layout these offsets describe, with `runtime_tss` (not among them) from the
    /// table. Every value fits its field: [`Self::parse`] bounded them by struct sizes of
    /// at most 64 KiB.
    pub fn layout(&self, runtime_tss: u32) -> Layout {
        let v = |name: &'static str| u16::try_from(self.value(name)).unwrap_or(u16::MAX);
        let ascii = u16::try_from(self.ascii_size).unwrap_or(u16::MAX);
        Layout {
            runtime_tss,
            thread: ThreadLayout {
                frame: v("thread_state.current_frame"),
                cframe_frame: None,
                thread_id: v("thread_state.thread_id"),
            },
            frame: FrameLayout {
                previous: v("interpreter_frame.previous"),
                code: v("interpreter_frame.executable"),
                instr: v("interpreter_frame.instr_ptr"),
                instr_field: InstrField::Pointer,
                entry: EntryRule::ShimOwner {
                    offset: v("interpreter_frame.owner"),
                    value: FRAME_OWNED_BY_CSTACK,
                },
            },
            code: CodeLayout {
                filename: v("code_object.filename"),
                name: v("code_object.name"),
                qualname: Some(v("code_object.qualname")),
                first_line: v("code_object.firstlineno"),
                line_table: v("code_object.linetable"),
                line_format: LineFormat::Locations,
                // A code object is a PyVarObject: its `ob_size` is where every
                // PyVarObject's is, as the bytes object's.
                size: CodeSize::Units {
                    ob_size: v("bytes_object.ob_size"),
                },
                bytecode: Some(v("code_object.co_code_adaptive")),
                arg_count: v("code_object.argcount"),
            },
            unicode: UnicodeLayout {
                length: v("unicode_object.length"),
                state: v("unicode_object.state"),
                ascii_data: ascii,
                compact_data: ascii.saturating_add(16),
                ready_bit: None,
            },
            bytes: BytesLayout {
                size: v("bytes_object.ob_size"),
                data: v("bytes_object.ob_sval"),
            },
            ob_type: v("pyobject.ob_type"),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A 3.13 struct with every used field set to a small in-bounds offset.
    fn plausible() -> Vec<u8> {
        let mut b = vec![0u8; SIZE_3_13];
        b[..8].copy_from_slice(COOKIE);
        b[8..16].copy_from_slice(&0x030D_00F0u64.to_le_bytes());
        let mut put = |at: usize, v: u64| b[at..at + 8].copy_from_slice(&v.to_le_bytes());
        for (_, at) in FIELDS {
            put(at, 16);
        }
        for size in [
            "thread_state.size",
            "interpreter_frame.size",
            "code_object.size",
        ] {
            let at = FIELDS.iter().find(|(n, _)| *n == size).unwrap().1;
            put(at, 256);
        }
        let ob_type = FIELDS
            .iter()
            .find(|(n, _)| *n == "pyobject.ob_type")
            .unwrap()
            .1;
        put(ob_type, 8);
        put(OBJECT_SIZE_AT, 16);
        put(BYTES_SIZE_AT, 40);
        put(UNICODE_SIZE_AT, 64);
        put(ASCII_SIZE_AT, 40);
        b
    }

    #[test]
    fn reads_the_fields_by_name() {
        let d = DebugOffsets::parse(&plausible()).unwrap();
        assert_eq!(d.header.version.to_string(), "3.13.0");
        assert!(!d.free_threaded);
        assert_eq!(d.get("code_object.qualname"), Some(16));
        assert_eq!(d.get("no.such"), None);
        for (name, _) in FIELDS {
            assert!(d.get(name).is_some(), "{name}");
        }
        let l = d.layout(2160);
        assert_eq!(l.unicode.compact_data, 56);
        assert_eq!(l.runtime_tss, 2160);
    }

    #[test]
    fn refuses_what_is_not_3_13_or_out_of_bounds() {
        assert_eq!(DebugHeader::parse(b"not a runtime at all").unwrap(), None);
        assert_eq!(
            DebugOffsets::parse(&[0; 600]),
            Err(DebugOffsetsError::NoCookie)
        );
        let mut b = plausible();
        b[8..16].copy_from_slice(&0x030E_00F0u64.to_le_bytes());
        assert!(matches!(
            DebugOffsets::parse(&b),
            Err(DebugOffsetsError::UnknownLayout(v)) if v.minor == 14
        ));
        b[8..16].copy_from_slice(&0x1234u64.to_le_bytes());
        assert_eq!(
            DebugOffsets::parse(&b),
            Err(DebugOffsetsError::BadVersion(0x1234))
        );
        let b = plausible();
        assert_eq!(
            DebugOffsets::parse(&b[..300]),
            Err(DebugOffsetsError::Short(300))
        );
        let mut b = plausible();
        let at = FIELDS
            .iter()
            .find(|(n, _)| *n == "interpreter_frame.previous")
            .unwrap()
            .1;
        b[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            DebugOffsets::parse(&b),
            Err(DebugOffsetsError::OutOfStruct {
                field: "interpreter_frame.previous",
                ..
            })
        ));
    }
}
