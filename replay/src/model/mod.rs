//! The interned profile model: strings, functions, frames and stacks as tables, in the
//! manner of samply's `fxprof-processed-profile`, built once per capture stack; and the
//! aggregations that views and reports read from it ([`aggregate`]): flat profile, call
//! tree, callers/callees, over samples that each carry a weight.
//!
//! - a *function* is (name, module, kind): what flat rows and tree nodes merge by;
//! - a *frame* is (function, source line): one logical frame after inline expansion by
//!   [`crate::names::expand`];
//! - a *stack* is (prefix, frame): a path from the root, so stacks that share callers
//!   share rows, and a row's prefix always comes before it in the table.
//!
//! Each capture stack interns once per [`Hide`]: with every frame, without its kernel
//! frames (`--no-kernel`, the views' `K`), without its interpreter's own frames
//! (`--no-interpreter`, the views' `P`), without both; into the same tables, a variant that
//! drops nothing sharing the whole stack's rows.

pub mod aggregate;

use std::sync::Arc;

use hotspot_format::StackId;
use rustc_hash::FxHashMap;

use crate::capture::Capture;
use crate::kind::FrameKind;
use crate::metric::Class;
use crate::names::{self, FrameName, FunctionKey};
use hotspot_format::ThreadState;

/// Index into [`Profile::stacks`].
pub type StackIdx = u32;
/// Index into [`Profile::frames`].
pub type FrameIdx = u32;
/// Index into the function table.
pub type FuncId = u32;
/// Index into the string table.
pub type StrId = u32;

/// No source line (an index into the line table otherwise).
pub const NO_LINE: u32 = u32::MAX;

/// A function: what frames merge under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Function {
    pub name: StrId,
    pub module: StrId,
    pub kind: FrameKind,
}

/// A logical frame: a function at a source line. Two frames are one exactly when their
/// [`FrameName`]s are equal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameRow {
    pub function: FuncId,
    /// Index into the line table (file and line), or [`NO_LINE`] without a file.
    pub line: u32,
    /// The line number as recorded (also without a file).
    pub line_no: u32,
}

/// A stack: its caller's stack and its own (leaf) frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackRow {
    pub prefix: Option<StackIdx>,
    pub frame: FrameIdx,
    /// The frame's function does not occur in the prefix: this row is the outermost
    /// occurrence on its path, where recursion is counted once.
    pub outermost: bool,
}

/// Which frames a stack is shown without. The one rule of what each leaves out is
/// [`Hide::keeps`]; a hidden frame's samples count for the nearest caller kept, so no time
/// is lost, only who it is charged to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Hide {
    /// The kernel's frames (`--no-kernel`).
    pub kernel: bool,
    /// The interpreter's own native frames, in stacks that hold Python frames
    /// (`--no-interpreter`: what `py-spy --native` shows, Python frames with the native
    /// frames of C extensions, libraries and the kernel).
    pub interpreter: bool,
}

impl Hide {
    /// Every frame shown.
    pub const NOTHING: Hide = Hide {
        kernel: false,
        interpreter: false,
    };

    /// Every combination, in [`Hide::index`] order.
    pub const ALL: [Hide; 4] = [
        Hide::NOTHING,
        Hide {
            kernel: true,
            interpreter: false,
        },
        Hide {
            kernel: false,
            interpreter: true,
        },
        Hide {
            kernel: true,
            interpreter: true,
        },
    ];

    /// Only the kernel's frames hidden, or none.
    pub fn kernel(kernel: bool) -> Hide {
        Hide {
            kernel,
            ..Hide::NOTHING
        }
    }

    /// Where this variant sits in a stack's [`Variants`].
    pub fn index(self) -> usize {
        usize::from(self.kernel) | usize::from(self.interpreter) << 1
    }

    /// Whether a frame of `kind` stays in a stack that holds a Python frame (`python`)
    /// or not. The interpreter's frames go only where Python frames stand for what they
    /// ran: a stack without them (the interpreter starting, one whose Python frames did
    /// not match and was kept native) keeps its every frame.
    pub fn keeps(self, kind: FrameKind, python: bool) -> bool {
        !(self.kernel && kind.is_kernel()
            || self.interpreter && python && kind == FrameKind::Interpreter)
    }
}

/// A capture stack interned under each [`Hide`], by [`Hide::index`].
pub type Variants = [Interned; 4];

/// What a capture stack interns to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interned {
    /// No frame left (none recorded, or only kernel frames without them).
    Empty,
    Stack(StackIdx),
}

