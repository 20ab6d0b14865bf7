//! One executable mapping of a process: where an address of it falls in a file.

/// One executable mapping of a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    /// File offset of `start`.
    pub offset: u64,
    pub inode: u64,
    /// Path, `[vdso]`-style pseudo name, or empty for anonymous memory.
    pub path: String,
}

impl Mapping {
    /// What the address space of this mapping holds.
    pub fn kind(&self) -> MappingKind {
        if self.path == "[vdso]" {
            MappingKind::Vdso
        } else if self.inode != 0 && self.path.starts_with('/') {
            MappingKind::File
        } else {
            MappingKind::Anonymous
        }
    }
}

/// Classification of a mapping for address normalisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MappingKind {
    File,
    Vdso,
    /// JIT code, `[stack]`, `[heap]`, memfd without inode…: no file to symbolise from.
    Anonymous,
}
