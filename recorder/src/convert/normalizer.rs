//! Raw addresses to machine-independent frames: user addresses become module + file
//! offset, kernel addresses become symbol + offset. No raw kernel address leaves here.

// Every frame of every sample is looked up: a fast hash matters here. The keys a target
// can choose (code addresses) are bounded by the code it maps.
use rustc_hash::FxHashMap as HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use hotspot_format::{
    FormatError, FrameAddr, FrameId, ModuleId, ModuleKind, Record, SourceLoc, Symbol,
};
use hotspot_symbols::ModuleFiles;
use hotspot_unwind::Frame;

use super::frame_table::FrameTable;
use super::mapping_table::MappingTable;
use super::module_table::{ModuleInfo, ModuleTable};
use super::user_stack::{Reason, UserSample, UserStacks};
use crate::event::MappingKind;
use crate::host::{Host, KernelName};
use crate::sink::Sink;

/// A user frame that still needs a name (resolved off the sampling path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolRequest {
    pub frame: FrameId,
    pub module: ModuleId,
    /// File offset (JIT: the address).
    pub offset: u64,
}

/// The user side of a sample, as the kernel handed it over.
#[derive(Debug, Clone, Copy)]
pub enum UserPart<'a> {
    /// The kernel's frame-pointer walk (the interrupted PC first).
    FramePointers(&'a [u64]),
    /// Registers and stack bytes, unwound here with call-frame information.
    Copied(UserSample<'a>),
}

/// Path of the module whose frames are markers, not code (see `Unwinding` in SPEC.md).
pub const MARKER_MODULE: &str = "[unwind]";

/// Path of the module of user addresses in no mapping the recorder knew of.
pub const UNKNOWN_MODULE: &str = "[unknown]";

/// Lowest address of the kernel half on 64-bit machines; anything at or above it in a
/// user stack is garbage, and anything below it in a kernel stack too.
const KERNEL_START: u64 = 0xffff_8000_0000_0000;

/// Turns raw stacks into frame ids, writing modules, frames and kernel symbols. The
/// mappings the addresses are looked up in, and the host that answers what they do not
/// tell, are the caller's.
#[derive(Debug, Default)]
pub struct Normalizer {
    modules: ModuleTable,
    frames: FrameTable,
    /// Every ELF file read, once, for module identity, unwinding and symbols.
    files: ModuleFiles,
    /// Kernel address → frame, so repeated kernel addresses skip the symbol lookup.
    kernel_cache: HashMap<u64, FrameId>,
    /// Kernel address → whether it is in the sampling machinery (see [`Self::tracing_frames`]).
    tracing_cache: HashMap<u64, bool>,
    kernel_build_ids: HashMap<Option<String>, Vec<u8>>,
    pending: Vec<SymbolRequest>,
    /// The CFI unwinder, once [`Normalizer::enable_cfi`] was called.
    user_stacks: Option<UserStacks>,
    /// The marker module, and its frame for each reason seen.
    markers: Option<ModuleId>,
    marker_frames: HashMap<Reason, FrameId>,
    scratch: Vec<Frame>,
    /// Where in the last [`Normalizer::stack`]'s output the user frames in
    /// [`Sampled::eval_loop`] are (the Python merge replaces them).
    eval_positions: Vec<usize>,
}

impl Normalizer {
    /// How many leading frames of an off-CPU sample's kernel stack are the machinery that
    /// took it rather than the path the thread blocked in (the host knows which: see
    /// [`Host::in_sampler`]): a tracepoint's stack starts where the sampler runs, a tick's
    /// where it interrupted.
    pub fn tracing_frames(&mut self, kernel: &[u64], host: &mut dyn Host) -> usize {
        let cache = &mut self.tracing_cache;
        kernel
            .iter()
            .take_while(|&&addr| *cache.entry(addr).or_insert_with(|| host.in_sampler(addr)))
            .count()
    }

    /// User frames created since the last call, to be symbolised, with their modules.
    pub fn take_symbol_requests(&mut self) -> Vec<(SymbolRequest, ModuleInfo)> {
        let modules = &self.modules;
        std::mem::take(&mut self.pending)
            .into_iter()
            .filter_map(|r| modules.get(r.module).cloned().map(|m| (r, m)))
            .collect()
    }

    /// The id of a sample's stack (frames as [`Normalizer::stack`] gave them), writing it
    /// the first time.
    pub fn stack_id(
        &mut self,
        frames: &[FrameId],
        sink: &mut impl Sink,
    ) -> Result<u32, FormatError> {
        self.frames.stack(frames, sink)
    }

    /// Distinct stacks and frames so far.
    pub fn stack_count(&self) -> usize {
        self.frames.stack_count()
    }

    pub fn frame_count(&self) -> usize {
        self.frames.frame_count()
    }

    /// Unwinds user stacks with call-frame information over copied stack bytes from now
    /// on ([`UserPart::Copied`]): interns the module whose frames are the markers that end
    /// a stack stopped short, and writes it. Returns its id, for the `Unwinding` record.
    pub fn enable_cfi(
        &mut self,
        debug_dirs: Vec<PathBuf>,
        vdso_image: Option<Arc<[u8]>>,
        sink: &mut impl Sink,
    ) -> Result<ModuleId, FormatError> {
        let (id, new) = self
            .modules
            .intern(ModuleKind::Elf, MARKER_MODULE, &[], None, None);
        if new {
            self.write_module(id, sink)?;
        }
        self.markers = Some(id);
        self.user_stacks = Some(UserStacks::new(debug_dirs, vdso_image));
        Ok(id)
    }

    /// A new capture begins (the flight recorder's next segment): modules, frames and
    /// stacks get ids of their own in it, written as they are met again, and the marker
    /// module is written first (its id, for the next `Unwinding` record). What was read
    /// of files and the unwinder's tables stay. The symbol requests of the last capture
    /// must have been taken.
    pub fn next_capture(&mut self, sink: &mut impl Sink) -> Result<Option<ModuleId>, FormatError> {
        self.modules = ModuleTable::default();
        self.frames = FrameTable::default();
        self.kernel_cache.clear();
        self.marker_frames.clear();
        self.pending.clear();
        self.markers = None;
        if self.user_stacks.is_some() {
            let (id, _) = self
                .modules
                .intern(ModuleKind::Elf, MARKER_MODULE, &[], None, None);
            self.write_module(id, sink)?;
            self.markers = Some(id);
        }
        Ok(self.markers)
    }

    /// Appends the frames of one sample (kernel leaf first, then user leaf first, then a
    /// marker if the user stack stopped short) to `out`: user addresses are looked up in
    /// `maps`, and what neither they nor the tables know is asked of `host`.
    pub fn stack(
        &mut self,
        sample: Sampled<'_>,
        maps: &mut MappingTable,
        host: &mut dyn Host,
        sink: &mut impl Sink,
        out: &mut Vec<FrameId>,
    ) -> Result<(), FormatError> {
        let mut cx = Context {
            maps,
            host,
            sink,
            eval_loop: sample.eval_loop,
        };
        self.eval_positions.clear();
        for &addr in sample.kernel {
            if addr >= KERNEL_START {
                out.push(self.kernel_frame(addr, &mut cx)?);
            }
        }
        match sample.user {
            UserPart::FramePointers(chain) => {
                self.fp_frames(sample.pid, chain, sample.time_ns, &mut cx, out)
            }
            UserPart::Copied(user) => self.unwound_frames(&user, &mut cx, out),
        }
    }

    /// The user side of a CFI sample: unwound here, then named like any frame.
    fn unwound_frames<S: Sink>(
        &mut self,
        sample: &UserSample<'_>,
        cx: &mut Context<'_, S>,
        out: &mut Vec<FrameId>,
    ) -> Result<(), FormatError> {
        let Some(stacks) = self.user_stacks.as_mut() else {
            return self.fp_frames(sample.pid, sample.fp_chain, sample.time_ns, cx, out);
        };
        let (frames, reason) = stacks.unwind(cx.maps, &mut self.files, cx.host, sample);
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        scratch.extend_from_slice(frames);
        let mut result = Ok(());
        for f in &scratch {
            // Return addresses point after the call; the call instruction is the frame.
            let lookup = if f.exact {
                f.addr
            } else {
                f.addr.wrapping_sub(1)
            };
            match self.user_frame(sample.pid, lookup, sample.time_ns, cx, out.len()) {
                Ok(id) => out.push(id),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        self.scratch = scratch;
        result?;
        if let Some(reason) = reason {
            out.push(self.marker_frame(&reason, cx.sink)?);
        }
        Ok(())
    }

    /// The frame that ends a stack stopped short, named by why (one per distinct reason).
    fn marker_frame(
        &mut self,
        reason: &Reason,
        sink: &mut impl Sink,
    ) -> Result<FrameId, FormatError> {
        if let Some(&f) = self.marker_frames.get(reason) {
            return Ok(f);
        }
        let module = match self.markers {
            Some(m) => m,
            None => self.enable_cfi(Vec::new(), None, sink)?,
        };
        let code = self.marker_frames.len() as u64;
        let (frame, new) = self
            .frames
            .frame(module, FrameAddr::FileOffset(code), sink)?;
        if new {
            let function = sink.intern(&reason.text());
            sink.push(Record::Symbol(Symbol {
                frame,
                function,
                loc: SourceLoc::default(),
                inlined: Vec::new(),
            }))?;
        }
        self.marker_frames.insert(reason.clone(), frame);
        Ok(frame)
    }

    /// The kernel's frame-pointer walk: the interrupted PC, then return addresses.
    fn fp_frames<S: Sink>(
        &mut self,
        pid: u32,
        user: &[u64],
        now_ns: u64,
        cx: &mut Context<'_, S>,
        out: &mut Vec<FrameId>,
    ) -> Result<(), FormatError> {
        for (i, &addr) in user.iter().enumerate() {
            if addr == 0 || addr >= KERNEL_START {
                continue;
            }
            // Return addresses point after the call; step back into the call instruction
            // so the frame (and its line) is the call site. The leaf is the interrupted PC.
            let lookup = if i == 0 { addr } else { addr - 1 };
            let at = out.len();
            out.push(self.user_frame(pid, lookup, now_ns, cx, at)?);
        }
        Ok(())
    }

    /// Where the last stack's eval-loop frames are in its output (see [`Sampled::eval_loop`]).
    pub fn eval_positions(&self) -> &[usize] {
        &self.eval_positions
    }

    /// Interns a frame named by the recorder itself (not by the symbol worker): `key`
    /// tells the frames of `module` apart, the `Symbol` written with it names it.
    pub fn named_frame(
        &mut self,
        module: ModuleId,
        key: u64,
        function: &str,
        loc: Option<(&str, u32)>,
        sink: &mut impl Sink,
    ) -> Result<FrameId, FormatError> {
        let (frame, new) = self
            .frames
            .frame(module, FrameAddr::FileOffset(key), sink)?;
        if new {
            let function = sink.intern(function);
            let loc = match loc {
                Some((file, line)) => SourceLoc {
                    file: Some(sink.intern(file)),
                    line,
                },
                None => SourceLoc::default(),
            };
            sink.push(Record::Symbol(Symbol {
                frame,
                function,
                loc,
                inlined: Vec::new(),
            }))?;
        }
        Ok(frame)
    }

    /// Interns a module of the recorder's own (no file: `[python]`), writing it the first
    /// time; the bool says it is new.
    pub fn own_module(
        &mut self,
        path: &str,
        sink: &mut impl Sink,
    ) -> Result<(ModuleId, bool), FormatError> {
        let (id, new) = self.modules.intern(ModuleKind::Elf, path, &[], None, None);
        if new {
            self.write_module(id, sink)?;
        }
        Ok((id, new))
    }

    /// A user frame's id; at `at` in the output, noted when it is in the eval loop.
    fn user_frame<S: Sink>(
        &mut self,
        pid: u32,
        addr: u64,
        now_ns: u64,
        cx: &mut Context<'_, S>,
        at: usize,
    ) -> Result<FrameId, FormatError> {
        let id = self.user_frame_id(pid, addr, now_ns, cx)?;
        if cx.eval_loop.iter().any(|r| r.contains(&addr)) {
            self.eval_positions.push(at);
        }
        Ok(id)
    }

    fn user_frame_id<S: Sink>(
        &mut self,
        pid: u32,
        addr: u64,
        now_ns: u64,
        cx: &mut Context<'_, S>,
    ) -> Result<FrameId, FormatError> {
        let (module, offset) = match cx.maps.find(pid, addr, now_ns, cx.host) {
            Some(idx) => self.mapped(pid, idx, addr, cx)?,
            // In no mapping the events or the host told of: a corrupt frame pointer, or a
            // mapping whose event was lost. Not JIT code: nothing says it is code at all.
            None => (self.unknown_module(cx.sink)?, addr),
        };
        let (frame, new) = self
            .frames
            .frame(module, FrameAddr::FileOffset(offset), cx.sink)?;
        if new {
            self.pending.push(SymbolRequest {
                frame,
                module,
                offset,
            });
        }
        Ok(frame)
    }

    /// Module and file offset of an address inside `pid`'s mapping `idx`.
    fn mapped<S: Sink>(
        &mut self,
        pid: u32,
        idx: usize,
        addr: u64,
        cx: &mut Context<'_, S>,
    ) -> Result<(ModuleId, u64), FormatError> {
        let Some(m) = cx.maps.mapping(pid, idx) else {
            return Ok((self.unknown_module(cx.sink)?, addr));
        };
        let kind = m.kind();
        let offset = match kind {
            MappingKind::File => addr - m.start + m.offset,
            MappingKind::Vdso => addr - m.start,
            MappingKind::Anonymous => addr,
        };
        if let Some(id) = cx.maps.module(pid, idx) {
            return Ok((id, offset));
        }
        // Copied only for a mapping seen for the first time: this runs for every user
        // frame of every sample, and the known mappings are nearly all of them.
        let m = m.clone();
        let (id, new) = match kind {
            MappingKind::File => {
                let file = cx.maps.file_of(&mut self.files, pid, idx, cx.host);
                let bid = file
                    .as_ref()
                    .map(|f| f.build_id().to_vec())
                    .unwrap_or_default();
                // The path no longer holds what was mapped: say so rather than let the
                // symbols of whatever is there now be read for it.
                let gone = match &file {
                    Some(f) => !f.at_recorded_path(),
                    None => !cx.host.still_at_path(&m),
                };
                let path = if gone {
                    format!("{} (deleted)", m.path)
                } else {
                    m.path.clone()
                };
                self.modules
                    .intern(ModuleKind::Elf, &path, &bid, file, None)
            }
            MappingKind::Vdso => {
                self.modules
                    .intern(ModuleKind::Vdso, "[vdso]", &[], None, Some(pid))
            }
            MappingKind::Anonymous => return Ok((self.jit_module(pid, cx.sink)?, addr)),
        };
        if new {
            self.write_module(id, cx.sink)?;
        }
        cx.maps.set_module(pid, idx, id);
        Ok((id, offset))
    }

    /// Addresses in no known mapping: one module for all, offsets are the addresses.
    fn unknown_module(&mut self, sink: &mut impl Sink) -> Result<ModuleId, FormatError> {
        let (id, new) = self
            .modules
            .intern(ModuleKind::Elf, UNKNOWN_MODULE, &[], None, None);
        if new {
            self.write_module(id, sink)?;
        }
        Ok(id)
    }

    /// Anonymous executable memory of `pid`: one module per process, offsets are addresses.
    /// Process `pid` is gone: its own module (JIT code, `[jit:PID]`) goes, with its
    /// frames; a process later under the same pid has a module of its own (its code is
    /// not the old one's).
    pub fn forget_process(&mut self, pid: u32) {
        if let Some(id) = self
            .modules
            .retire(ModuleKind::Jit, &format!("[jit:{pid}]"))
        {
            self.frames.forget_module(id);
        }
    }

    /// Lets go of the ELF files that no process the recorder still knows maps (a file is
    /// held by its cache entry, its module and each mapping of it): on a box that builds
    /// and runs new programs all day, each one's file would stay otherwise.
    pub fn release_unmapped_files(&mut self) {
        // The cache and the module: nothing else holds it.
        self.files.release_unheld(1);
        self.modules.release_unheld_files();
    }

    /// Modules held (a process's own ones only while it lives).
    pub fn module_count(&self) -> usize {
        self.modules.len()
    }

    fn jit_module(&mut self, pid: u32, sink: &mut impl Sink) -> Result<ModuleId, FormatError> {
        let (id, new) = self.modules.intern(
            ModuleKind::Jit,
            &format!("[jit:{pid}]"),
            &[],
            None,
            Some(pid),
        );
        if new {
            self.write_module(id, sink)?;
        }
        Ok(id)
    }

    fn write_module(&mut self, id: ModuleId, sink: &mut impl Sink) -> Result<(), FormatError> {
        match self.modules.get(id) {
            Some(info) => sink.push(Record::Module(info.record())),
            None => Ok(()),
        }
    }

    fn kernel_frame<S: Sink>(
        &mut self,
        addr: u64,
        cx: &mut Context<'_, S>,
    ) -> Result<FrameId, FormatError> {
        if let Some(&f) = self.kernel_cache.get(&addr) {
            return Ok(f);
        }
        let KernelName {
            name,
            offset,
            module,
        } = cx.host.kernel_name(addr).unwrap_or_else(|| KernelName {
            name: "[unknown kernel]".to_string(),
            offset: 0,
            module: None,
        });
        let build_id = self.kernel_build_id(&module, cx.host);
        let (kind, path) = match &module {
            None => (ModuleKind::Kernel, "[kernel.kallsyms]".to_string()),
            Some(m) => (ModuleKind::KernelModule, m.clone()),
        };
        let (mid, new) = self.modules.intern(kind, &path, &build_id, None, None);
        if new {
            self.write_module(mid, cx.sink)?;
        }
        let symbol = cx.sink.intern(&name);
        let (frame, new) =
            self.frames
                .frame(mid, FrameAddr::KernelSymbol { symbol, offset }, cx.sink)?;
        if new {
            cx.sink.push(Record::Symbol(Symbol {
                frame,
                function: symbol,
                loc: SourceLoc::default(),
                inlined: Vec::new(),
            }))?;
        }
        self.kernel_cache.insert(addr, frame);
        Ok(frame)
    }

    fn kernel_build_id(&mut self, module: &Option<String>, host: &mut dyn Host) -> Vec<u8> {
        if let Some(id) = self.kernel_build_ids.get(module) {
            return id.clone();
        }
        let id = host.kernel_build_id(module.as_deref());
        self.kernel_build_ids.insert(module.clone(), id.clone());
        id
    }
}

/// One sample's stacks as the normaliser takes them.
#[derive(Debug, Clone, Copy)]
pub struct Sampled<'a> {
    pub pid: u32,
    pub time_ns: u64,
    /// Kernel frames, leaf first.
    pub kernel: &'a [u64],
    pub user: UserPart<'a>,
    /// The process's eval-loop code (a Python interpreter's, hot and cold parts, as
    /// process addresses): which user frames [`Normalizer::eval_positions`] reports.
    pub eval_loop: &'a [std::ops::Range<u64>],
}

/// What one call of [`Normalizer::stack`] works with besides its own tables.
struct Context<'a, S> {
    maps: &'a mut MappingTable,
    host: &'a mut dyn Host,
    sink: &'a mut S,
    eval_loop: &'a [std::ops::Range<u64>],
}
