//! Every cap on what is read from a target or an ELF file, in one place. The target may be
//! crafted to look like CPython; these bound each read, each loop and each allocation.

/// Characters of a name or file name (`co_qualname`, `co_filename`): Linux paths stop at
/// 4096 bytes; a longer string is an error, not a truncation, so no name is made up.
pub const MAX_STRING_CHARS: u64 = 4096;

/// Bytes of a line table (`co_lnotab`, `co_linetable`). A 10,000-line function has a
/// table of a few tens of KiB; past this the code object keeps its name and loses lines.
pub const MAX_LINE_TABLE_BYTES: u64 = 1 << 20;

/// Bytes of bytecode of one code object: offsets are checked against the code's size,
/// which must itself be plausible.
pub const MAX_CODE_BYTES: u64 = 1 << 26;

/// Frames the reference walk follows at most, whatever the caller asks (the BPF program
/// has its own, smaller cap).
pub const MAX_WALK_FRAMES: usize = 4096;

/// Bytes of `_PyEval_EvalFrameDefault` (hot part) decoded to find its `.cold` part: the
/// largest seen is 3.12's at ~60 KB.
pub const MAX_EVAL_LOOP_BYTES: u64 = 1 << 21;

/// Separate pieces (FDEs) an eval loop's cold code may span; more is not a compiler's
/// hot/cold split.
pub const MAX_COLD_PIECES: usize = 8;

/// Instructions decoded at the start of a small function (`PyGILState_GetThisThreadState`,
/// `pthread_getspecific`) to find the offset it reads.
pub const MAX_PROLOGUE_INSNS: usize = 24;

/// Code objects a [`crate::CodeCache`] holds before it starts over.
pub const MAX_CACHED_CODE_OBJECTS: usize = 1 << 16;
