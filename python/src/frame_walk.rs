//! The walk of [`WalkDescription`] in Rust, over a [`MemoryReader`]: from a thread's FS
//! base to its thread state, from the thread state to its frames. The specification the
//! BPF program's C follows, what the tests run against live interpreters, and a way for
//! user space to walk a stopped thread.

use thiserror::Error;

use crate::glibc_tsd::{TsdLayout, TsdSlot};
use crate::limits::MAX_WALK_FRAMES;
use crate::memory::{MemoryReader, ReadError, field_u64, read_array, read_vec};
use crate::walk::{
    ENTRY_EVERY_FRAME, ENTRY_FLAG_BYTE, ENTRY_SHIM_OWNER, FLAG_CFRAME, WalkDescription,
};

/// One Python frame as the walk reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameRecord {
    /// The code object's address (3.13: `f_executable`, a code object on every frame
    /// the walk reports, which user space checks).
    pub code: u64,
    /// The frame's position field, raw: `f_lasti` sign-extended (3.8–3.10), or the
    /// instruction pointer (3.11+); [`crate::code_position`] makes it a bytecode offset.
    pub instr: u64,
    /// The oldest frame of its eval-loop call.
    pub entry: bool,
}

/// Why a walk stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalkEnd {
    /// The oldest frame was reached (a NULL previous frame).
    Bottom,
    /// The cap was reached with frames left: the stack is cut, add a marker frame.
    Cap,
    /// A frame could not be read: the frames so far are kept.
    Unreadable(ReadError),
}

/// The frames of one thread, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Walk {
    pub frames: Vec<FrameRecord>,
    pub end: WalkEnd,
}

/// Why a thread's state could not be found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum ThreadStateError {
    #[error("reading the thread state: {0}")]
    Read(#[from] ReadError),
}

impl WalkDescription {
    /// The thread's `PyThreadState *` through the interpreter's pthread key:
    /// `Ok(None)` when the key is not created yet or the thread has no state (it never
    /// ran Python). `runtime` is `_PyRuntime`'s address in the process.
    pub fn thread_state(
        &self,
        mem: &impl MemoryReader,
        tsd: &TsdLayout,
        runtime: u64,
        fs_base: u64,
    ) -> Result<Option<u64>, ThreadStateError> {
        let tss: [u8; 8] = read_array(mem, runtime.wrapping_add(u64::from(self.runtime_tss)))?;
        let initialized = i32::from_le_bytes([tss[0], tss[1], tss[2], tss[3]]);
        if initialized != 1 {
            return Ok(None);
        }
        let key = u32::from_le_bytes([tss[4], tss[5], tss[6], tss[7]]);
        let Some(slot) = tsd.slot(fs_base, key) else {
            return Ok(None);
        };
        let value = match slot {
            TsdSlot::Direct(at) => u64::from_le_bytes(read_array(mem, at)?),
            TsdSlot::Indirect {
                block_pointer,
                offset,
            } => {
                let block = u64::from_le_bytes(read_array(mem, block_pointer)?);
                if block == 0 {
                    return Ok(None);
                }
                u64::from_le_bytes(read_array(mem, block.wrapping_add(offset))?)
            }
        };
        Ok((value != 0).then_some(value))
    }

    /// Whether `tstate` belongs to the thread whose FS base is `fs_base` (its
    /// `thread_id`, the thread's `pthread_t`, is its thread pointer on x86-64 glibc).
    pub fn state_is_threads(
        &self,
        mem: &impl MemoryReader,
        tstate: u64,
        fs_base: u64,
    ) -> Result<bool, ReadError> {
        let id = read_array(mem, tstate.wrapping_add(u64::from(self.tstate_thread_id)))?;
        Ok(u64::from_le_bytes(id) == fs_base)
    }

    /// The thread's newest frame, 0 when it runs no Python.
    pub fn current_frame(&self, mem: &impl MemoryReader, tstate: u64) -> Result<u64, ReadError> {
        let mut frame = u64::from_le_bytes(read_array(
            mem,
            tstate.wrapping_add(u64::from(self.tstate_frame)),
        )?);
        if self.flags & FLAG_CFRAME != 0 && frame != 0 {
            frame = u64::from_le_bytes(read_array(
                mem,
                frame.wrapping_add(u64::from(self.cframe_frame)),
            )?);
        }
        Ok(frame)
    }

