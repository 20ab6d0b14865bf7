//! A frame's position in its code object's bytecode: from the raw `instr` value the walk
//! reports ([`crate::FrameRecord::instr`]) to a byte offset the line table is indexed by.
//!
//! | version  | `instr` holds                            | byte offset            |
//! |----------|------------------------------------------|------------------------|
//! | 3.8, 3.9 | `f_lasti`, bytes                          | `f_lasti`              |
//! | 3.10     | `f_lasti`, 2-byte code units              | `2 * f_lasti`          |
//! | 3.11+    | a pointer into `co_code_adaptive`         | `instr - (code + co_code_adaptive)` |
//!
//! Line tables of 3.10+ count code units inside, but every decoder here takes bytes.

use crate::layout::InstrField;

/// Where a frame is in its bytecode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodePosition {
    /// The frame has not run its first instruction (`f_lasti == -1`, or 3.11+'s pointer
    /// one unit before the code): CPython puts such a frame on its first line.
    BeforeStart,
    /// The byte offset of the instruction, inside the bytecode and even.
    Offset(u32),
    /// A value that points nowhere in this code object: a torn read, or not a frame.
    Invalid,
}

/// The position of `instr` in a code object at `code` with `code_bytes` bytes of bytecode
/// starting `bytecode` bytes into it (3.11+).
pub fn code_position(
    field: InstrField,
    bytecode: Option<u16>,
    code: u64,
    code_bytes: u32,
    instr: u64,
) -> CodePosition {
    let offset = match field {
        InstrField::Lasti { scale } => {
            let lasti = instr as i64;
            if lasti < 0 {
                return if lasti == -1 {
                    CodePosition::BeforeStart
                } else {
                    CodePosition::Invalid
                };
            }
            lasti.checked_mul(i64::from(scale))
        }
        InstrField::Pointer => {
            let Some(start) = bytecode.and_then(|b| code.checked_add(u64::from(b))) else {
                return CodePosition::Invalid;
            };
            let diff = instr.wrapping_sub(start) as i64;
            if diff == -2 {
                return CodePosition::BeforeStart;
            }
            Some(diff)
        }
    };
    match offset {
        Some(o) if o >= 0 && o % 2 == 0 && o < i64::from(code_bytes) => {
            CodePosition::Offset(o as u32)
        }
        _ => CodePosition::Invalid,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn per_version_units() {
        let lasti = |scale, v: i32| {
            code_position(
                InstrField::Lasti { scale },
                None,
                0x1000,
                100,
                v as i64 as u64,
            )
        };
        assert_eq!(lasti(1, 10), CodePosition::Offset(10));
        assert_eq!(
            lasti(2, 10),
            CodePosition::Offset(20),
            "3.10 counts code units"
        );
        assert_eq!(lasti(1, -1), CodePosition::BeforeStart);
        assert_eq!(lasti(1, -7), CodePosition::Invalid);
        assert_eq!(lasti(1, 100), CodePosition::Invalid, "past the code");
        assert_eq!(lasti(1, 11), CodePosition::Invalid, "odd");
        let ptr = |v: u64| code_position(InstrField::Pointer, Some(192), 0x1000, 100, v);
        assert_eq!(ptr(0x1000 + 192), CodePosition::Offset(0));
        assert_eq!(ptr(0x1000 + 192 + 98), CodePosition::Offset(98));
        assert_eq!(ptr(0x1000 + 190), CodePosition::BeforeStart);
        assert_eq!(ptr(0x1000 + 192 + 100), CodePosition::Invalid);
        assert_eq!(ptr(0), CodePosition::Invalid);
        assert_eq!(ptr(u64::MAX), CodePosition::Invalid);
        assert_eq!(
            code_position(InstrField::Pointer, None, 0x1000, 100, 0x1000),
            CodePosition::Invalid
        );
    }
}
