//! Every cap on work and memory that hostile bytes could otherwise make unbounded.
//!
//! The recorder runs as root and reads the target's binaries and stack bytes, so each
//! size or count taken from them is checked against one of these before it is used.

/// Frames per unwound stack (also the splice's cap): the issue asks for at least 1,024.
pub const MAX_FRAMES: usize = 1024;

/// Bytes copied (or decompressed) from one ELF section: `.eh_frame`, `.eh_frame_hdr`,
/// `.debug_frame`. The largest `.eh_frame` on these machines is 7.4 MiB (LLVM's
/// shared library); a file with a larger one is refused ([`crate::UnwindError::TooLarge`]).
pub const MAX_SECTION_BYTES: usize = 64 << 20;

/// Entries of an index built by scanning `.eh_frame` (no usable `.eh_frame_hdr`) or
/// `.debug_frame`: 16 bytes each, so at most 16 MiB per section. Entries past the cap
/// are not indexed (their addresses fall back to the frame-pointer rule).
pub const MAX_INDEX_ENTRIES: usize = 1 << 20;

/// Bytes of one FDE (and of its CIE) evaluated to compile a rule. Evaluation is linear
/// in the instructions before the address; real FDEs are well under 4 KiB on these
/// machines, so a larger one is reported as bad unwind information.
pub const MAX_ENTRY_BYTES: usize = 64 << 10;

/// How far past the end of a copy (ended by the cap or an unreadable page) a needed
/// read may lie and still count as "the stack continues past the copy" rather than as
/// a stack switch: the default thread and main stack limit (8 MiB), twice.
pub const PAST_END_WINDOW: u64 = 16 << 20;

/// Slots of the rule cache (a power of two): 8,192 slots of 32 bytes, 256 KiB, in 4,096
/// two-way sets of one cache line each.
pub const CACHE_SLOTS: usize = 8192;
