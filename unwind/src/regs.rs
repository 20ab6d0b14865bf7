//! The user registers the unwinder starts from.

/// The sampled thread's user registers: where it was executing, its stack pointer, its
/// frame pointer (rbp, whatever it holds; CFI decides whether it is a frame pointer), and
/// the two registers real CFI also computes a CFA from: rbx (ld.so's
/// `_dl_runtime_resolve` keeps its entry rsp there while rsp is realigned) and r11 (LLVM's
/// inline stack probe of a frame larger than a page: the CFA is r11 + the frame size while
/// the loop touches the frame's pages). No other register is needed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Regs {
    pub ip: u64,
    pub sp: u64,
    pub bp: u64,
    pub rbx: u64,
    pub r11: u64,
}
