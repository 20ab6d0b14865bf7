//! The user registers the unwinder starts from.

/// The sampled thread's user registers: where it was executing, its stack pointer and
/// its frame pointer (rbp, whatever it holds; CFI decides whether it is a frame pointer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Regs {
    pub ip: u64,
    pub sp: u64,
    pub bp: u64,
}
