//! The one rule from a file offset to an ELF virtual address. A capture names user code
//! by module and file offset (what a process's mappings give); symbol and line tables
//! name it by the ELF file's own virtual addresses. The bridge is the module's
//! executable `PT_LOAD` segments: an offset inside one maps to `offset - p_offset +
//! p_vaddr`; an offset in no executable segment is no code and gets no address (never
//! the raw offset, which would name a neighbour).
//!
//! A separate debug file keeps the program headers of its binary but not their file
//! ranges (`objcopy --only-keep-debug` writes `p_filesz` 0 and `p_offset` 0 for the
//! code). When only such a file is at hand (`--symbols` with the binary gone), the
//! layout is reconstructed on the assumption GNU ld's output satisfies: the file is
//! mapped contiguously from its first segment, so `p_offset = p_vaddr - base`.
//! [`CodeSegments::assumed`] says so; the binary's own headers are used whenever it can
//! be read.

use object::{Object, ObjectSegment, ReadRef, SegmentFlags};

/// An executable `PT_LOAD` segment: where a range of the file is mapped in the ELF's
/// own addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub offset: u64,
    pub size: u64,
    pub vaddr: u64,
}

/// The executable segments of one ELF file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CodeSegments {
    segments: Vec<Segment>,
    assumed: bool,
}

impl CodeSegments {
    /// The executable segments of `obj`, from its file ranges, or reconstructed when it
    /// has none (a separate debug file; see the module docs).
    pub fn of_object<'data, R: ReadRef<'data>>(obj: &object::File<'data, R>) -> Self {
        let executable = |s: &object::Segment<'data, '_, R>| {
            matches!(
                s.flags(),
                SegmentFlags::Elf { p_flags, .. } if p_flags.0 & object::elf::PF_X.0 != 0
            )
        };
        let segments: Vec<Segment> = obj
            .segments()
            .filter(executable)
            .filter_map(|s| {
                let (offset, size) = s.file_range();
                (size > 0).then(|| Segment {
                    offset,
                    size,
                    vaddr: s.address(),
                })
            })
            .collect();
        if !segments.is_empty() {
            return CodeSegments {
                segments,
                assumed: false,
            };
        }
        let Some(base) = obj.segments().map(|s| s.address()).min() else {
            return CodeSegments::default();
        };
        let segments: Vec<Segment> = obj
            .segments()
            .filter(executable)
            .filter(|s| s.size() > 0 && s.address() >= base)
            .map(|s| Segment {
                offset: s.address() - base,
                size: s.size(),
                vaddr: s.address(),
            })
            .collect();
        CodeSegments {
            assumed: !segments.is_empty(),
            segments,
        }
    }

    /// The virtual address of file offset `offset`, if it is in an executable segment.
    pub fn vaddr_of(&self, offset: u64) -> Option<u64> {
        self.code_segment(offset)
            .map(|s| offset - s.offset + s.vaddr)
    }

    /// The executable segment holding file offset `offset`, so a caller can translate a
    /// whole range at once.
    pub fn code_segment(&self, offset: u64) -> Option<Segment> {
        self.segments
            .iter()
            .find(|s| offset >= s.offset && offset - s.offset < s.size)
            .copied()
    }

    /// The layout was reconstructed from a debug file's headers, not read from the
    /// binary's file ranges.
    pub fn assumed(&self) -> bool {
        self.assumed
    }

    /// The segments, in program-header order.
    pub fn as_slice(&self) -> &[Segment] {
        &self.segments
    }

    pub fn is_empty(&self) -> bool {
        self.segments.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_map_through_executable_segments_only() {
        let exe = std::env::current_exe().expect("exe");
        let data = std::fs::read(&exe).expect("read");
        let obj = object::File::parse(&*data).expect("parse");
        let code = CodeSegments::of_object(&obj);
        assert!(!code.assumed());
        let text = *code.segments.first().expect("an executable segment");
        assert_eq!(code.vaddr_of(text.offset + 0x10), Some(text.vaddr + 0x10));
        assert_eq!(code.vaddr_of(text.offset + text.size), None);
        assert_eq!(code.vaddr_of(u64::MAX), None);
        // Offset 0 (the ELF header, in the first, read-only segment) is no code.
        if text.offset > 0 {
            assert_eq!(code.vaddr_of(0), None, "no raw-offset fallback");
        }
    }
}
