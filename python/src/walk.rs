//! The walk description: the plain offsets and flags of one interpreter's [`Layout`] that
//! the BPF program needs to go from a thread's state to its frames, in a fixed binary
//! layout the recorder puts in a BPF map. [`crate::frame_walk`] is the same walk in Rust,
//! the specification the C code follows.

use crate::layout::{EntryRule, Layout};
use crate::version::PyVersion;

/// `entry_mode`: every frame is an entry (3.8–3.10).
pub const ENTRY_EVERY_FRAME: u8 = 0;
/// `entry_mode`: the byte at `frame_entry` is non-zero on an entry frame (3.11).
pub const ENTRY_FLAG_BYTE: u8 = 1;
/// `entry_mode`: the byte at `frame_entry` equals `entry_value` on a shim frame, which is
/// skipped and makes the frame walked before it an entry (3.12+).
pub const ENTRY_SHIM_OWNER: u8 = 2;

/// `flags` bit: the thread state's `tstate_frame` points to a `_PyCFrame`, whose
/// `cframe_frame` holds the current frame (3.11, 3.12).
pub const FLAG_CFRAME: u8 = 1;

/// Version of the binary layout below, its first byte.
pub const LAYOUT_VERSION: u8 = 1;

/// How to walk one interpreter's Python stack from a thread, as plain numbers.
///
/// The walk, for a thread whose FS base is `fs` (in the BPF program, the task's
/// `thread.fsbase`), in a process whose `_PyRuntime` is at `runtime` (file address plus
/// load bias):
///
/// 1. `init, key = *(i32, u32 *)(runtime + runtime_tss)`; no Python state unless
///    `init == 1`. The key is set when the interpreter starts; read it on each sample.
/// 2. `tstate` = the thread's value for `key` ([`crate::TsdLayout`]); none if 0.
///    Optionally check `*(u64 *)(tstate + tstate_thread_id) == fs` (the thread's own
///    `pthread_t`): a state that fails it is another thread's or garbage.
/// 3. `frame = *(u64 *)(tstate + tstate_frame)`, then, if `flags & FLAG_CFRAME` and
///    `frame != 0`, `frame = *(u64 *)(frame + cframe_frame)`.
/// 4. While `frame != 0` and fewer than the cap: read `frame_size` bytes at `frame`;
///    `code = u64 at frame_code`, `instr = instr_size` bytes at `frame_instr` (a 4-byte
///    `f_lasti` is sign-extended), `previous = u64 at frame_previous`; by `entry_mode`:
///    0 report (code, instr, entry); 1 report with entry = (byte at `frame_entry` != 0);
///    2 if the byte at `frame_entry` == `entry_value` report nothing and mark the last
///    reported frame an entry, else report (code, instr, not entry). Then
///    `frame = previous`. Frames past the cap are not reported: the caller adds a marker.
///
/// Per reported frame the recorder needs `code`, `instr` and the entry flag; the rest is
/// user space's ([`crate::code_position`] turns `instr` into a bytecode offset,
/// [`crate::CodeObject::line_at`] into a line). An entry frame is the oldest frame one
/// eval-loop call ran: the native stack's eval-loop frames, newest first, take the
/// reported frames up to and including each entry in turn.
///
/// Binary layout ([`Self::to_bytes`], little-endian, 32 bytes; the C struct has the same
/// fields in this order with no padding):
///
/// | offset | type | field              |
/// |--------|------|--------------------|
/// | 0      | u8   | `layout` ([`LAYOUT_VERSION`]) |
/// | 1      | u8   | `major`            |
/// | 2      | u8   | `minor`            |
/// | 3      | u8   | `flags`            |
/// | 4      | u32  | `runtime_tss`      |
/// | 8      | u16  | `tstate_frame`     |
/// | 10     | u16  | `cframe_frame`     |
/// | 12     | u16  | `tstate_thread_id` |
/// | 14     | u16  | `frame_previous`   |
/// | 16     | u16  | `frame_code`       |
/// | 18     | u16  | `frame_instr`      |
/// | 20     | u16  | `frame_entry`      |
/// | 22     | u16  | `frame_size`       |
/// | 24     | u8   | `instr_size` (4 or 8) |
/// | 25     | u8   | `entry_mode`       |
/// | 26     | u8   | `entry_value`      |
/// | 27     | u8   | reserved, 0        |
/// | 28     | u32  | reserved, 0        |
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalkDescription {
    pub major: u8,
    pub minor: u8,
    pub flags: u8,
    /// Offset in `_PyRuntime` of the `Py_tss_t` (`int _is_initialized; u32 key`).
    pub runtime_tss: u32,
    pub tstate_frame: u16,
    pub cframe_frame: u16,
    pub tstate_thread_id: u16,
    pub frame_previous: u16,
    pub frame_code: u16,
    pub frame_instr: u16,
    pub frame_entry: u16,
    /// Bytes to read per frame, covering every field above.
    pub frame_size: u16,
    pub instr_size: u8,
    pub entry_mode: u8,
    pub entry_value: u8,
}