/// The tables. (Clone only so a slice can borrow a source's or own its own; no export
/// clones one.)
#[derive(Debug, Default, Clone)]
pub struct Profile {
    strings: Vec<Arc<str>>,
    string_ids: FxHashMap<Arc<str>, StrId>,
    functions: Vec<Function>,
    function_ids: FxHashMap<Function, FuncId>,
    /// Per function its key (the texts shared with the capture's strings).
    keys: Vec<FunctionKey>,
    /// (file, line) of each source line.
    lines: Vec<(Arc<str>, u32)>,
    line_ids: FxHashMap<(StrId, u32), u32>,
    pub frames: Vec<FrameRow>,
    frame_ids: FxHashMap<(FuncId, u32, u32), FrameIdx>,
    pub stacks: Vec<StackRow>,
    stack_ids: FxHashMap<(StackIdx, FrameIdx), StackIdx>,
    /// Capture stack → its variants.
    by_capture: FxHashMap<StackId, Variants>,
    /// (capture stack, state) → the same, ending in the state's frame (off-CPU samples).
    by_state: FxHashMap<(StackId, ThreadState), Variants>,
    /// Per function the last path that saw it: finds the outermost occurrences.
    seen: Vec<u32>,
    path: u32,
}

impl Profile {
    /// Interns capture stack `id` (under each [`Hide`]); `None` when the capture does
    /// not define it (yet: a live capture may define it later, so the absence is not
    /// remembered).
    pub fn intern(&mut self, capture: &Capture, id: StackId) -> Option<Variants> {
        if let Some(&v) = self.by_capture.get(&id) {
            return Some(v);
        }
        let out = logical_frames(capture, id)?;
        let v = self.variants(&out);
        self.by_capture.insert(id, v);
        Some(v)
    }

    /// Interns `frames` (root first) under each [`Hide`]; a variant that drops no frame
    /// is the whole stack's row, not a second walk of it.
    fn variants(&mut self, frames: &[FrameName]) -> Variants {
        let python = frames.iter().any(|f| f.kind == FrameKind::Python);
        let mut v = [Interned::Empty; 4];
        v[0] = self.push_path(frames.iter());
        for hide in &Hide::ALL[1..] {
            let keeps = |f: &&FrameName| hide.keeps(f.kind, python);
            v[hide.index()] = if frames.iter().all(|f| keeps(&f)) {
                v[0]
            } else {
                self.push_path(frames.iter().filter(keeps))
            };
        }
        v
    }

    /// Interns capture stack `id` as a sample of `class` stands on it: a CPU sample on
    /// the stack itself, an off-CPU sample on the stack with its state's frame
    /// ([`FrameName::off_cpu`]) as the leaf, kept with `--no-kernel` too.
    pub fn intern_class(
        &mut self,
        capture: &Capture,
        id: StackId,
        class: Class,
    ) -> Option<Variants> {
        let Class::OffCpu(state) = class else {
            return self.intern(capture, id);
        };
        if let Some(&v) = self.by_state.get(&(id, state)) {
            return Some(v);
        }
        let mut out = logical_frames(capture, id)?;
        out.push(FrameName::off_cpu(state));
        let v = self.variants(&out);
        self.by_state.insert((id, state), v);
        Some(v)
    }

    /// [`Profile::intern_class`], as already interned.
    pub fn interned_class(&self, id: StackId, class: Class) -> Option<Variants> {
        match class {
            Class::OnCpu => self.interned(id),
            Class::OffCpu(state) => self.by_state.get(&(id, state)).copied(),
        }
    }

    /// Capture stack `id` as already interned, without interning it.
    pub fn interned(&self, id: StackId) -> Option<Variants> {
        self.by_capture.get(&id).copied()
    }

    /// Capture stack `id` as interned without the frames `hide` leaves out.
    pub fn stack_of(&mut self, capture: &Capture, id: StackId, hide: Hide) -> Option<Interned> {
        self.intern(capture, id).map(|v| v[hide.index()])
    }

    /// [`Profile::stack_of`] for a sample of `class` ([`Profile::intern_class`]).
    pub fn stack_of_class(
        &mut self,
        capture: &Capture,
        id: StackId,
        class: Class,
        hide: Hide,
    ) -> Option<Interned> {
        self.intern_class(capture, id, class)
            .map(|v| v[hide.index()])
    }

