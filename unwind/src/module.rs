//! One ELF file's unwind information, built once and shared by every process mapping it.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::UnwindError;
use crate::cfi::{Cfi, Compiled, Context};
use crate::elf;
use crate::rule::Rule;

/// The unwind information of one ELF file: its `.eh_frame` (with `.eh_frame_hdr`'s index),
/// a `.debug_frame` (its own or a debug file's) for what `.eh_frame` does not cover, and
/// its PLT ranges. Holds copies: the file's bytes may be dropped after building it.
#[derive(Debug)]
pub struct ModuleUnwind {
    id: u64,
    eh_frame: Option<Cfi>,
    debug_frame: Option<Cfi>,
    plt: Vec<Range<u64>>,
    entry: Option<u64>,
}

/// How far past the entry point a frame without CFI still counts as `_start`'s.
const ENTRY_WINDOW: u64 = 32;

/// Ids are never reused, so a cache entry of a dropped module can never match another.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl ModuleUnwind {
    /// Reads the unwind information of an ELF file (x86_64, ELF64 little-endian) held in
    /// memory. A file without any CFI is fine: its code is unwound by the frame-pointer
    /// rule.
    pub fn from_elf(data: &[u8]) -> Result<ModuleUnwind, UnwindError> {
        Self::read(data)
    }

    /// [`ModuleUnwind::from_elf`] from any `object::ReadRef`: a `ReadCache` over an open
    /// file reads only the headers and the sections kept, with `pread` (a mapping of a
    /// target's binary would fault if the target truncated the file under it).
    pub fn read<'d, R: object::ReadRef<'d>>(data: R) -> Result<ModuleUnwind, UnwindError> {
        let sections = elf::read_module(data)?;
        let eh_frame = sections.eh_frame.map(|eh| {
            Cfi::eh_frame(
                eh,
                sections.eh_frame_hdr.as_ref(),
                sections.text,
                sections.got,
            )
        });
        Ok(ModuleUnwind {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            eh_frame: eh_frame.filter(|c| !c.is_empty()),
            debug_frame: sections
                .debug_frame
                .map(Cfi::debug_frame)
                .filter(|c| !c.is_empty()),
            plt: sections.plt,
            entry: sections.entry,
        })
    }

    /// Adds the `.debug_frame` of a separate debug file (found by build-id or debuglink),
    /// used where `.eh_frame` has no entry. Replaces a `.debug_frame` read before. A debug
    /// file without one changes nothing.
    pub fn add_debug_frame(&mut self, debug_file: &[u8]) -> Result<(), UnwindError> {
        self.read_debug_frame(debug_file)
    }

    /// [`ModuleUnwind::add_debug_frame`] from any `object::ReadRef` (see
    /// [`ModuleUnwind::read`]).
    pub fn read_debug_frame<'d, R: object::ReadRef<'d>>(
        &mut self,
        debug_file: R,
    ) -> Result<(), UnwindError> {
        if let Some(copied) = elf::read_debug_frame(debug_file)? {
            let cfi = Cfi::debug_frame(copied);
            if !cfi.is_empty() {
                self.debug_frame = Some(cfi);
            }
        }
        Ok(())
    }

    /// The start of the FDE covering `svma`: names code that has no symbol
    /// (`python3.11+0x1a8700`).
    pub fn function_start(&self, svma: u64) -> Option<u64> {
        self.cfis()
            .find_map(|cfi| cfi.fde_range(svma))
            .map(|(start, _)| start)
    }

    /// Unique per instance, never reused: a cache key.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Heap bytes held (copied sections and indexes), for the recorder's memory budget.
    pub fn heap_bytes(&self) -> usize {
        self.cfis().map(Cfi::heap_bytes).sum::<usize>()
            + self.plt.capacity() * std::mem::size_of::<Range<u64>>()
    }

    /// Whether `svma` is in the first instructions at the ELF entry point (`_start`), the
    /// outermost frame of a process's first thread. The dynamic loader's `_start` has no
    /// CFI to say so (its `call _dl_start` returns to entry + 8).
    pub(crate) fn at_entry(&self, svma: u64) -> bool {
        self.entry
            .is_some_and(|e| svma >= e && svma - e < ENTRY_WINDOW)
    }

    /// Whether the module has any CFI.
    pub fn has_cfi(&self) -> bool {
        self.eh_frame.is_some() || self.debug_frame.is_some()
    }

    fn cfis(&self) -> impl Iterator<Item = &Cfi> {
        self.eh_frame.iter().chain(self.debug_frame.iter())
    }

    /// The rule for `svma`: `.eh_frame`'s, else `.debug_frame`'s, else the PLT's.
    pub(crate) fn compile(&self, svma: u64, ctx: &mut Context) -> Compiled {
        let mut found = Compiled::NoFde;
        for cfi in self.cfis() {
            match cfi.compile(svma, ctx) {
                Compiled::Rule(rule) => return Compiled::Rule(rule),
                Compiled::Bad => found = Compiled::Bad,
                Compiled::NoFde => {}
            }
        }
        if found == Compiled::NoFde && self.plt.iter().any(|r| r.contains(&svma)) {
            return Compiled::Rule(Rule::JUST_RETURN);
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_entry_point_is_known() {
        let exe = std::fs::read(std::env::current_exe().expect("exe")).expect("read");
        let entry = object::read::elf::ElfFile64::<object::LittleEndian>::parse(&*exe)
            .map(|f| object::Object::entry(&f))
            .expect("ELF");
        let m = ModuleUnwind::from_elf(&exe).expect("module");
        assert!(m.at_entry(entry) && m.at_entry(entry + 8));
        assert!(!m.at_entry(entry + ENTRY_WINDOW) && !m.at_entry(entry.wrapping_sub(1)));
    }
}
