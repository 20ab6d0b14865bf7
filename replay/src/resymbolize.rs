//! Re-symbolisation on request (`--symbols DIR`): names frames again from ELF or debug
//! files found in directories the user names, matched strictly by GNU build-id.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};

use blazesym::symbolize::source::{Elf, Source};
use blazesym::symbolize::{CodeInfo, Input, Symbolized, Symbolizer};
use hotspot_format::{FrameAddr, InlinedFn, ModuleKind, SourceLoc, Symbol};
use object::{Object, ObjectSegment, ReadCache};

use crate::capture::Capture;

/// Most files looked at per directory tree: a mistaken `--symbols /` must not take forever.
const MAX_FILES: usize = 100_000;

/// What re-symbolisation did, for the user.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Modules named again: (module path, file used, frames named).
    pub used: Vec<(String, PathBuf, usize)>,
    /// One line per module whose same-named file had another build-id.
    pub mismatches: Vec<String>,
}

/// A candidate file: its build-id and path.
#[derive(Debug)]
struct Candidate {
    build_id: Vec<u8>,
    path: PathBuf,
}

/// Resolves the capture's user frames again from files in `dirs`, replacing embedded
/// symbols where a file with the module's build-id is found. Files are visited in sorted
/// order so the result does not depend on directory order.
pub fn resymbolize(capture: &mut Capture, dirs: &[PathBuf]) -> Outcome {
    let mut candidates = Vec::new();
    for d in dirs {
        collect(d, &mut candidates, &mut 0);
    }
    let by_id: HashMap<&[u8], &Path> = candidates
        .iter()
        .rev()
        .map(|c| (c.build_id.as_slice(), c.path.as_path()))
        .collect();
    let mut by_name: BTreeMap<String, Vec<&Candidate>> = BTreeMap::new();
    for c in &candidates {
        let name = c
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = name.strip_suffix(".debug").unwrap_or(&name).to_string();
        by_name.entry(name).or_default().push(c);
    }
    let symbolizer = Symbolizer::builder()
        .enable_code_info(true)
        .enable_inlined_fns(true)
        .enable_demangling(true)
        .set_debug_dirs(Some(dirs.to_vec()))
        .build();
    let mut outcome = Outcome::default();
    let modules: Vec<_> = capture
        .modules
        .values()
        .filter(|m| matches!(m.kind, ModuleKind::Elf | ModuleKind::Vdso))
        .cloned()
        .collect();
    for m in modules {
        let Some(path) = (!m.build_id.is_empty())
            .then(|| by_id.get(m.build_id.as_slice()))
            .flatten()
        else {
            let base = crate::names::short_module(&m.path);
            if let Some(c) = by_name.get(&base).and_then(|o| o.first()) {
                outcome.mismatches.push(format!(
                    "{}: build-id {} does not match the recorded {} for {}; keeping the embedded names",
                    crate::sanitize::display(&c.path.to_string_lossy()),
                    hex(&c.build_id),
                    if m.build_id.is_empty() { "(none)".to_string() } else { hex(&m.build_id) },
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
        let vaddrs = to_virtual(path, &frames.iter().map(|f| f.1).collect::<Vec<_>>());
        let src = Source::Elf(Elf::new(path));
        let Ok(syms) = symbolizer.symbolize(&src, Input::VirtOffset(&vaddrs)) else {
            continue;
        };
        let mut named = 0;
        for ((frame, _), sym) in frames.iter().zip(syms) {
            let Symbolized::Sym(sym) = sym else { continue };
            named += 1;
            let function = capture.intern(&sym.name);
            let loc = loc(capture, sym.code_info.as_deref());
            let inlined = sym
                .inlined
                .iter()
                .map(|i| InlinedFn {
                    function: capture.intern(&i.name),
                    loc: loc_of(capture, i.code_info.as_ref()),
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
            .push((m.path.clone(), path.to_path_buf(), named));
    }
    outcome
}

fn loc(capture: &mut Capture, ci: Option<&CodeInfo<'_>>) -> SourceLoc {
    loc_of(capture, ci)
}

fn loc_of(capture: &mut Capture, ci: Option<&CodeInfo<'_>>) -> SourceLoc {
    match ci {
        Some(ci) => SourceLoc {
            file: Some(capture.intern(&ci.to_path().to_string_lossy())),
            line: ci.line.unwrap_or(0),
        },
        None => SourceLoc::default(),
    }
}

/// File offsets in the recorded binary → virtual addresses, through the program headers
/// of `path` (a debug file keeps the binary's program headers, not its code bytes).
fn to_virtual(path: &Path, offsets: &[u64]) -> Vec<u64> {
    let segments: Vec<(u64, u64, u64)> = File::open(path)
        .ok()
        .and_then(|f| {
            let cache = ReadCache::new(f);
            let obj = object::File::parse(&cache).ok()?;
            Some(
                obj.segments()
                    .map(|s| {
                        let (off, size) = s.file_range();
                        (off, size, s.address())
                    })
                    .collect(),
            )
        })
        .unwrap_or_default();
    offsets
        .iter()
        .map(|&o| {
            segments
                .iter()
                .find(|(off, size, _)| o >= *off && o < off.saturating_add(*size))
                .map_or(o, |(off, _, addr)| addr + (o - off))
        })
        .collect()
}

/// Walks `dir` (sorted, bounded), keeping ELF files with a GNU build-id.
fn collect(dir: &Path, out: &mut Vec<Candidate>, seen: &mut usize) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        if dir.is_file() {
            add_file(dir, out);
        }
        return;
    };
    let mut entries: Vec<_> = rd.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        *seen += 1;
        if *seen > MAX_FILES {
            return;
        }
        let Ok(meta) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        if meta.is_dir() {
            collect(&p, out, seen);
        } else if meta.is_file() || meta.file_type().is_symlink() {
            add_file(&p, out);
        }
    }
}

fn add_file(p: &Path, out: &mut Vec<Candidate>) {
    let Ok(f) = File::open(p) else { return };
    let cache = ReadCache::new(f);
    let Ok(obj) = object::File::parse(&cache) else {
        return;
    };
    if let Ok(Some(id)) = obj.build_id() {
        out.push(Candidate {
            build_id: id.to_vec(),
            path: p.to_path_buf(),
        });
    }
}

fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}
