//! What an unwind produces: frames, and why it stopped.

/// One frame of an unwound stack, as a process address (avma).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    pub addr: u64,
    /// Look `addr` up as is: the sampled PC, a PC interrupted by a signal, or the entry of
    /// a signal trampoline (the kernel's return address, not the one after a call).
    /// Otherwise `addr` is a return address and the call lies at `addr - 1`.
    pub exact: bool,
}

/// Why an unwind stopped. The frames found before it are kept either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum End {
    /// The outermost frame was reached: its CFI says the return address is undefined
    /// (glibc's `_start`, `clone3`/`start_thread`), or the return address is 0.
    Complete,
    /// A read needed bytes past the copy, and the copy ended at the cap.
    StackCap,
    /// A read needed bytes past the copy, and the copy ended at an unreadable page.
    UnreadablePage,
    /// The CFA or a needed read lies outside the copy, not just past its end: a stack
    /// switch, `sigaltstack`, a corrupt stack pointer, or past the end of the mapping.
    OutsideStack,
    /// The PC is in a module with no CFI for it, and the frame-pointer rule did not apply.
    NoUnwindInfo,
    /// The CFI is malformed, or uses what this unwinder does not support (a CFA in a
    /// register other than rsp/rbp, an expression other than the recognised forms).
    BadUnwindInfo,
    /// A return address lies in no executable mapping (it is not added as a frame).
    Unmapped,
    /// The CFA did not grow: following it could loop.
    NoProgress,
    /// [`MAX_FRAMES`](crate::MAX_FRAMES) frames were unwound.
    DepthLimit,
}
