//! Names for frames from the capture's own symbols: what the views and reports print.

use hotspot_format::{FrameAddr, FrameId, ModuleKind, SourceLoc, ThreadState};

use std::sync::Arc;

use crate::capture::Capture;
use crate::kind::FrameKind;
use crate::metric;

/// One logical frame: a function (possibly inlined into its caller) at a source line.
/// The texts are shared with the capture's strings: a stack of a thousand frames named
/// by long strings costs a thousand pointers, not a thousand copies.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FrameName {
    pub function: Arc<str>,
    /// Short module name (file name of the path, or `[kernel]`).
    pub module: Arc<str>,
    pub file: Option<Arc<str>>,
    pub line: u32,
    pub kind: FrameKind,
}

impl FrameName {
    /// The function this frame is merged under in flat profiles and call trees.
    pub fn key(&self) -> FunctionKey {
        FunctionKey {
            function: self.function.clone(),
            module: self.module.clone(),
            kind: self.kind,
        }
    }

    /// A frame that stands for samples without a real one (`[no frames]`, `[stack lost
    /// to damage]`): a marker in no module.
    pub fn placeholder(name: &str) -> FrameName {
        FrameName {
            function: name.into(),
            module: "".into(),
            file: None,
            line: 0,
            kind: FrameKind::Marker,
        }
    }

    /// The frame an off-CPU sample's stack ends in: its state's name
    /// ([`metric::state_frame`]) in the module [`metric::OFF_CPU_MODULE`], so every view
    /// and export splits blocked time by why with no rule of its own.
    pub fn off_cpu(state: ThreadState) -> FrameName {
        FrameName {
            function: metric::state_frame(state).into(),
            module: metric::OFF_CPU_MODULE.into(),
            file: None,
            line: 0,
            kind: FrameKind::OffCpu(state),
        }
    }
}

/// Identity of a function across frames: name, the module it lives in, and its kind.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FunctionKey {
    pub function: Arc<str>,
    pub module: Arc<str>,
    pub kind: FrameKind,
}

/// Text used where no name is recoverable.
pub const UNKNOWN: &str = "??";

/// Most inlined functions named per frame (the innermost ones are kept). Compilers inline
/// a few dozen levels at most; a capture claiming more is damaged or crafted.
pub const MAX_INLINED: usize = 64;

/// Most logical frames named per stack (inlined functions included); the frames nearest
/// the leaf are kept. A stack holds at most 1024 physical frames (SPEC.md §8).
pub const MAX_LOGICAL_FRAMES: usize = 2048;

fn shared(text: &'static str) -> Arc<str> {
    thread_local! {
        static TEXTS: std::cell::RefCell<Vec<(&'static str, Arc<str>)>> =
            const { std::cell::RefCell::new(Vec::new()) };
    }
    TEXTS.with(|t| {
        let mut t = t.borrow_mut();
        if let Some((_, a)) = t.iter().find(|(s, _)| *s == text) {
            return a.clone();
        }
        let a: Arc<str> = text.into();
        t.push((text, a.clone()));
        a
    })
}

/// The logical frames of a physical frame, innermost (leaf-most) first: inlined
/// functions come before the function they were inlined into. At most
/// [`MAX_INLINED`] + 1 are added.
pub fn expand(capture: &Capture, frame: FrameId, out: &mut Vec<FrameName>) {
    let Some(f) = capture.frames.get(&frame) else {
        out.push(unknown(
            shared("[unknown frame]"),
            FrameKind::of(capture, frame),
        ));
        return;
    };
    let module = capture.modules.get(&f.module);
    let kind = FrameKind::in_module(capture, frame, f.module, module);
    let module_name = match module.map(|m| m.kind) {
        Some(ModuleKind::Kernel) => shared("[kernel]"),
        _ => capture
            .module_name(f.module)
            .unwrap_or_else(|| shared("[unknown]")),
    };
    let name = |id| capture.shared_string(id).unwrap_or_else(|| shared(UNKNOWN));
    let Some(sym) = capture.symbols.get(&frame) else {
        // A kernel frame carries its symbol in the frame itself.
        let function = match &f.addr {
            FrameAddr::KernelSymbol { symbol, .. } => name(*symbol),
            FrameAddr::FileOffset(_) => shared(UNKNOWN),
        };
        out.push(FrameName {
            function,
            module: module_name,
            file: None,
            line: 0,
            kind,
        });
        return;
    };
    // Each entry's location is inside its own function (blazesym's convention): the
    // innermost inlined function holds the address, each outer one the call site.
    for inl in sym.inlined.iter().rev().take(MAX_INLINED) {
        let (file, line) = loc(capture, &inl.loc);
        out.push(FrameName {
            function: name(inl.function),
            module: module_name.clone(),
            file,
            line,
            kind,
        });
    }
    let (file, line) = loc(capture, &sym.loc);
    out.push(FrameName {
        function: name(sym.function),
        module: module_name,
        file,
        line,
        kind,
    });
}

fn loc(capture: &Capture, l: &SourceLoc) -> (Option<Arc<str>>, u32) {
    (l.file.and_then(|f| capture.shared_string(f)), l.line)
}

fn unknown(module: Arc<str>, kind: FrameKind) -> FrameName {
    FrameName {
        function: shared(UNKNOWN),
        module,
        file: None,
        line: 0,
        kind,
    }
}