impl WalkDescription {
    pub fn new(version: PyVersion, layout: &Layout) -> Self {
        let (entry_mode, frame_entry, entry_value) = match layout.frame.entry {
            EntryRule::EveryFrame => (ENTRY_EVERY_FRAME, 0, 0),
            EntryRule::FlagByte { offset } => (ENTRY_FLAG_BYTE, offset, 0),
            EntryRule::ShimOwner { offset, value } => (ENTRY_SHIM_OWNER, offset, value),
        };
        WalkDescription {
            major: version.major,
            minor: version.minor,
            flags: if layout.thread.cframe_frame.is_some() {
                FLAG_CFRAME
            } else {
                0
            },
            runtime_tss: layout.runtime_tss,
            tstate_frame: layout.thread.frame,
            cframe_frame: layout.thread.cframe_frame.unwrap_or(0),
            tstate_thread_id: layout.thread.thread_id,
            frame_previous: layout.frame.previous,
            frame_code: layout.frame.code,
            frame_instr: layout.frame.instr,
            frame_entry,
            frame_size: u16::try_from(layout.frame_read_len()).unwrap_or(u16::MAX),
            instr_size: layout.frame.instr_field.size(),
            entry_mode,
            entry_value,
        }
    }

    /// The 32 bytes of the table above.
    pub fn to_bytes(&self) -> [u8; 32] {
        let mut b = [0u8; 32];
        b[0] = LAYOUT_VERSION;
        b[1] = self.major;
        b[2] = self.minor;
        b[3] = self.flags;
        b[4..8].copy_from_slice(&self.runtime_tss.to_le_bytes());
        let halves = [
            self.tstate_frame,
            self.cframe_frame,
            self.tstate_thread_id,
            self.frame_previous,
            self.frame_code,
            self.frame_instr,
            self.frame_entry,
            self.frame_size,
        ];
        for (i, h) in halves.iter().enumerate() {
            b[8 + 2 * i..10 + 2 * i].copy_from_slice(&h.to_le_bytes());
        }
        b[24] = self.instr_size;
        b[25] = self.entry_mode;
        b[26] = self.entry_value;
        b
    }

    /// Reads the 32 bytes back; `None` for another layout version or values no
    /// description has (tests, and a recorder reading a map back).
    pub fn from_bytes(b: &[u8; 32]) -> Option<Self> {
        if b[0] != LAYOUT_VERSION || b[27] != 0 || b[28..32] != [0; 4] {
            return None;
        }
        let h = |i: usize| u16::from_le_bytes([b[8 + 2 * i], b[9 + 2 * i]]);
        let d = WalkDescription {
            major: b[1],
            minor: b[2],
            flags: b[3],
            runtime_tss: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
            tstate_frame: h(0),
            cframe_frame: h(1),
            tstate_thread_id: h(2),
            frame_previous: h(3),
            frame_code: h(4),
            frame_instr: h(5),
            frame_entry: h(6),
            frame_size: h(7),
            instr_size: b[24],
            entry_mode: b[25],
            entry_value: b[26],
        };
        (matches!(d.instr_size, 4 | 8) && d.entry_mode <= ENTRY_SHIM_OWNER).then_some(d)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn binary_layout_is_the_documented_one() {
        let v = PyVersion::minor(3, 11);
        let d = WalkDescription::new(v, &Layout::for_version(v).unwrap());
        let b = d.to_bytes();
        assert_eq!(&b[..4], &[LAYOUT_VERSION, 3, 11, FLAG_CFRAME]);
        assert_eq!(u32::from_le_bytes(b[4..8].try_into().unwrap()), 592);
        assert_eq!(u16::from_le_bytes([b[8], b[9]]), 56, "tstate_frame");
        assert_eq!(u16::from_le_bytes([b[10], b[11]]), 8, "cframe_frame");
        assert_eq!(u16::from_le_bytes([b[12], b[13]]), 152, "tstate_thread_id");
        assert_eq!(u16::from_le_bytes([b[14], b[15]]), 48, "frame_previous");
        assert_eq!(u16::from_le_bytes([b[16], b[17]]), 32, "frame_code");
        assert_eq!(u16::from_le_bytes([b[18], b[19]]), 56, "frame_instr");
        assert_eq!(u16::from_le_bytes([b[20], b[21]]), 68, "frame_entry");
        assert_eq!(u16::from_le_bytes([b[22], b[23]]), 69, "frame_size");
        assert_eq!(&b[24..], &[8, ENTRY_FLAG_BYTE, 0, 0, 0, 0, 0, 0]);
        assert_eq!(WalkDescription::from_bytes(&b), Some(d));
        let mut bad = b;
        bad[24] = 3;
        assert_eq!(WalkDescription::from_bytes(&bad), None);
    }

    #[test]
    fn modes_per_version() {
        let mode = |minor| {
            let v = PyVersion::minor(3, minor);
            let d = WalkDescription::new(v, &Layout::for_version(v).unwrap());
            (d.entry_mode, d.instr_size, d.flags)
        };
        assert_eq!(mode(8), (ENTRY_EVERY_FRAME, 4, 0));
        assert_eq!(mode(10), (ENTRY_EVERY_FRAME, 4, 0));
        assert_eq!(mode(11), (ENTRY_FLAG_BYTE, 8, FLAG_CFRAME));
        assert_eq!(mode(12), (ENTRY_SHIM_OWNER, 8, FLAG_CFRAME));
    }
}
