//! CFI unwinding of user stacks copied at sample time (issue 13, piece 2).
//!
//! The kernel side copies the sampled thread's user registers (ip, sp, bp, rbx, r11: see
//! [`Regs`]) and the live
//! part of its stack (sp up to the end of the stack mapping, capped); this crate turns
//! them into a list of frames, from the rules in each module's `.eh_frame` (indexed by
//! `.eh_frame_hdr`), or `.debug_frame` from a separate debug file, with the
//! frame-pointer rule for code that has no CFI (JIT code, trampolines).
//!
//! - [`ModuleUnwind`]: one per ELF file, built once, shared by every process mapping it.
//! - [`Unwinder`]: walks one sample; owns a bounded cache of compiled rules.
//! - [`AddressSpace`]: the caller's view of one process's mappings.
//!
//! Every input (ELF bytes, stack bytes, registers) may be hostile: nothing here panics,
//! loops without bound or allocates without a cap on any of them (caps in [`limits`]).

mod cache;
mod cfi;
mod elf;
mod epilogue;
mod error;
mod expr;
mod frame;
mod index;
pub mod limits;
mod module;
mod regs;
mod rule;
mod space;
mod splice;
mod stack;
mod unwinder;

pub use error::UnwindError;
pub use frame::{End, Frame};
pub use limits::MAX_FRAMES;
pub use module::ModuleUnwind;
pub use regs::Regs;
pub use space::{AddressSpace, CodeAt};
pub use splice::splice_frame_pointers;
pub use stack::{CopyEnd, StackCopy};
pub use unwinder::Unwinder;

// A module is built once and shared by the recorder's threads; an unwinder moves to one.
const _: () = {
    const fn shared<T: Send + Sync>() {}
    const fn sent<T: Send>() {}
    shared::<ModuleUnwind>();
    sent::<Unwinder>();
};
