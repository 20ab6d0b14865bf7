//! The caller's view of one process's executable mappings.

use crate::ModuleUnwind;

/// What code lies at a process address.
#[derive(Clone, Copy, Debug)]
pub enum CodeAt<'m> {
    /// A mapping of an ELF file; `svma` is the address translated to the file's own
    /// virtual addresses (through the mapping's offset and the file's program headers).
    Module { module: &'m ModuleUnwind, svma: u64 },
    /// Executable memory without a file (JIT code, perf trampolines): the frame-pointer
    /// rule applies.
    Anonymous,
    /// No executable mapping.
    Unmapped,
}

/// One process's address space, as the unwinder needs it.
pub trait AddressSpace {
    /// The code at `avma`. The unwinder asks about the address it looks rules up at: the
    /// sampled PC, and `return address - 1` for callers (so a call that ends a mapping is
    /// still found in it).
    fn code_at(&mut self, avma: u64) -> CodeAt<'_>;

    /// Up to `buf.len()` bytes of the code at `avma`, asked only where there is no CFI:
    /// in executable memory without a file ([`CodeAt::Anonymous`]) at any frame, in a
    /// module only at the sampled PC. A plain epilogue there (`add $8,%rsp; ret`, as
    /// CPython 3.12's perf trampolines and glibc's `_fini` end) gives the caller where the
    /// frame-pointer rule cannot. Returns how many bytes were read; by default none.
    fn read_code(&mut self, avma: u64, buf: &mut [u8]) -> usize {
        let _ = (avma, buf);
        0
    }
}
