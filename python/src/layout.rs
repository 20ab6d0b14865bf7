//! The struct offsets of one CPython minor version: where the thread state keeps its
//! frame, where a frame keeps its code and position, where a code object keeps its names
//! and line table, how strings and bytes are laid out. 3.8–3.12 from the table here (each
//! value checked against the DWARF of pyenv's builds by `tests/layout_dwarf.rs`); 3.13+
//! from the interpreter's own `_Py_DebugOffsets` ([`crate::debug_offsets`]).

use crate::version::PyVersion;

/// All the offsets hotspot uses for one minor version, in bytes from the start of each
/// struct. One model: the BPF walk description ([`crate::WalkDescription`]) and every
/// decoder read their offsets from here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Offset in `_PyRuntime` of `autoTSSkey` (a `Py_tss_t`: `int _is_initialized` then
    /// the `pthread_key_t` at +4), through which every thread finds its thread state.
    pub runtime_tss: u32,
    pub thread: ThreadLayout,
    pub frame: FrameLayout,
    pub code: CodeLayout,
    pub unicode: UnicodeLayout,
    pub bytes: BytesLayout,
    /// `ob_type` in every object header.
    pub ob_type: u16,
}

/// `PyThreadState`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadLayout {
    /// The pointer to the thread's current frame (3.8–3.10 `frame`, 3.13 `current_frame`),
    /// or to its `_PyCFrame` (3.11, 3.12 `cframe`, see `cframe_frame`).
    pub frame: u16,
    /// 3.11, 3.12: `current_frame` in the `_PyCFrame` that `frame` points to.
    pub cframe_frame: Option<u16>,
    /// `thread_id`, the thread's `pthread_t`: on x86-64 glibc its thread pointer, the
    /// same value as the thread's FS base, so the walk can check the state is the thread's.
    pub thread_id: u16,
}

/// A frame: `PyFrameObject` (3.8–3.10) or `_PyInterpreterFrame` (3.11+).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameLayout {
    /// The calling frame (`f_back`, `previous`).
    pub previous: u16,
    /// The code object (`f_code`, 3.13 `f_executable`).
    pub code: u16,
    /// The frame's position in its bytecode, see [`InstrField`].
    pub instr: u16,
    pub instr_field: InstrField,
    pub entry: EntryRule,
}

/// What a frame's position field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstrField {
    /// `f_lasti`, a C `int`: the last instruction started, -1 before the first; in bytes
    /// (3.8, 3.9: `scale` 1) or in 2-byte code units (3.10: `scale` 2).
    Lasti { scale: u8 },
    /// A `_Py_CODEUNIT *` into the code object's inline bytecode (`co_code_adaptive`, at
    /// [`CodeLayout::bytecode`]): the instruction running, or the last cache unit of a
    /// call in progress, which has the call's line (3.11, 3.12 `prev_instr`; 3.13
    /// `instr_ptr`). Before the first instruction it may point one unit before the code.
    Pointer,
}

impl InstrField {
    /// Bytes of the field.
    pub fn size(self) -> u8 {
        match self {
            InstrField::Lasti { .. } => 4,
            InstrField::Pointer => 8,
        }
    }
}

/// How a walk finds where the frames of one eval-loop call end, walking from the newest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryRule {
    /// 3.8–3.10: each frame has its own eval-loop call; every frame is an entry.
    EveryFrame,
    /// 3.11: a byte of the frame (`is_entry`), non-zero on the first frame an eval-loop
    /// call ran: that frame is an entry.
    FlagByte { offset: u16 },
    /// 3.12+: each eval-loop call links a shim frame it keeps on the C stack below its
    /// first frame, marked by a byte (`owner`) equal to `value` (`FRAME_OWNED_BY_CSTACK`).
    /// The shim is no Python frame; the frame walked just before it is the entry.
    ShimOwner { offset: u16, value: u8 },
}

/// `PyCodeObject`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeLayout {
    pub filename: u16,
    pub name: u16,
    /// `co_qualname`, 3.11+; before, the qualified name is not in the code object and
    /// `co_name` stands for it.
    pub qualname: Option<u16>,
    /// `co_firstlineno`, a C `int`.
    pub first_line: u16,
    /// The line table, a bytes object: `co_lnotab` (3.8, 3.9), `co_linetable` (3.10+).
    pub line_table: u16,
    pub line_format: LineFormat,
    pub size: CodeSize,
    /// 3.11+: `co_code_adaptive`, where the bytecode starts inside the code object.
    pub bytecode: Option<u16>,
    /// `co_argcount`, a C `int` read into the cache's check of a code object.
    pub arg_count: u16,
}

