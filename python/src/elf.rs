//! One ELF file as detection sees it, through the `object` crate: its exported and local
//! symbols, the bytes at a virtual address, the symbols its GOT slots are bound to, the
//! libraries it needs. Addresses are the file's virtual addresses (what its symbol tables
//! use); the recorder adds a mapping's load bias.

use std::collections::HashMap;
use std::ops::Range;

use object::read::elf::{ElfFile64, FileHeader};
use object::{
    Object, ObjectSection, ObjectSymbol, ObjectSymbolTable, RelocationTarget, SectionKind,
    SymbolKind,
};
use thiserror::Error;

/// An ELF file that cannot be read as one: it is not ELF, not 64-bit little-endian, or its
/// headers do not parse.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("not a readable 64-bit little-endian ELF file: {0}")]
pub struct ElfError(pub String);

/// The file ranges of `data`'s non-allocated `.debug*` and `.zdebug*` sections, sorted,
/// disjoint and within `0..len`: what detection never reads, so the recorder need not read
/// it from the file either (pyenv's libpython3.12.so: 22 of its 30 MB). Empty when the
/// file is not a 64-bit ELF or its section table does not parse. The table is untrusted:
/// a range it gives only ever means fewer bytes read (a crafted one can make the file
/// unrecognisable, as it could anyway).
pub fn debug_ranges<'a, R: object::ReadRef<'a>>(data: R, len: u64) -> Vec<Range<u64>> {
    use object::read::elf::SectionHeader;
    use object::{Endianness, elf};
    let Ok(header) = elf::FileHeader64::<Endianness>::parse(data) else {
        return Vec::new();
    };
    let Ok(endian) = header.endian() else {
        return Vec::new();
    };
    let Ok(sections) = header.sections(endian, data) else {
        return Vec::new();
    };
    let mut ranges: Vec<Range<u64>> = sections
        .iter()
        .filter(|s| s.sh_flags(endian).0 & elf::SHF_ALLOC.0 == 0)
        .filter(|s| {
            sections
                .section_name(endian, s)
                .is_ok_and(|n| n.starts_with(b".debug") || n.starts_with(b".zdebug"))
        })
        .filter_map(|s| s.file_range(endian))
        .map(|(offset, size)| offset.min(len)..offset.saturating_add(size).min(len))
        .filter(|r| r.start < r.end)
        .collect();
    ranges.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match merged.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    merged
}

/// A symbol's address range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sym {
    pub address: u64,
    pub size: u64,
}

impl Sym {
    pub fn range(&self) -> Range<u64> {
        self.address..self.address.saturating_add(self.size)
    }
}

/// A parsed ELF file borrowing its bytes.
#[derive(Debug)]
pub struct ElfImage<'d> {
    file: ElfFile64<'d, object::LittleEndian>,
}

impl<'d> ElfImage<'d> {
    pub fn parse(data: &'d [u8]) -> Result<Self, ElfError> {
        let file =
            ElfFile64::<object::LittleEndian>::parse(data).map_err(|e| ElfError(e.to_string()))?;
        Ok(ElfImage { file })
    }

    /// Whether the file is x86-64 code, the one architecture the decoders know.
    pub fn is_x86_64(&self) -> bool {
        let endian = self.file.endian();
        self.file.elf_header().e_machine(endian) == object::elf::EM_X86_64
    }

    /// The defined dynamic (exported) symbols among `names`, in one pass over `.dynsym`.
    pub fn exports(&self, names: &[&'static str]) -> HashMap<&'static str, Sym> {
        let mut found = HashMap::new();
        for sym in self.file.dynamic_symbols() {
            if sym.is_undefined() {
                continue;
            }
            let Ok(name) = sym.name() else { continue };
            if let Some(wanted) = names.iter().find(|n| **n == name) {
                found.entry(*wanted).or_insert(Sym {
                    address: sym.address(),
                    size: sym.size(),
                });
            }
        }
        found
    }

    /// Local and global function symbols of `.symtab` (absent from a stripped file) whose
    /// names satisfy `pred`.
    pub fn symtab_functions(&self, pred: impl Fn(&str) -> bool) -> Vec<(String, Sym)> {
        let mut out = Vec::new();
        for sym in self.file.symbols() {
            if sym.kind() != SymbolKind::Text || sym.is_undefined() {
                continue;
            }
            let Ok(name) = sym.name() else { continue };
            if pred(name) {
                out.push((
                    name.to_string(),
                    Sym {
                        address: sym.address(),
                        size: sym.size(),
                    },
                ));
            }
        }
        out
    }

    /// Allocated sections of data (not code, not `.bss`): address and bytes.
    pub fn data_sections(&self) -> Vec<(u64, &'d [u8])> {
        self.file
            .sections()
            .filter(|s| {
                matches!(
                    s.kind(),
                    SectionKind::Data
                        | SectionKind::ReadOnlyData
                        | SectionKind::ReadOnlyDataWithRel
                )
            })
            .filter_map(|s| Some((s.address(), s.data().ok()?)))
            .collect()
    }

    /// The address ranges of the code sections.
    pub fn code_ranges(&self) -> Vec<Range<u64>> {
        self.file
            .sections()
            .filter(|s| s.kind() == SectionKind::Text)
            .filter_map(|s| Some(s.address()..s.address().checked_add(s.size())?))
            .collect()
    }

    /// The file's bytes at `address..address + len`, if one section holds them all.
    pub fn bytes_at(&self, address: u64, len: u64) -> Option<&'d [u8]> {
        self.file.sections().find_map(|s| {
            let r = s.address()..s.address().checked_add(s.size())?;
            if !r.contains(&address) {
                return None;
            }
            s.data_range(address, len).ok().flatten()
        })
    }

    /// The section holding `address`: its name and range.
    pub fn section_of(&self, address: u64) -> Option<(&'d str, Range<u64>)> {
        self.file.sections().find_map(|s| {
            let r = s.address()..s.address().checked_add(s.size())?;
            (r.contains(&address)).then(|| (s.name().unwrap_or(""), r))
        })
    }

    /// A section's address range and bytes.
    pub fn section(&self, name: &str) -> Option<(u64, &'d [u8])> {
        let s = self.file.section_by_name(name)?;
        Some((s.address(), s.data().ok()?))
    }

    /// The symbol a dynamic relocation binds the 8-byte slot at `address` to (a GOT entry
    /// `R_X86_64_GLOB_DAT _PyRuntime`), plus its addend.
    pub fn slot_symbol(&self, address: u64) -> Option<(String, i64)> {
        let relocs = self.file.dynamic_relocations()?;
        for (offset, reloc) in relocs {
            if offset != address {
                continue;
            }
            let RelocationTarget::Symbol(index) = reloc.target() else {
                return None;
            };
            let sym = self
                .file
                .dynamic_symbol_table()?
                .symbol_by_index(index)
                .ok()?;
            return Some((sym.name().ok()?.to_string(), reloc.addend()));
        }
        None
    }

    /// The file's `DT_NEEDED` libraries.
    pub fn needed(&self) -> Vec<String> {
        let Ok(table) = self.file.elf_dynamic_table() else {
            return Vec::new();
        };
        table
            .iter()
            .filter(|d| d.tag == object::elf::DT_NEEDED)
            .filter_map(|d| table.string(d).ok())
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .collect()
    }

    /// The file's `DT_SONAME`.
    pub fn soname(&self) -> Option<String> {
        let table = self.file.elf_dynamic_table().ok()?;
        let d = table.iter().find(|d| d.tag == object::elf::DT_SONAME)?;
        Some(String::from_utf8_lossy(table.string(d).ok()?).into_owned())
    }
}