    /// Walks from `frame` (see [`Self::current_frame`]), reporting at most `cap` frames
    /// (itself at most [`MAX_WALK_FRAMES`]). A loop in the chain ends at the cap.
    pub fn walk(&self, mem: &impl MemoryReader, mut frame: u64, cap: usize) -> Walk {
        let cap = cap.min(MAX_WALK_FRAMES);
        let mut frames: Vec<FrameRecord> = Vec::new();
        let size = usize::from(self.frame_size);
        // Frames visited, shims included: bounds the loop when every frame is a shim.
        let mut visited = 0;
        while frame != 0 {
            if frames.len() == cap || visited == MAX_WALK_FRAMES {
                return Walk {
                    frames,
                    end: WalkEnd::Cap,
                };
            }
            visited += 1;
            let bytes = match read_vec(mem, frame, size) {
                Ok(b) => b,
                Err(e) => {
                    return Walk {
                        frames,
                        end: WalkEnd::Unreadable(e),
                    };
                }
            };
            let at = |o: u16| usize::from(o);
            let code = field_u64(&bytes, at(self.frame_code)).unwrap_or(0);
            let previous = field_u64(&bytes, at(self.frame_previous)).unwrap_or(0);
            let instr = if self.instr_size == 4 {
                let b = bytes.get(at(self.frame_instr)..at(self.frame_instr) + 4);
                b.map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64 as u64)
                    .unwrap_or(0)
            } else {
                field_u64(&bytes, at(self.frame_instr)).unwrap_or(0)
            };
            let entry_byte = bytes.get(at(self.frame_entry)).copied().unwrap_or(0);
            match self.entry_mode {
                ENTRY_EVERY_FRAME => frames.push(FrameRecord {
                    code,
                    instr,
                    entry: true,
                }),
                ENTRY_FLAG_BYTE => frames.push(FrameRecord {
                    code,
                    instr,
                    entry: entry_byte != 0,
                }),
                ENTRY_SHIM_OWNER if entry_byte == self.entry_value => {
                    if let Some(last) = frames.last_mut() {
                        last.entry = true;
                    }
                }
                _ => frames.push(FrameRecord {
                    code,
                    instr,
                    entry: false,
                }),
            }
            frame = previous;
        }
        Walk {
            frames,
            end: WalkEnd::Bottom,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::layout::Layout;
    use crate::memory::RegionMemory;
    use crate::version::PyVersion;

    fn desc(minor: u8) -> WalkDescription {
        let v = PyVersion::minor(3, minor);
        WalkDescription::new(v, &Layout::for_version(v).unwrap())
    }

    /// A frame of `d` at `at`: code, instr, previous, entry byte.
    fn frame(
        mem: &mut RegionMemory,
        d: &WalkDescription,
        at: u64,
        code: u64,
        prev: u64,
        entry: u8,
    ) {
        let mut b = vec![0u8; usize::from(d.frame_size)];
        let put = |b: &mut Vec<u8>, o: u16, v: &[u8]| {
            b[usize::from(o)..usize::from(o) + v.len()].copy_from_slice(v)
        };
        put(&mut b, d.frame_code, &code.to_le_bytes());
        put(&mut b, d.frame_previous, &prev.to_le_bytes());
        put(
            &mut b,
            d.frame_instr,
            &(code + 0x100).to_le_bytes()[..usize::from(d.instr_size)],
        );
        if d.entry_mode != 0 {
            b[usize::from(d.frame_entry)] = entry;
        }
        mem.add(at, b);
    }

    #[test]
    fn shims_mark_the_frame_before_them() {
        let d = desc(12);
        let mut m = RegionMemory::new();
        // newest 0x1000 -> 0x2000 -> shim 0x3000 -> 0x4000 -> shim 0x5000 -> end
        frame(&mut m, &d, 0x1000, 0xa, 0x2000, 0);
        frame(&mut m, &d, 0x2000, 0xb, 0x3000, 0);
        frame(&mut m, &d, 0x3000, 0xdead, 0x4000, 3);
        frame(&mut m, &d, 0x4000, 0xc, 0x5000, 1);
        frame(&mut m, &d, 0x5000, 0xdead, 0, 3);
        let w = d.walk(&m, 0x1000, 128);
        assert_eq!(w.end, WalkEnd::Bottom);
        let got: Vec<(u64, bool)> = w.frames.iter().map(|f| (f.code, f.entry)).collect();
        assert_eq!(got, vec![(0xa, false), (0xb, true), (0xc, true)]);
        assert_eq!(w.frames[0].instr, 0xa + 0x100);
    }

    #[test]
    fn flag_bytes_and_lasti() {
        let d = desc(11);
        let mut m = RegionMemory::new();
        frame(&mut m, &d, 0x1000, 0xa, 0x2000, 0);
        frame(&mut m, &d, 0x2000, 0xb, 0, 1);
        let got: Vec<bool> = d
            .walk(&m, 0x1000, 8)
            .frames
            .iter()
            .map(|f| f.entry)
            .collect();
        assert_eq!(got, vec![false, true]);
        // 3.8: every frame an entry, f_lasti sign-extended.
        let d = desc(8);
        let mut m = RegionMemory::new();
        frame(&mut m, &d, 0x1000, 0xa, 0, 0);
        m.write(0x1000 + u64::from(d.frame_instr), &(-1i32).to_le_bytes());
        let w = d.walk(&m, 0x1000, 8);
        assert_eq!(
            w.frames,
            vec![FrameRecord {
                code: 0xa,
                instr: u64::MAX,
                entry: true
            }]
        );
    }

    #[test]
    fn loops_and_holes_end_the_walk() {
        let d = desc(12);
        let mut m = RegionMemory::new();
        frame(&mut m, &d, 0x1000, 0xa, 0x1000, 0);
        let w = d.walk(&m, 0x1000, 50);
        assert_eq!((w.frames.len(), w.end), (50, WalkEnd::Cap));
        let w = d.walk(&m, 0x1000, usize::MAX);
        assert_eq!(w.frames.len(), MAX_WALK_FRAMES, "the hard cap");
        // A loop of shims reports nothing and still ends.
        let mut m = RegionMemory::new();
        frame(&mut m, &d, 0x1000, 0xa, 0x1000, 3);
        let w = d.walk(&m, 0x1000, 50);
        assert_eq!((w.frames.len(), w.end), (0, WalkEnd::Cap));
        // An unreadable frame keeps the frames before it.
        let mut m = RegionMemory::new();
        frame(&mut m, &d, 0x1000, 0xa, 0x9000, 0);
        let w = d.walk(&m, 0x1000, 50);
        assert_eq!(w.frames.len(), 1);
        assert!(matches!(
            w.end,
            WalkEnd::Unreadable(ReadError { addr: 0x9000, .. })
        ));
    }

    #[test]
    fn thread_state_through_either_key_level() {
        let d = desc(11);
        let tsd = TsdLayout {
            specific: 0x510,
            per_block: 32,
            blocks: 32,
            key_data_size: 16,
            key_data_data: 8,
            first_block: Some(0x310),
        };
        let (runtime, fs) = (0x10_0000u64, 0x20_0000u64);
        let mut m = RegionMemory::new();
        m.add(runtime, vec![0; 4096]);
        m.add(fs, vec![0; 0x1000]);
        let tss = runtime + u64::from(d.runtime_tss);
        // Not initialised: no state, whatever the key.
        assert_eq!(d.thread_state(&m, &tsd, runtime, fs).unwrap(), None);
        m.write(tss, &[1, 0, 0, 0, 5, 0, 0, 0]);
        m.write(fs + 0x310 + 16 * 5 + 8, &0x77u64.to_le_bytes());
        assert_eq!(d.thread_state(&m, &tsd, runtime, fs).unwrap(), Some(0x77));
        // The same key through specific[0], which glibc points at the first block.
        m.write(fs + 0x510, &(fs + 0x310).to_le_bytes());
        let two = tsd.without_first_block();
        assert_eq!(d.thread_state(&m, &two, runtime, fs).unwrap(), Some(0x77));
        // A key of the second block: specific[1], NULL until the thread sets such a key.
        m.write(tss + 4, &40u32.to_le_bytes());
        assert_eq!(d.thread_state(&m, &tsd, runtime, fs).unwrap(), None);
        m.add(0x30_0000, vec![0; 512]);
        m.write(fs + 0x510 + 8, &0x30_0000u64.to_le_bytes());
        m.write(0x30_0000 + 16 * 8 + 8, &0x99u64.to_le_bytes());
        assert_eq!(d.thread_state(&m, &tsd, runtime, fs).unwrap(), Some(0x99));
        // A key glibc cannot have made (>= 1024) reads nothing.
        m.write(tss + 4, &1024u32.to_le_bytes());
        assert_eq!(d.thread_state(&m, &tsd, runtime, fs).unwrap(), None);
        m.write(tss + 4, &u32::MAX.to_le_bytes());
        assert_eq!(d.thread_state(&m, &tsd, runtime, fs).unwrap(), None);
    }
}
