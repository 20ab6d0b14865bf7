//! The BPF program's record layout and constants, generated from their one definition,
//! `ebpf/sample.h`, by `recorder/build.rs` (which says what it reads): `HS_*` constants
//! and one `#[repr(C)]` struct per `struct hs_*` (`HsHeader` for `struct hs_header`), each
//! asserted to have the size the header asserts for it.

include!(concat!(env!("OUT_DIR"), "/sample_h.rs"));

/// One field of a generated struct: its name, byte offset and size.
pub type Field = (&'static str, usize, usize);

/// A generated struct's C name and fields, in order.
pub trait Layout {
    const C_NAME: &str;
    const FIELDS: &[Field];
}

/// A generated struct as [`STRUCTS`] lists it.
#[derive(Debug, Clone, Copy)]
pub struct StructLayout {
    pub c_name: &'static str,
    pub size: usize,
    pub fields: &'static [Field],
}

/// Size of [`HsHeader`], the start of every record.
pub const HEADER_SIZE: usize = size_of::<HsHeader>();
/// Size of [`HsUserRegs`], after the header in every sample.
pub const USER_REGS_SIZE: usize = size_of::<HsUserRegs>();
/// Size of [`HsOffCpu`], the tail of an off-CPU record.
pub const OFF_CPU_TAIL_SIZE: usize = size_of::<HsOffCpu>();
/// Size of [`HsThread`], a thread-times record's body and a `threads` map value.
pub const THREAD_SIZE: usize = size_of::<HsThread>();
/// Most user frames one sample can carry.
pub const MAX_USER_FRAMES: usize = HS_MAX_USER_FRAMES as usize;
/// Most kernel frames one sample can carry.
pub const MAX_KERNEL_FRAMES: usize = HS_MAX_KERNEL_FRAMES as usize;
/// Most stack bytes one sample can carry.
pub const MAX_STACK: usize = HS_MAX_STACK as usize;
/// Most Python frames one sample can carry.
pub const MAX_PYTHON_FRAMES: usize = HS_MAX_PYTHON_FRAMES as usize;
/// Size of [`HsPython`], the head of a sample's Python part.
pub const PYTHON_HEADER_SIZE: usize = size_of::<HsPython>();
/// Size of [`HsPythonFrame`], one Python frame of a sample.
pub const PYTHON_FRAME_SIZE: usize = size_of::<HsPythonFrame>();