/// The line table's format, one per era.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineFormat {
    /// 3.8, 3.9 `co_lnotab`: (byte delta, signed line delta) pairs.
    Lnotab,
    /// 3.10 `co_linetable`: (byte delta, signed line delta or -128 for none) pairs.
    Linetable310,
    /// 3.11+ `co_linetable`: the location table, entries of 1–8 code units.
    Locations,
}

/// Where the size of a code object's bytecode is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeSize {
    /// 3.8–3.10: `co_code`, a bytes object whose size is the bytecode's, in bytes.
    BytesObject { co_code: u16 },
    /// 3.11+: the code object's own `ob_size`, in 2-byte code units.
    Units { ob_size: u16 },
}

/// Compact `str` objects (`PyASCIIObject`, `PyCompactUnicodeObject`); names and file
/// names of code objects are always compact. The `state` bit-field has `kind` in bits
/// 2–4, `compact` in bit 5 and `ascii` in bit 6 on every supported version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnicodeLayout {
    /// `length`, in code points.
    pub length: u16,
    /// The 32-bit `state` bit-field.
    pub state: u16,
    /// Where an ASCII string's characters start (`sizeof(PyASCIIObject)`).
    pub ascii_data: u16,
    /// Where a non-ASCII compact string's characters start
    /// (`sizeof(PyCompactUnicodeObject)`).
    pub compact_data: u16,
    /// 3.8–3.11: the `ready` bit (7), which must be set; 3.12 dropped it.
    pub ready_bit: Option<u8>,
}

/// `PyBytesObject`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BytesLayout {
    /// `ob_size`, in bytes.
    pub size: u16,
    /// `ob_sval`, the bytes.
    pub data: u16,
}

/// `FRAME_OWNED_BY_CSTACK` in 3.12 and 3.13 (`enum _frameowner`).
pub const FRAME_OWNED_BY_CSTACK: u8 = 3;

const UNICODE_3_8: UnicodeLayout = UnicodeLayout {
    length: 16,
    state: 32,
    ascii_data: 48,
    compact_data: 72,
    ready_bit: Some(7),
};

/// 3.12+: `wstr` and `wstr_length` are gone and so is `ready`.
pub(crate) const UNICODE_3_12: UnicodeLayout = UnicodeLayout {
    length: 16,
    state: 32,
    ascii_data: 40,
    compact_data: 56,
    ready_bit: None,
};

const BYTES: BytesLayout = BytesLayout { size: 16, data: 32 };

/// 3.8–3.10 share the code object's fields and the frame object's first ones.
const fn code_3_8(line_format: LineFormat) -> CodeLayout {
    CodeLayout {
        filename: 104,
        name: 112,
        qualname: None,
        first_line: 40,
        line_table: 120,
        line_format,
        size: CodeSize::BytesObject { co_code: 48 },
        bytecode: None,
        arg_count: 16,
    }
}

