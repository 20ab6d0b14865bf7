//! Names for frames from the capture's own symbols: what the views and reports print.

use hotspot_format::{FrameAddr, FrameId, ModuleKind, SourceLoc};

use crate::capture::Capture;

/// One logical frame: a function (possibly inlined into its caller) at a source line.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FrameName {
    pub function: String,
    /// Short module name (file name of the path, or `[kernel]`).
    pub module: String,
    pub file: Option<String>,
    pub line: u32,
    pub kernel: bool,
}

/// Text used where no name is recoverable.
pub const UNKNOWN: &str = "??";

/// The logical frames of a physical frame, innermost (leaf-most) first: inlined
/// functions come before the function they were inlined into.
pub fn expand(capture: &Capture, frame: FrameId, out: &mut Vec<FrameName>) {
    let Some(f) = capture.frames.get(&frame) else {
        out.push(unknown("[unknown frame]".into(), false));
        return;
    };
    let module = capture.modules.get(&f.module);
    let kind = module.map_or(ModuleKind::Jit, |m| m.kind);
    let kernel = kind.is_kernel();
    let module_name = match (kind, module) {
        (ModuleKind::Kernel, _) => "[kernel]".to_string(),
        (_, Some(m)) => short_module(&m.path),
        (_, None) => "[unknown]".to_string(),
    };
    let Some(sym) = capture.symbols.get(&frame) else {
        // A kernel frame carries its symbol in the frame itself.
        let function = match &f.addr {
            FrameAddr::KernelSymbol { symbol, .. } => {
                capture.string(*symbol).unwrap_or(UNKNOWN).to_string()
            }
            FrameAddr::FileOffset(_) => UNKNOWN.to_string(),
        };
        out.push(FrameName {
            function,
            module: module_name,
            file: None,
            line: 0,
            kernel,
        });
        return;
    };
    // Each entry's location is inside its own function (blazesym's convention): the
    // innermost inlined function holds the address, each outer one the call site.
    for inl in sym.inlined.iter().rev() {
        let (file, line) = loc(capture, &inl.loc);
        out.push(FrameName {
            function: capture.string(inl.function).unwrap_or(UNKNOWN).to_string(),
            module: module_name.clone(),
            file,
            line,
            kernel,
        });
    }
    let (file, line) = loc(capture, &sym.loc);
    out.push(FrameName {
        function: capture.string(sym.function).unwrap_or(UNKNOWN).to_string(),
        module: module_name,
        file,
        line,
        kernel,
    });
}

fn loc(capture: &Capture, l: &SourceLoc) -> (Option<String>, u32) {
    (
        l.file.and_then(|f| capture.string(f)).map(str::to_string),
        l.line,
    )
}

fn unknown(module: String, kernel: bool) -> FrameName {
    FrameName {
        function: UNKNOWN.to_string(),
        module,
        file: None,
        line: 0,
        kernel,
    }
}

/// `/usr/lib/x86_64-linux-gnu/libc.so.6` → `libc.so.6`.
pub fn short_module(path: &str) -> String {
    path.rsplit('/').next().unwrap_or(path).to_string()
}
