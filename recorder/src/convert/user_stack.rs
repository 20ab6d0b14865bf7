//! User stacks unwound in the recorder: the CFI unwinder run over the registers and stack
//! bytes the kernel copied, through a process's mappings; the kernel's frame-pointer chain
//! spliced on past the copy; and the reason a stack stopped short, for its marker frame.
//! The stack bytes are the target's data: they are read here and never written anywhere.

// Every frame of every sample is looked up: a fast hash matters here. The keys a target
// can choose (code addresses) are bounded by the code it maps.
use rustc_hash::FxHashMap as HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use hotspot_symbols::{ModuleFile, ModuleFiles};
use hotspot_unwind::{
    AddressSpace, CodeAt, End, Frame, Regs, StackCopy, Unwinder, splice_frame_pointers,
};

use super::mapping_table::MappingTable;
use crate::event::{MappingKind, UserRegs};
use crate::host::Host;

/// Why a stack stopped short of its root; named by the marker frame that ends it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Reason {
    /// The copy ended at `--stack-cap` and the rest had no frame pointers to follow.
    StackCap,
    /// The copy ended at a page the kernel could not read (not resident).
    UnreadablePage,
    /// The caller's frame is not on the copied stack (a stack switch: coroutines,
    /// `sigaltstack`), or the stack pointer is corrupt.
    OutsideStack,
    /// Code in this module has no call-frame information for the address.
    NoUnwindInfo(String),
    /// The module's call-frame information is malformed or uses what we cannot follow.
    BadUnwindInfo(String),
    /// A return address points at no code.
    Unmapped,
    /// The unwound frame did not move up the stack.
    NoProgress,
    /// More frames than [`hotspot_unwind::MAX_FRAMES`].
    DepthLimit,
}

impl Reason {
    /// The marker frame's name.
    pub fn text(&self) -> String {
        match self {
            Reason::StackCap => "[truncated: stack larger than --stack-cap]".into(),
            Reason::UnreadablePage => "[unreadable stack page]".into(),
            Reason::OutsideStack => "[stack switch: caller not on the copied stack]".into(),
            Reason::NoUnwindInfo(m) => format!("[no unwind info: {m}]"),
            Reason::BadUnwindInfo(m) => format!("[bad unwind info: {m}]"),
            Reason::Unmapped => "[return address outside any code]".into(),
            Reason::NoProgress => "[corrupt stack: a frame did not move up]".into(),
            Reason::DepthLimit => {
                format!(
                    "[truncated: deeper than {} frames]",
                    hotspot_unwind::MAX_FRAMES
                )
            }
        }
    }
}

/// One sample's user side, as the kernel copied it.
#[derive(Debug, Clone, Copy)]
pub struct UserSample<'a> {
    pub pid: u32,
    pub time_ns: u64,
    pub regs: Regs,
    pub stack: StackCopy<'a>,
    /// The kernel's frame-pointer walk of the same sample (the PC first), for the splice.
    pub fp_chain: &'a [u64],
}

impl From<UserRegs> for Regs {
    fn from(r: UserRegs) -> Regs {
        Regs {
            ip: r.ip,
            sp: r.sp,
            bp: r.bp,
            rbx: r.rbx,
            r11: r.r11,
        }
    }
}

/// The frame-pointer chain the kernel hands over holds at most this many frames
/// (`kernel.perf_event_max_stack`): a chain this long was cut, not ended.
const FP_CHAIN_MAX: usize = 127;

/// The unwinder and what it keeps between samples.
#[derive(Debug)]
pub struct UserStacks {
    unwinder: Unwinder,
    frames: Vec<Frame>,
    debug_dirs: Vec<PathBuf>,
    /// The vDSO image (the same in every process of this kernel), as the host gave it,
    /// and read as ELF at the first frame in it.
    vdso_image: Option<Arc<[u8]>>,
    vdso: Option<Option<Arc<ModuleFile>>>,
    /// Code bytes read from targets' anonymous executable memory (see
    /// [`AddressSpace::read_code`]), by (pid, address).
    code: HashMap<(u32, u64), CodeBytes>,
}

