//! Why a module's unwind information could not be loaded. A message names what failed;
//! the cause, where there is one, is its `source()`.

/// A module's ELF or CFI could not be used at all. (Damage inside the CFI is not an
/// error here: entries that parse are used, the rest end unwinds with
/// [`End::BadUnwindInfo`](crate::End::BadUnwindInfo).)
#[derive(Debug, thiserror::Error)]
pub enum UnwindError {
    #[error("not a readable ELF file")]
    Elf(#[from] object::Error),
    #[error("not an x86_64 little-endian ELF64 file (e_machine {machine})")]
    Architecture { machine: u16 },
    #[error("section {section} is {size} bytes, more than the {cap}-byte cap")]
    TooLarge {
        section: &'static str,
        size: u64,
        cap: usize,
    },
    #[error("section {section} cannot be decompressed: {reason}")]
    Decompress {
        section: &'static str,
        reason: String,
    },
}
