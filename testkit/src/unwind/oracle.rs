//! framehop 0.16 over the same dumps: the differential oracle and the benchmark's peer.

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, FrameAddress, Module, Unwinder};
use object::{Object, ObjectSection};

use super::dumps::{Dump, Process};

/// A framehop unwinder with every module of a dump's process added.
pub struct Oracle {
    pub unwinder: UnwinderX86_64<Vec<u8>>,
    pub cache: CacheX86_64,
}

fn section(file: &object::File, name: &str) -> (Option<std::ops::Range<u64>>, Option<Vec<u8>>) {
    match file.section_by_name(name) {
        Some(s) => {
            let data = s
                .uncompressed_data()
                .ok()
                .map(|d| d.to_vec())
                .filter(|d| !d.is_empty());
            (Some(s.address()..s.address() + s.size()), data)
        }
        None => (None, None),
    }
}

impl Oracle {
    pub fn new(dump: &Dump) -> Oracle {
        let process = Process::new(dump);
        let mut unwinder = UnwinderX86_64::new();
        for (m, module) in &process.maps {
            let Some(module) = module else { continue };
            let file = object::File::parse(&*module.data).unwrap();
            let base_avma = m.start - module.svma_of_offset(m.offset).unwrap();
            let (text_svma, text) = section(&file, ".text");
            let (eh_frame_svma, eh_frame) = section(&file, ".eh_frame");
            let (eh_frame_hdr_svma, eh_frame_hdr) = section(&file, ".eh_frame_hdr");
            let (got_svma, _) = section(&file, ".got");
            let (_, debug_frame) = section(&file, ".debug_frame");
            let info = ExplicitModuleSectionInfo {
                base_svma: 0,
                text_svma,
                text,
                got_svma,
                eh_frame_svma,
                eh_frame,
                eh_frame_hdr_svma,
                eh_frame_hdr,
                debug_frame,
                ..Default::default()
            };
            unwinder.add_module(Module::new(
                module.path.clone(),
                m.start..m.end,
                base_avma,
                info,
            ));
        }
        Oracle {
            unwinder,
            cache: CacheX86_64::new(),
        }
    }

    /// framehop's frames for the dump, and whether it completed (`Ok(None)` at the end).
    pub fn unwind(&mut self, dump: &Dump, out: &mut Vec<u64>) -> bool {
        let base = dump.regs.sp;
        let stack = &dump.stack;
        let mut read = |addr: u64| -> Result<u64, ()> {
            let at = usize::try_from(addr.checked_sub(base).ok_or(())?).map_err(drop)?;
            let word = stack.get(at..at + 8).ok_or(())?;
            Ok(u64::from_le_bytes(word.try_into().map_err(drop)?))
        };
        let regs = UnwindRegsX86_64::new(dump.regs.ip, dump.regs.sp, dump.regs.bp);
        let mut iter = self
            .unwinder
            .iter_frames(dump.regs.ip, regs, &mut self.cache, &mut read);
        out.clear();
        loop {
            match iter.next() {
                Ok(Some(FrameAddress::InstructionPointer(a))) => out.push(a),
                Ok(Some(FrameAddress::ReturnAddress(a))) => out.push(a.get()),
                Ok(None) => return true,
                Err(_) => return false,
            }
        }
    }
}