/// Bytes of a target's code, as the host read them, and how many it could.
type CodeBytes = ([u8; CODE_BYTES], usize);

/// Bytes of code read at a return address in code without CFI.
const CODE_BYTES: usize = 16;

/// Code snippets kept: trampolines and JIT code are a few thousand addresses at most;
/// past this the cache starts over rather than grow.
const MAX_CODE_SNIPPETS: usize = 4096;

impl UserStacks {
    pub fn new(debug_dirs: Vec<PathBuf>, vdso_image: Option<Arc<[u8]>>) -> Self {
        UserStacks {
            unwinder: Unwinder::new(),
            frames: Vec::new(),
            debug_dirs,
            vdso_image,
            vdso: None,
            code: HashMap::default(),
        }
    }

    /// Unwinds one sample: its frames (leaf first; `exact` frames are looked up as is,
    /// the others at `addr - 1`) and, when it stopped short, why.
    pub fn unwind(
        &mut self,
        maps: &mut MappingTable,
        files: &mut ModuleFiles,
        host: &mut dyn Host,
        sample: &UserSample,
    ) -> (&[Frame], Option<Reason>) {
        let vdso = self.vdso_file();
        let mut space = Space {
            maps,
            files,
            host,
            pid: sample.pid,
            time_ns: sample.time_ns,
            vdso: vdso.as_deref(),
            debug_dirs: &self.debug_dirs,
            last: None,
            code: &mut self.code,
        };
        let mut end =
            self.unwinder
                .unwind(sample.regs, &sample.stack, &mut space, &mut self.frames);
        if end == End::StackCap
            && splice_frame_pointers(
                &mut self.frames,
                sample.fp_chain,
                &sample.stack,
                sample.regs.bp,
                &mut space,
            )
        {
            // The chain went on where the copy stopped. A chain cut at the kernel's
            // depth limit is still short; one that ended on its own reached its root
            // (or a frame without a frame pointer, which no walk can tell apart).
            if sample.fp_chain.len() < FP_CHAIN_MAX {
                end = End::Complete;
            }
        }
        let mut module = || {
            let last = self.frames.last().map_or(sample.regs.ip, |f| f.addr);
            space_module_name(space.maps, space.host, sample.pid, last, sample.time_ns)
        };
        let reason = match end {
            End::Complete => None,
            End::StackCap => Some(Reason::StackCap),
            End::UnreadablePage => Some(Reason::UnreadablePage),
            End::OutsideStack => Some(Reason::OutsideStack),
            End::NoUnwindInfo => Some(Reason::NoUnwindInfo(module())),
            End::BadUnwindInfo => Some(Reason::BadUnwindInfo(module())),
            End::Unmapped => Some(Reason::Unmapped),
            End::NoProgress => Some(Reason::NoProgress),
            End::DepthLimit => Some(Reason::DepthLimit),
        };
        (&self.frames, reason)
    }

    fn vdso_file(&mut self) -> Option<Arc<ModuleFile>> {
        let image = &self.vdso_image;
        self.vdso
            .get_or_insert_with(|| {
                ModuleFile::from_image(Path::new("[vdso]"), image.as_deref()?).map(Arc::new)
            })
            .clone()
    }
}

/// The file name of the mapping holding `addr` in `pid` (for a reason's text).
fn space_module_name(
    maps: &mut MappingTable,
    host: &mut dyn Host,
    pid: u32,
    addr: u64,
    time_ns: u64,
) -> String {
    let m = maps
        .find(pid, addr, time_ns, host)
        .and_then(|i| maps.mapping(pid, i).cloned());
    match m {
        Some(m) if m.kind() == MappingKind::File => Path::new(&m.path)
            .file_name()
            .map_or(m.path.clone(), |n| n.to_string_lossy().into_owned()),
        Some(m) if m.kind() == MappingKind::Vdso => "[vdso]".into(),
        _ => "[anonymous]".into(),
    }
}

/// A range of a process's addresses inside one segment of one mapped file, where
/// `svma = avma + delta` (wrapping).
struct Hit {
    lo: u64,
    hi: u64,
    delta: u64,
    file: Arc<ModuleFile>,
}

