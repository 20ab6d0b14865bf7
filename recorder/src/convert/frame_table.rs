//! Deduplication of frames and stacks: each distinct location and call stack gets one id
//! and is written once.

// Every frame of every sample is looked up: a fast hash matters here. The keys a target
// can choose (code addresses) are bounded by the code it maps.
use rustc_hash::FxHashMap as HashMap;

use hotspot_format::{FormatError, Frame, FrameAddr, FrameId, ModuleId, Record, Stack, StackId};

use crate::sink::Sink;

/// Frames and stacks written so far.
#[derive(Debug, Default)]
pub struct FrameTable {
    frames: HashMap<(ModuleId, FrameAddr), FrameId>,
    stacks: HashMap<Vec<FrameId>, StackId>,
    /// Frames given an id so far (forgotten ones too: ids are never given twice).
    next_frame: FrameId,
}

impl FrameTable {
    /// The id of a frame; the bool says it is new (written now, and to be symbolised).
    pub fn frame(
        &mut self,
        module: ModuleId,
        addr: FrameAddr,
        sink: &mut impl Sink,
    ) -> Result<(FrameId, bool), FormatError> {
        let next = self.next_frame;
        match self.frames.entry((module, addr)) {
            std::collections::hash_map::Entry::Occupied(e) => Ok((*e.get(), false)),
            std::collections::hash_map::Entry::Vacant(e) => {
                let addr = e.key().1.clone();
                e.insert(next);
                self.next_frame += 1;
                sink.push(Record::Frame(Frame {
                    id: next,
                    module,
                    addr,
                }))?;
                Ok((next, true))
            }
        }
    }

    /// The id of a stack (frames leaf first), writing it the first time.
    pub fn stack(
        &mut self,
        frames: &[FrameId],
        sink: &mut impl Sink,
    ) -> Result<StackId, FormatError> {
        if let Some(&id) = self.stacks.get(frames) {
            return Ok(id);
        }
        let id = self.stacks.len() as StackId;
        self.stacks.insert(frames.to_vec(), id);
        sink.push(Record::Stack(Stack {
            id,
            frames: frames.to_vec(),
        }))?;
        Ok(id)
    }

    /// Forgets the frames of `module` (retired: no address will be looked up in it
    /// again); their ids stay valid in the capture.
    pub fn forget_module(&mut self, module: ModuleId) {
        self.frames.retain(|(m, _), _| *m != module);
    }

    /// Frames written over the recording.
    pub fn frame_count(&self) -> usize {
        self.next_frame as usize
    }

    pub fn stack_count(&self) -> usize {
        self.stacks.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::VecSink;

    #[test]
    fn frames_and_stacks_are_written_once() {
        let mut t = FrameTable::default();
        let mut sink = VecSink::default();
        let (a, new_a) = t
            .frame(0, FrameAddr::FileOffset(0x10), &mut sink)
            .expect("ok");
        let (a2, new_a2) = t
            .frame(0, FrameAddr::FileOffset(0x10), &mut sink)
            .expect("ok");
        let (b, _) = t
            .frame(1, FrameAddr::FileOffset(0x10), &mut sink)
            .expect("ok");
        assert!(new_a && !new_a2);
        assert_eq!(a, a2);
        assert_ne!(a, b);
        let s1 = t.stack(&[a, b], &mut sink).expect("ok");
        let s2 = t.stack(&[a, b], &mut sink).expect("ok");
        let s3 = t.stack(&[b, a], &mut sink).expect("ok");
        assert_eq!(s1, s2);
        assert_ne!(s1, s3);
        let written = sink.records.len();
        assert_eq!(written, 2 + 2, "two frames and two stacks");
    }

    #[test]
    fn frames_of_a_forgotten_module_are_new_again_under_new_ids() {
        let mut t = FrameTable::default();
        let mut sink = VecSink::default();
        let addr = FrameAddr::FileOffset(0x10);
        let (a, _) = t.frame(3, addr.clone(), &mut sink).expect("ok");
        let (b, _) = t.frame(4, addr.clone(), &mut sink).expect("ok");
        t.forget_module(3);
        let (c, new) = t.frame(5, addr.clone(), &mut sink).expect("ok");
        assert!(new && c != a && c != b, "an id is never given twice");
        assert_eq!(t.frame(4, addr, &mut sink).expect("ok"), (b, false));
        assert_eq!(t.frame_count(), 3);
    }
}