    /// Adds the path of `frames` (root first); returns its leaf row.
    fn push_path<'a>(&mut self, frames: impl Iterator<Item = &'a FrameName>) -> Interned {
        self.path = self.path.wrapping_add(1);
        if self.path == 0 {
            self.seen.iter_mut().for_each(|s| *s = 0);
            self.path = 1;
        }
        let mut prefix: Option<StackIdx> = None;
        for f in frames {
            let function = self.function(f);
            let line = self.line(f);
            let line_no = f.line;
            let frame = *self
                .frame_ids
                .entry((function, line, line_no))
                .or_insert_with(|| {
                    self.frames.push(FrameRow {
                        function,
                        line,
                        line_no,
                    });
                    (self.frames.len() - 1) as FrameIdx
                });
            let seen = &mut self.seen[function as usize];
            let outermost = *seen != self.path;
            *seen = self.path;
            let key = (prefix.unwrap_or(StackIdx::MAX), frame);
            let stacks = &mut self.stacks;
            let row = *self.stack_ids.entry(key).or_insert_with(|| {
                stacks.push(StackRow {
                    prefix,
                    frame,
                    outermost,
                });
                (stacks.len() - 1) as StackIdx
            });
            prefix = Some(row);
        }
        prefix.map_or(Interned::Empty, Interned::Stack)
    }

    fn string(&mut self, text: &Arc<str>) -> StrId {
        if let Some(&id) = self.string_ids.get(text) {
            return id;
        }
        let id = self.strings.len() as StrId;
        self.strings.push(text.clone());
        self.string_ids.insert(text.clone(), id);
        id
    }

    fn function(&mut self, f: &FrameName) -> FuncId {
        let k = Function {
            name: self.string(&f.function),
            module: self.string(&f.module),
            kind: f.kind,
        };
        if let Some(&id) = self.function_ids.get(&k) {
            return id;
        }
        let id = self.functions.len() as FuncId;
        self.functions.push(k);
        self.function_ids.insert(k, id);
        self.keys.push(f.key());
        self.seen.push(0);
        id
    }

    fn line(&mut self, f: &FrameName) -> u32 {
        let Some(file) = &f.file else {
            return NO_LINE;
        };
        let k = (self.string(file), f.line);
        if let Some(&id) = self.line_ids.get(&k) {
            return id;
        }
        let id = self.lines.len() as u32;
        self.lines.push((file.clone(), f.line));
        self.line_ids.insert(k, id);
        id
    }

    /// Every function's key, by [`FuncId`].
    pub fn keys(&self) -> &[FunctionKey] {
        &self.keys
    }

    /// Every source line as (file, line), by line index.
    pub fn lines(&self) -> &[(Arc<str>, u32)] {
        &self.lines
    }

    /// The id of a function, if any stack holds it.
    pub fn function_id(&self, key: &FunctionKey) -> Option<FuncId> {
        let name = *self.string_ids.get(&key.function)?;
        let module = *self.string_ids.get(&key.module)?;
        self.function_ids
            .get(&Function {
                name,
                module,
                kind: key.kind,
            })
            .copied()
    }

    /// The function of a stack's leaf frame.
    pub fn leaf_function(&self, stack: StackIdx) -> FuncId {
        self.frames[self.stacks[stack as usize].frame as usize].function
    }

    /// The frames of a stack, root first, into `out` (cleared first).
    pub fn path(&self, stack: Interned, out: &mut Vec<FrameIdx>) {
        out.clear();
        let mut at = match stack {
            Interned::Stack(s) => Some(s),
            Interned::Empty => None,
        };
        while let Some(s) = at {
            let row = self.stacks[s as usize];
            out.push(row.frame);
            at = row.prefix;
        }
        out.reverse();
    }

    /// A frame with its names.
    pub fn frame_name(&self, frame: FrameIdx) -> FrameName {
        let fr = self.frames[frame as usize];
        let key = &self.keys[fr.function as usize];
        let file = self.lines.get(fr.line as usize).map(|(f, _)| f.clone());
        let line = fr.line_no;
        FrameName {
            function: key.function.clone(),
            module: key.module.clone(),
            file,
            line,
            kind: key.kind,
        }
    }
}

/// The logical frames of capture stack `id`, root first, after inline expansion and the
/// depth cap; `None` when the capture does not define it.
fn logical_frames(capture: &Capture, id: StackId) -> Option<Vec<FrameName>> {
    let frames = capture.stacks.get(&id)?;
    let mut out: Vec<FrameName> = Vec::with_capacity(frames.len());
    for &f in frames {
        if out.len() >= names::MAX_LOGICAL_FRAMES {
            break;
        }
        names::expand(capture, f, &mut out);
    }
    // Leaf first so far: what is cut is nearest the root.
    out.truncate(names::MAX_LOGICAL_FRAMES);
    out.reverse();
    Some(out)
}
