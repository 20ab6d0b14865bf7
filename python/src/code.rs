//! Code objects read from a target: qualified name, name, file name, first line, bytecode
//! size and line table, each read bounded and checked. What a Python frame is named by.

use thiserror::Error;

use crate::layout::{CodeSize, InstrField, Layout};
use crate::limits::{MAX_CODE_BYTES, MAX_LINE_TABLE_BYTES};
use crate::line_table::{LineTable, LineTableError};
use crate::memory::{MemoryReader, ReadError, field_u32, field_u64, read_vec};
use crate::position::{CodePosition, code_position};
use crate::unicode::{StringError, read_str};

/// The addresses of the type objects in the target (file address of `PyCode_Type`,
/// `PyUnicode_Type`, `PyBytes_Type` plus the load bias): an object whose `ob_type` is not
/// the right one is refused. `None` skips the check.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TypeAddresses {
    pub code: Option<u64>,
    pub str: Option<u64>,
    pub bytes: Option<u64>,
}

/// What is wrong with a code object.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CodeError {
    #[error("reading the code object: {0}")]
    Read(#[from] ReadError),
    #[error("the object at {addr:#x} is not a code object (type {found:#x})")]
    NotCode { addr: u64, found: u64 },
    #[error("the code object at {addr:#x} has first line {value}")]
    BadFirstLine { addr: u64, value: i32 },
    #[error("the code object's co_code at {addr:#x} is not a bytes object (type {found:#x})")]
    CodeNotBytes { addr: u64, found: u64 },
    #[error("the code object at {addr:#x} claims {bytes} bytes of bytecode")]
    BadCodeSize { addr: u64, bytes: u64 },
    #[error("the code object at {addr:#x} has a bad {field}: {source}")]
    BadString {
        addr: u64,
        field: &'static str,
        source: StringError,
    },
}

/// Why a code object has no line table (it keeps its names).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LinesError {
    #[error("reading the line table: {0}")]
    Read(#[from] ReadError),
    #[error("the line table at {addr:#x} is not a bytes object (type {found:#x})")]
    NotBytes { addr: u64, found: u64 },
    #[error(transparent)]
    Table(#[from] LineTableError),
}

/// A decoded code object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeObject {
    /// Its address in the target.
    pub address: u64,
    /// `co_qualname` (3.11+), else `co_name`.
    pub qualname: String,
    pub name: String,
    pub filename: String,
    pub first_line: u32,
    /// Bytes of bytecode.
    pub code_bytes: u32,
    pub lines: Result<LineTable, LinesError>,
    instr_field: InstrField,
    bytecode: Option<u16>,
}

impl CodeObject {
    /// Where a frame of this code whose walk reported `instr` is.
    pub fn position(&self, instr: u64) -> CodePosition {
        code_position(
            self.instr_field,
            self.bytecode,
            self.address,
            self.code_bytes,
            instr,
        )
    }

    /// The source line of a frame of this code whose walk reported `instr`, as CPython
    /// would give it (`frame.f_lineno`); `None` when the table has no line there, there is
    /// no table, or `instr` is not a position in this code.
    pub fn line_at(&self, instr: u64) -> Option<u32> {
        match self.position(instr) {
            CodePosition::BeforeStart => Some(self.first_line),
            CodePosition::Offset(o) => self.lines.as_ref().ok()?.line_at(o),
            CodePosition::Invalid => None,
        }
    }
}

/// The fields of a code object's header that identify it: the cache compares them to tell
/// a code object from another one later at the same address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CodeStamp {
    pub ob_type: u64,
    pub name: u64,
    pub qualname: u64,
    pub filename: u64,
    pub line_table: u64,
    /// `co_code`'s address (3.8–3.10) or `ob_size` (3.11+).
    pub size: u64,
    pub first_line: u32,
    pub arg_count: u32,
}

/// A code object's header as read, one read of [`Layout::code_header_len`] bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeHeader {
    pub address: u64,
    pub stamp: CodeStamp,
}