impl Layout {
    /// The table for 3.8–3.12; `None` for other versions (3.13+ describe themselves).
    pub fn for_version(version: PyVersion) -> Option<Layout> {
        let lasti_frame = |lasti: u16, scale: u8| FrameLayout {
            previous: 24,
            code: 32,
            instr: lasti,
            instr_field: InstrField::Lasti { scale },
            entry: EntryRule::EveryFrame,
        };
        let thread_3_8 = ThreadLayout {
            frame: 24,
            cframe_frame: None,
            thread_id: 176,
        };
        let layout = match version.key() {
            (3, 8) => Layout {
                runtime_tss: 1392,
                thread: thread_3_8,
                frame: lasti_frame(104, 1),
                code: code_3_8(LineFormat::Lnotab),
                unicode: UNICODE_3_8,
                bytes: BYTES,
                ob_type: 8,
            },
            (3, 9) => Layout {
                runtime_tss: 584,
                thread: thread_3_8,
                frame: lasti_frame(104, 1),
                code: code_3_8(LineFormat::Lnotab),
                unicode: UNICODE_3_8,
                bytes: BYTES,
                ob_type: 8,
            },
            (3, 10) => Layout {
                runtime_tss: 584,
                thread: thread_3_8,
                frame: lasti_frame(96, 2),
                code: code_3_8(LineFormat::Linetable310),
                unicode: UNICODE_3_8,
                bytes: BYTES,
                ob_type: 8,
            },
            (3, 11) => Layout {
                runtime_tss: 592,
                thread: ThreadLayout {
                    frame: 56,
                    cframe_frame: Some(8),
                    thread_id: 152,
                },
                frame: FrameLayout {
                    previous: 48,
                    code: 32,
                    instr: 56,
                    instr_field: InstrField::Pointer,
                    entry: EntryRule::FlagByte { offset: 68 },
                },
                code: CodeLayout {
                    filename: 112,
                    name: 120,
                    qualname: Some(128),
                    first_line: 72,
                    line_table: 136,
                    line_format: LineFormat::Locations,
                    size: CodeSize::Units { ob_size: 16 },
                    bytecode: Some(184),
                    arg_count: 56,
                },
                unicode: UNICODE_3_8,
                bytes: BYTES,
                ob_type: 8,
            },
            (3, 12) => Layout {
                runtime_tss: 1544,
                thread: ThreadLayout {
                    frame: 56,
                    cframe_frame: Some(0),
                    thread_id: 136,
                },
                frame: FrameLayout {
                    previous: 8,
                    code: 0,
                    instr: 56,
                    instr_field: InstrField::Pointer,
                    entry: EntryRule::ShimOwner {
                        offset: 70,
                        value: FRAME_OWNED_BY_CSTACK,
                    },
                },
                code: CodeLayout {
                    filename: 112,
                    name: 120,
                    qualname: Some(128),
                    first_line: 68,
                    line_table: 136,
                    line_format: LineFormat::Locations,
                    size: CodeSize::Units { ob_size: 16 },
                    bytecode: Some(192),
                    arg_count: 52,
                },
                unicode: UNICODE_3_12,
                bytes: BYTES,
                ob_type: 8,
            },
            _ => return None,
        };
        Some(layout)
    }

    /// Offset in `_PyRuntime` of `autoTSSkey` for the versions whose `_Py_DebugOffsets`
    /// does not give it (3.13), checked against the binary like the table's
    /// ([`crate::tss_key`]).
    pub(crate) fn runtime_tss_beyond_table(version: PyVersion) -> Option<u32> {
        match version.key() {
            (3, 13) => Some(2160),
            _ => None,
        }
    }

    /// Bytes of a code object's header the decoders read in one go: every field they use
    /// but the bytecode itself.
    pub fn code_header_len(&self) -> usize {
        let c = &self.code;
        let mut end = [
            usize::from(c.filename) + 8,
            usize::from(c.name) + 8,
            usize::from(c.first_line) + 4,
            usize::from(c.line_table) + 8,
            usize::from(c.arg_count) + 4,
            usize::from(self.ob_type) + 8,
        ]
        .into_iter()
        .max()
        .unwrap_or(0);
        if let Some(q) = c.qualname {
            end = end.max(usize::from(q) + 8);
        }
        end = end.max(match c.size {
            CodeSize::BytesObject { co_code } => usize::from(co_code) + 8,
            CodeSize::Units { ob_size } => usize::from(ob_size) + 8,
        });
        end
    }

    /// Bytes of a frame the walk reads in one go: every field it uses.
    pub fn frame_read_len(&self) -> usize {
        let f = &self.frame;
        let mut end = (usize::from(f.previous) + 8)
            .max(usize::from(f.code) + 8)
            .max(usize::from(f.instr) + usize::from(f.instr_field.size()));
        match f.entry {
            EntryRule::EveryFrame => {}
            EntryRule::FlagByte { offset } | EntryRule::ShimOwner { offset, .. } => {
                end = end.max(usize::from(offset) + 1)
            }
        }
        end
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_table_covers_3_8_to_3_12_only() {
        for minor in 0..20 {
            let has = Layout::for_version(PyVersion::minor(3, minor)).is_some();
            assert_eq!(has, (8..=12).contains(&minor), "3.{minor}");
        }
        assert!(Layout::for_version(PyVersion::minor(2, 8)).is_none());
    }

    #[test]
    fn read_lengths_cover_every_field() {
        let l = Layout::for_version(PyVersion::minor(3, 11)).unwrap();
        assert_eq!(
            l.frame_read_len(),
            69,
            "is_entry at 68 is the last byte read"
        );
        assert_eq!(l.code_header_len(), 144, "co_linetable at 136");
        let l = Layout::for_version(PyVersion::minor(3, 8)).unwrap();
        assert_eq!(l.frame_read_len(), 108, "f_lasti at 104");
        assert_eq!(l.code_header_len(), 128, "co_lnotab at 120");
    }
}
