//! What hotspot knows about CPython, as pure functions over bytes: no /proc, no BPF, no
//! I/O of its own. The recorder gives it ELF files and a [`MemoryReader`] over a target.
//!
//! # Wiring (what the recorder does)
//!
//! 1. **Detection**, once per file (executable or mapped library, keyed by build-id):
//!    [`detect()`] → [`Detection`]. `Supported(interp)` carries file addresses; add the
//!    mapping's load bias for the process's: `_PyRuntime` ([`Interpreter::runtime`]),
//!    the eval loop's ranges hot and cold ([`Interpreter::eval_loop`]), the type objects
//!    ([`Interpreter::type_addresses`]). `Unsupported(u)` prints as the one line `info`
//!    shows (`u.to_string()`); `NotPython` may name the `libpython` the file links.
//! 2. **glibc**: [`TsdLayout::from_elf`] on the process's `libc.so.6` (or
//!    `libpthread.so.0` before glibc 2.34): where each thread's key values are.
//! 3. **The BPF walk**: per process, `runtime` (rebased), [`Interpreter::walk`]
//!    ([`WalkDescription::to_bytes`], 32 bytes) and the [`TsdLayout`]
//!    ([`TsdLayout::to_bytes`], 8 bytes) go into a map. Per sample the program reads
//!    the key, the thread state, and the frames as [`WalkDescription`] specifies, and
//!    reports per frame the code address, the raw `instr` and the entry flag
//!    ([`FrameRecord`]); [`WalkDescription::walk`] is that walk in Rust.
//! 4. **Naming**, in user space while the process lives: a [`CodeCache`] per process
//!    ([`Interpreter::layout`], the rebased type addresses) turns a code address into a
//!    [`CodeObject`] (qualified name, file, first line, line table), re-checked on each
//!    lookup; [`CodeObject::line_at`] turns the frame's `instr` into its line.
//! 5. **The merge**: native frames whose PC is in the eval loop ([`EvalLoop::contains`],
//!    on the file address) are replaced, newest first, by the reported Python frames up
//!    to and including the next entry frame each.
//!
//! # Scope and checks
//!
//! x86-64 and glibc (musl keeps thread-specific data elsewhere: [`TsdLayout::from_elf`]
//! refuses it). Checked on pyenv's CPython 3.8–3.13 and Debian's 3.11 by the tests in
//! `python/tests/`: `layout_dwarf` (every offset against the builds' DWARF),
//! `detect_real` (versions, reasons, the cold part against objdump and `.cold` symbols),
//! `line_tables` (every instruction offset against `PyCode_Addr2Line`), `live_process`
//! (thread states, frames, names and lines read from running interpreters), `glibc_tsd`
//! (against glibc's DWARF), `detect_crafted` (fake interpreters), `fuzz_inputs`.
//!
//! # Modules
//!
//! - [`mod@detect`]: the verdict on a file ([`version`], [`debug_offsets`], [`layout`],
//!   [`tss_key`], [`eval_loop`] behind it, [`elf`] and `disasm` under those);
//! - [`glibc_tsd`]: thread-specific data in glibc;
//! - [`walk`], [`frame_walk`]: the walk description and the walk;
//! - [`memory`], [`code`], [`unicode`], [`line_table`], [`position`], [`cache`]: reading
//!   the target, each read bounded by [`limits`].

pub mod cache;
pub mod code;
pub mod debug_offsets;
pub mod detect;
mod disasm;
mod eh_frame;
pub mod elf;
pub mod eval_loop;
pub mod frame_walk;
pub mod glibc_tsd;
pub mod layout;
pub mod limits;
pub mod line_table;
pub mod memory;
pub mod position;
pub mod tss_key;
pub mod unicode;
pub mod version;
pub mod walk;

#[cfg(test)]
mod test_image;

pub use cache::CodeCache;
pub use code::{CodeError, CodeObject, TypeAddresses, read_code};
pub use detect::{
    DetectOptions, Detection, Interpreter, KeyCheck, NotPython, OffsetsSource, Reason, Unsupported,
    VersionSource, detect, detect_with,
};
pub use elf::ElfError;
pub use eval_loop::{ColdSource, EvalLoop};
pub use frame_walk::{FrameRecord, Walk, WalkEnd};
pub use glibc_tsd::{TsdLayout, TsdSlot};
pub use layout::Layout;
pub use line_table::LineTable;
pub use memory::{MemoryReader, ReadError, RegionMemory};
pub use position::{CodePosition, code_position};
pub use version::PyVersion;
pub use walk::WalkDescription;