impl CodeHeader {
    /// Reads the header at `addr`.
    pub fn read(mem: &impl MemoryReader, layout: &Layout, addr: u64) -> Result<Self, ReadError> {
        let b = read_vec(mem, addr, layout.code_header_len())?;
        let c = &layout.code;
        let u64_at = |o: u16| field_u64(&b, usize::from(o)).unwrap_or(0);
        let u32_at = |o: u16| field_u32(&b, usize::from(o)).unwrap_or(0);
        let size = match c.size {
            CodeSize::BytesObject { co_code } => u64_at(co_code),
            CodeSize::Units { ob_size } => u64_at(ob_size),
        };
        Ok(CodeHeader {
            address: addr,
            stamp: CodeStamp {
                ob_type: u64_at(layout.ob_type),
                name: u64_at(c.name),
                qualname: c.qualname.map(u64_at).unwrap_or(0),
                filename: u64_at(c.filename),
                line_table: u64_at(c.line_table),
                size,
                first_line: u32_at(c.first_line),
                arg_count: u32_at(c.arg_count),
            },
        })
    }

    /// Decodes the rest: the strings, the size, the line table.
    pub fn decode(
        &self,
        mem: &impl MemoryReader,
        layout: &Layout,
        types: &TypeAddresses,
    ) -> Result<CodeObject, CodeError> {
        let addr = self.address;
        let s = &self.stamp;
        if let Some(expected) = types.code
            && s.ob_type != expected
        {
            return Err(CodeError::NotCode {
                addr,
                found: s.ob_type,
            });
        }
        let first_line = s.first_line as i32;
        if first_line < 0 {
            return Err(CodeError::BadFirstLine {
                addr,
                value: first_line,
            });
        }
        let code_bytes = match layout.code.size {
            CodeSize::BytesObject { .. } => bytes_size(mem, layout, types, s.size)?,
            CodeSize::Units { .. } => s.size.saturating_mul(2),
        };
        if code_bytes > MAX_CODE_BYTES {
            return Err(CodeError::BadCodeSize {
                addr,
                bytes: code_bytes,
            });
        }
        let string = |field: &'static str, at: u64| {
            read_str(mem, &layout.unicode, layout.ob_type, types.str, at).map_err(|source| {
                CodeError::BadString {
                    addr,
                    field,
                    source,
                }
            })
        };
        let name = string("co_name", s.name)?;
        let qualname = match layout.code.qualname {
            Some(_) => string("co_qualname", s.qualname)?,
            None => name.clone(),
        };
        let filename = string("co_filename", s.filename)?;
        let lines = read_bytes(mem, layout, types, s.line_table).and_then(|b| {
            Ok(LineTable::decode(
                layout.code.line_format,
                first_line as u32,
                &b,
            )?)
        });
        Ok(CodeObject {
            address: addr,
            qualname,
            name,
            filename,
            first_line: first_line as u32,
            code_bytes: code_bytes as u32,
            lines,
            instr_field: layout.frame.instr_field,
            bytecode: layout.code.bytecode,
        })
    }
}

/// Reads and decodes the code object at `addr`.
pub fn read_code(
    mem: &impl MemoryReader,
    layout: &Layout,
    types: &TypeAddresses,
    addr: u64,
) -> Result<CodeObject, CodeError> {
    CodeHeader::read(mem, layout, addr)?.decode(mem, layout, types)
}

/// The size of the bytes object at `addr` (3.8–3.10 `co_code`), bounded.
fn bytes_size(
    mem: &impl MemoryReader,
    layout: &Layout,
    types: &TypeAddresses,
    addr: u64,
) -> Result<u64, CodeError> {
    let (size, ty) = bytes_header(mem, layout, addr)?;
    if let Some(expected) = types.bytes
        && ty != expected
    {
        return Err(CodeError::CodeNotBytes { addr, found: ty });
    }
    Ok(size)
}

fn bytes_header(
    mem: &impl MemoryReader,
    layout: &Layout,
    addr: u64,
) -> Result<(u64, u64), ReadError> {
    let len = usize::from(layout.bytes.size.max(layout.ob_type)) + 8;
    let b = read_vec(mem, addr, len)?;
    Ok((
        field_u64(&b, usize::from(layout.bytes.size)).unwrap_or(u64::MAX),
        field_u64(&b, usize::from(layout.ob_type)).unwrap_or(0),
    ))
}

