//! Re-symbolisation on request (`--symbols DIR`): names frames again from ELF or debug
//! files found in directories the user names, matched strictly by GNU build-id. The
//! naming itself is `hotspot_symbols`', the library the recorder names frames with, so
//! a frame gets the same name (same offset-to-address rule, same build-id checks, same
//! fast path for compressed debug files) whether it was named while recording or here.

use std::path::{Path, PathBuf};

use hotspot_format::{FrameAddr, InlinedFn, ModuleKind, SourceLoc, Symbol};
use hotspot_symbols::{Loc, SymbolDirs, Symbolizer, build_id};

use crate::capture::Capture;

/// What re-symbolisation did, for the user.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Modules named again: (module path, file used, frames named).
    pub used: Vec<(String, PathBuf, usize)>,
    /// One line per module whose same-named file had another build-id.
    pub mismatches: Vec<String>,
}

/// Resolves the capture's user frames again from files in `dirs`, replacing embedded
/// symbols where a file with the module's build-id is found. Files are visited in sorted
/// order so the result does not depend on directory order.
pub fn resymbolize(capture: &mut Capture, dirs: &[PathBuf]) -> Outcome {
    let found = SymbolDirs::scan(dirs);
    let mut symbolizer = Symbolizer::new(dirs.to_vec());
    let mut outcome = Outcome::default();
    let modules: Vec<_> = capture
        .modules
        .values()
        .filter(|m| matches!(m.kind, ModuleKind::Elf | ModuleKind::Vdso))
        .cloned()
        .collect();
    for m in modules {
        let Some(module) = found.module(&m.build_id, Path::new(&m.path)) else {
            let base = crate::capture::short_module(&m.path);
            if let Some(c) = found.named(&base) {
                outcome.mismatches.push(format!(
                    "{}: build-id {} does not match the recorded {} for {}; keeping the embedded names",
                    crate::sanitize::display(&c.path.to_string_lossy()),
                    build_id::hex(&c.build_id),
                    if m.build_id.is_empty() { "(none)".to_string() } else { build_id::hex(&m.build_id) },
                    crate::sanitize::display(&m.path),
                ));
            }
            continue;
        };
        let mut frames: Vec<(u32, u64)> = capture
            .frames
            .values()
            .filter(|f| f.module == m.id)
            .filter_map(|f| match f.addr {
                FrameAddr::FileOffset(o) => Some((f.id, o)),
                FrameAddr::KernelSymbol { .. } => None,
            })
            .collect();
        frames.sort_unstable();
        let offsets: Vec<u64> = frames.iter().map(|f| f.1).collect();
        // A file that cannot be read keeps the embedded names, as one not found.
        let Ok(names) = symbolizer.symbolize(&module.file, &offsets) else {
            continue;
        };
        let mut named = 0;
        for ((frame, _), n) in frames.iter().zip(names) {
            let Some(n) = n else { continue };
            named += 1;
            let function = capture.intern(&n.function);
            let loc = source_loc(capture, &n.loc);
            let inlined = n
                .inlined
                .iter()
                .map(|(name, l)| InlinedFn {
                    function: capture.intern(name),
                    loc: source_loc(capture, l),
                })
                .collect();
            capture.symbols.insert(
                *frame,
                Symbol {
                    frame: *frame,
                    function,
                    loc,
                    inlined,
                },
            );
        }
        outcome
            .used
            .push((m.path.clone(), module.names_from, named));
    }
    outcome
}

fn source_loc(capture: &mut Capture, l: &Loc) -> SourceLoc {
    SourceLoc {
        file: l.file.as_deref().map(|f| capture.intern(f)),
        line: l.line,
    }
}