/// One process's mappings as the unwinder sees them.
struct Space<'a> {
    maps: &'a mut MappingTable,
    files: &'a mut ModuleFiles,
    host: &'a mut dyn Host,
    pid: u32,
    time_ns: u64,
    vdso: Option<&'a ModuleFile>,
    debug_dirs: &'a [PathBuf],
    /// The address range of the last file lookup and how it translates.
    last: Option<Hit>,
    code: &'a mut HashMap<(u32, u64), CodeBytes>,
}

impl AddressSpace for Space<'_> {
    fn read_code(&mut self, avma: u64, buf: &mut [u8]) -> usize {
        let (bytes, n) = self.cached_code(avma);
        let n = n.min(buf.len());
        buf[..n].copy_from_slice(&bytes[..n]);
        n
    }

    fn code_at(&mut self, avma: u64) -> CodeAt<'_> {
        // A stack's frames cluster in a few modules: the last range found answers most.
        if self
            .last
            .as_ref()
            .is_some_and(|h| avma >= h.lo && avma < h.hi)
        {
            // Checked first so that this branch, which returns a borrow, always returns.
            return match &self.last {
                Some(hit) => match hit.file.unwind_if_read() {
                    Some(module) => CodeAt::Module {
                        module,
                        svma: avma.wrapping_add(hit.delta),
                    },
                    None => CodeAt::Anonymous,
                },
                None => CodeAt::Unmapped,
            };
        }
        let Some((idx, kind, start, end, offset)) = self.mapping(avma) else {
            return CodeAt::Unmapped;
        };
        match kind {
            MappingKind::Anonymous => CodeAt::Anonymous,
            MappingKind::Vdso => {
                let Some(vdso) = self.vdso else {
                    return CodeAt::Anonymous;
                };
                match (vdso.vaddr_of(avma - start), vdso.unwind_if_read()) {
                    (Some(svma), Some(module)) => CodeAt::Module { module, svma },
                    _ => CodeAt::Anonymous,
                }
            }
            MappingKind::File => {
                let Some(file) = self.maps.file_of(self.files, self.pid, idx, self.host) else {
                    // Not readable as ELF: all that is left is the frame-pointer rule.
                    return CodeAt::Anonymous;
                };
                let off = avma - start + offset;
                let (Some((seg_off, seg_size, seg_vaddr)), Some(_)) =
                    (file.code_segment(off), file.unwind(self.debug_dirs))
                else {
                    return CodeAt::Anonymous;
                };
                // The part of the mapping that is this segment translates by one delta.
                let lo = start.max((start + seg_off).saturating_sub(offset));
                let hi = end.min((start + seg_off + seg_size).saturating_sub(offset));
                let delta = seg_vaddr
                    .wrapping_sub(seg_off)
                    .wrapping_add(offset)
                    .wrapping_sub(start);
                let hit = self.last.insert(Hit {
                    lo,
                    hi,
                    delta,
                    file,
                });
                match hit.file.unwind_if_read() {
                    Some(module) => CodeAt::Module {
                        module,
                        svma: avma.wrapping_add(hit.delta),
                    },
                    None => CodeAt::Anonymous,
                }
            }
        }
    }
}

impl Space<'_> {
    fn cached_code(&mut self, avma: u64) -> CodeBytes {
        if let Some(c) = self.code.get(&(self.pid, avma)) {
            return *c;
        }
        if self.code.len() >= MAX_CODE_SNIPPETS {
            self.code.clear();
        }
        let mut bytes = [0u8; CODE_BYTES];
        let n = self.host.read_memory(self.pid, avma, &mut bytes);
        let c = (bytes, n.min(CODE_BYTES));
        self.code.insert((self.pid, avma), c);
        c
    }

    /// Index, kind, start, end and file offset of the executable mapping holding `avma`.
    fn mapping(&mut self, avma: u64) -> Option<(usize, MappingKind, u64, u64, u64)> {
        let idx = self.maps.find(self.pid, avma, self.time_ns, self.host)?;
        let m = self.maps.mapping(self.pid, idx)?;
        Some((idx, m.kind(), m.start, m.end, m.offset))
    }
}