/// The contents of the bytes object at `addr` (a line table), at most
/// [`MAX_LINE_TABLE_BYTES`].
fn read_bytes(
    mem: &impl MemoryReader,
    layout: &Layout,
    types: &TypeAddresses,
    addr: u64,
) -> Result<Vec<u8>, LinesError> {
    let (size, ty) = bytes_header(mem, layout, addr)?;
    if let Some(expected) = types.bytes
        && ty != expected
    {
        return Err(LinesError::NotBytes { addr, found: ty });
    }
    if size > MAX_LINE_TABLE_BYTES {
        return Err(LineTableError::TooLong(size).into());
    }
    Ok(read_vec(
        mem,
        addr.wrapping_add(u64::from(layout.bytes.data)),
        size as usize,
    )?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::test_image::{BYTES_TYPE, CODE_TYPE, Image, STR_TYPE};
    use crate::version::PyVersion;

    const TYPES: TypeAddresses = TypeAddresses {
        code: Some(CODE_TYPE),
        str: Some(STR_TYPE),
        bytes: Some(BYTES_TYPE),
    };

    fn layout(minor: u8) -> Layout {
        Layout::for_version(PyVersion::minor(3, minor)).unwrap()
    }

    #[test]
    fn decodes_a_3_12_code_object() {
        let mut img = Image::new(layout(12));
        // Location table: one-line form +1 for 2 units, then short form 1 unit.
        let table = [0x80 | (11 << 3) | 1, 0, 4, 0x80, 3];
        let addr = img.code("K.f", "f", "/x/\u{e9}t\u{e9}.py", 10, &table, 6);
        let c = read_code(&img.mem, &img.layout, &TYPES, addr).unwrap();
        assert_eq!((c.qualname.as_str(), c.name.as_str()), ("K.f", "f"));
        assert_eq!(c.filename, "/x/\u{e9}t\u{e9}.py");
        assert_eq!((c.first_line, c.code_bytes), (10, 6));
        let start = addr + 192;
        assert_eq!(c.line_at(start), Some(11));
        assert_eq!(c.line_at(start + 4), Some(11));
        assert_eq!(
            c.line_at(start - 2),
            Some(10),
            "before the first instruction"
        );
        assert_eq!(c.line_at(start + 6), None, "past the code");
        assert_eq!(c.line_at(start + 1), None, "odd");
    }

    #[test]
    fn decodes_a_3_8_code_object() {
        let mut img = Image::new(layout(8));
        let addr = img.code("f", "f", "a.py", 3, &[4, 2], 8);
        let c = read_code(&img.mem, &img.layout, &TYPES, addr).unwrap();
        assert_eq!((c.qualname.as_str(), c.code_bytes), ("f", 8));
        assert_eq!(c.line_at(2), Some(3));
        assert_eq!(c.line_at(4), Some(5));
        assert_eq!(c.line_at(-1i64 as u64), Some(3), "f_lasti -1");
    }

    #[test]
    fn hostile_code_objects_are_errors() {
        let l = layout(12);
        let mut img = Image::new(l);
        let addr = img.code("f", "f", "a.py", 1, &[0x80], 2);
        let read = |img: &Image| read_code(&img.mem, &img.layout, &TYPES, addr);
        img.poke(addr, l.ob_type, 0x1234);
        assert!(matches!(
            read(&img),
            Err(CodeError::NotCode { found: 0x1234, .. })
        ));
        img.poke(addr, l.ob_type, CODE_TYPE);
        img.poke(addr, l.code.first_line, u64::from(u32::MAX));
        assert!(matches!(
            read(&img),
            Err(CodeError::BadFirstLine { value: -1, .. })
        ));
        img.poke(addr, l.code.first_line, 1);
        let CodeSize::Units { ob_size } = l.code.size else {
            panic!()
        };
        img.poke(addr, ob_size, u64::MAX / 4);
        assert!(matches!(read(&img), Err(CodeError::BadCodeSize { .. })));
        img.poke(addr, ob_size, 1);
        img.poke(addr, l.code.name, 0xdead_0000);
        assert!(matches!(
            read(&img),
            Err(CodeError::BadString {
                field: "co_name",
                source: StringError::Read(_),
                ..
            })
        ));
        // A bad line table costs the lines, not the names.
        let name = img.str("f");
        img.poke(addr, l.code.name, name);
        let table = img.bytes(&[0x80]);
        img.poke(table, l.bytes.size, MAX_LINE_TABLE_BYTES + 1);
        img.poke(addr, l.code.line_table, table);
        let c = read(&img).unwrap();
        assert_eq!(c.name, "f");
        assert!(matches!(
            c.lines,
            Err(LinesError::Table(LineTableError::TooLong(_)))
        ));
        assert_eq!(c.line_at(addr + 192), None);
        img.poke(table, l.ob_type, STR_TYPE);
        assert!(matches!(
            read(&img).unwrap().lines,
            Err(LinesError::NotBytes { .. })
        ));
        img.poke(addr, l.code.line_table, 0);
        assert!(matches!(
            read(&img).unwrap().lines,
            Err(LinesError::Read(_))
        ));
    }
}
