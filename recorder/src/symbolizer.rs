//! Names for user frames, resolved on the recording machine off the sampling path: a
//! worker thread takes batches of frames and returns their symbols.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::Duration;

use blazesym::symbolize::source::{Elf, Source};
use blazesym::symbolize::{CodeInfo, Input, Symbolized, Symbolizer};
use hotspot_format::{FrameId, ModuleKind};

use crate::debug_lines::{self, LineInfo, LineTable};
use crate::module_file::ModuleFile;
use crate::module_table::ModuleInfo;
use crate::normalizer::SymbolRequest;
use crate::perf_map;

/// A source location as plain strings (interned by the recorder thread).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Loc {
    pub file: Option<String>,
    pub line: u32,
}

/// The name of one frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub frame: FrameId,
    pub function: String,
    pub loc: Loc,
    /// Inlined functions, outermost first: (name, location inside it).
    pub inlined: Vec<(String, Loc)>,
}

type Batch = Vec<(SymbolRequest, ModuleInfo)>;

/// After this long without new frames the parsed debug info is dropped: new frames are
/// rare once a program has warmed up, and libc's DWARF alone holds ~10 MB.
const IDLE: Duration = Duration::from_secs(2);

/// The worker thread; dropping the handle's sender lets it finish.
#[derive(Debug)]
pub struct SymbolWorker {
    tx: Option<Sender<Batch>>,
    rx: Receiver<Vec<Resolved>>,
    handle: Option<JoinHandle<()>>,
}

impl SymbolWorker {
    pub fn start(debug_dirs: Vec<PathBuf>, proc_root: PathBuf) -> std::io::Result<Self> {
        let (tx, req_rx) = channel::<Batch>();
        let (res_tx, rx) = channel();
        let handle = std::thread::Builder::new()
            .name("hotspot-symbols".into())
            .spawn(move || {
                let mut resolver = Resolver::new(debug_dirs, proc_root);
                loop {
                    match req_rx.recv_timeout(IDLE) {
                        Ok(batch) => {
                            if res_tx.send(resolver.resolve(batch)).is_err() {
                                break;
                            }
                        }
                        Err(RecvTimeoutError::Timeout) => resolver.idle(),
                        Err(RecvTimeoutError::Disconnected) => break,
                    }
                }
            })?;
        Ok(SymbolWorker {
            tx: Some(tx),
            rx,
            handle: Some(handle),
        })
    }

    /// Queues frames for resolution.
    pub fn submit(&self, batch: Batch) {
        if batch.is_empty() {
            return;
        }
        if let Some(tx) = &self.tx {
            // A dead worker only costs names, never samples.
            let _ = tx.send(batch);
        }
    }

    /// Results that are ready now.
    pub fn ready(&self) -> Vec<Resolved> {
        self.rx.try_iter().flatten().collect()
    }

    /// Waits for every queued batch and returns the remaining results.
    pub fn finish(mut self) -> Vec<Resolved> {
        self.tx.take();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        self.rx.try_iter().flatten().collect()
    }
}

/// How one ELF module is named.
enum Plan {
    /// blazesym with its DWARF reader: names, file:line and inlined functions. For
    /// modules whose DWARF is stored plainly (read in place) or absent (ELF symbols).
    Full,
    /// For modules whose DWARF is compressed (distribution debug packages): names from
    /// the ELF symbol table of `symbols`, lines from the line table of `symbols` alone,
    /// no inlined functions; see [`debug_lines`] for why.
    Light {
        symbols: PathBuf,
        /// Read at first use; `None` inside once reading failed.
        lines: Option<Option<Box<LineTable>>>,
    },
}

/// The blazesym side, owned by the worker thread.
struct Resolver {
    /// Built on demand and dropped when idle (see [`IDLE`]).
    symbolizer: Option<Symbolizer>,
    /// Per module file, decided at first use and dropped when idle.
    plans: HashMap<PathBuf, Plan>,
    debug_dirs: Vec<PathBuf>,
    proc_root: PathBuf,
    perf_maps: HashMap<u32, Vec<perf_map::PerfMapEntry>>,
    vdso: Option<Option<PathBuf>>,
}

impl Resolver {
    fn new(debug_dirs: Vec<PathBuf>, proc_root: PathBuf) -> Self {
        Resolver {
            symbolizer: None,
            plans: HashMap::new(),
            debug_dirs,
            proc_root,
            perf_maps: HashMap::new(),
            vdso: None,
        }
    }

    fn resolve(&mut self, batch: Batch) -> Vec<Resolved> {
        let mut by_module: HashMap<u32, (ModuleInfo, Vec<SymbolRequest>)> = HashMap::new();
        for (req, info) in batch {
            by_module
                .entry(info.id)
                .or_insert_with(|| (info, Vec::new()))
                .1
                .push(req);
        }
        // Per-process sources vanish with the process (a JIT's perf map is deleted at
        // exit, /proc/PID/map_files goes away): resolve those before files on disk,
        // whose DWARF can take a while to load.
        let mut work: Vec<(ModuleInfo, Vec<SymbolRequest>)> = by_module.into_values().collect();
        // Then small objects before big ones: a program's own frames should not wait for
        // libc's debug info to load.
        work.sort_by_key(|(info, _)| {
            let ephemeral = info.kind == ModuleKind::Jit
                || info
                    .open_path()
                    .is_some_and(|p| p.starts_with(&self.proc_root));
            let size = info
                .open_path()
                .and_then(|p| std::fs::metadata(p).ok())
                .map_or(0, |m| m.len());
            (!ephemeral, size, info.id)
        });
        let mut out = Vec::new();
        for (info, reqs) in work {
            match info.kind {
                ModuleKind::Elf => {
                    if let Some(file) = &info.file {
                        self.elf_module(&info, file, &reqs, &mut out);
                    }
                }
                ModuleKind::Vdso => {
                    if let Some(path) = self.vdso_image() {
                        self.elf(path, &reqs, &mut out);
                    }
                }
                ModuleKind::Jit => {
                    if let Some(pid) = info.pid {
                        self.jit(pid, &reqs, &mut out);
                    }
                }
                ModuleKind::Kernel | ModuleKind::KernelModule => {}
            }
        }
        out
    }

    /// Releases the parsed debug info and gives the freed memory back to the system.
    fn idle(&mut self) {
        self.plans.clear();
        if self.symbolizer.take().is_some() {
            // SAFETY: malloc_trim only returns free heap pages to the kernel.
            unsafe { libc::malloc_trim(0) };
        }
    }

    /// A mapped ELF file: by the plan its debug information calls for.
    fn elf_module(
        &mut self,
        info: &ModuleInfo,
        file: &ModuleFile,
        reqs: &[SymbolRequest],
        out: &mut Vec<Resolved>,
    ) {
        let path = file.path().to_path_buf();
        if !self.plans.contains_key(&path) {
            let plan = plan(file, &self.debug_dirs);
            self.plans.insert(path.clone(), plan);
        }
        let before = out.len();
        match self.plans.get(&path) {
            Some(Plan::Light { .. }) => self.light(file, reqs, out),
            _ => self.elf(path, reqs, out),
        }
        self.unnamed(info, file, reqs, before, out);
    }

    /// Names the frames no symbol covers by their module and the start of the CFI entry
    /// that covers them (`python3.11+0x1a8700`, see `hotspot_format::placeholder`): each
    /// unnamed function gets a row of its own instead of one `??` per module.
    fn unnamed(
        &self,
        info: &ModuleInfo,
        file: &ModuleFile,
        reqs: &[SymbolRequest],
        named_from: usize,
        out: &mut Vec<Resolved>,
    ) {
        let named: std::collections::HashSet<FrameId> =
            out[named_from..].iter().map(|r| r.frame).collect();
        if named.len() == reqs.len() {
            return;
        }
        let Some(unwind) = file.unwind(&self.debug_dirs) else {
            return;
        };
        let module = info.path.rsplit('/').next().unwrap_or(&info.path);
        for req in reqs.iter().filter(|r| !named.contains(&r.frame)) {
            let start = file
                .vaddr_of(req.offset)
                .and_then(|svma| unwind.function_start(svma));
            if let Some(start) = start {
                out.push(Resolved {
                    frame: req.frame,
                    function: hotspot_format::placeholder::name(module, start),
                    loc: Loc::default(),
                    inlined: Vec::new(),
                });
            }
        }
    }

    fn symbolizer(&mut self) -> &Symbolizer {
        let dirs = &self.debug_dirs;
        self.symbolizer.get_or_insert_with(|| {
            Symbolizer::builder()
                .enable_code_info(true)
                .enable_inlined_fns(true)
                .enable_demangling(true)
                .set_debug_dirs(Some(dirs.clone()))
                .build()
        })
    }

    /// Names from the symbol table, lines from the line table (see [`Plan::Light`]).
    fn light(&mut self, file: &ModuleFile, reqs: &[SymbolRequest], out: &mut Vec<Resolved>) {
        let path = file.path();
        let known: Vec<(&SymbolRequest, u64)> = reqs
            .iter()
            .filter_map(|r| Some((r, file.vaddr_of(r.offset)?)))
            .collect();
        let addrs: Vec<u64> = known.iter().map(|&(_, v)| v).collect();
        let Some(Plan::Light { symbols, lines }) = self.plans.get_mut(path) else {
            return;
        };
        let symbols = symbols.clone();
        let locs = lines
            .get_or_insert_with(|| LineTable::read(&symbols).map(Box::new))
            .as_mut()
            .map(|t| t.lookup(&addrs))
            .unwrap_or_default();
        let mut elf = Elf::new(symbols);
        // Symbol tables only: not blazesym's DWARF reader, whose cost is the point.
        elf.debug_syms = false;
        let Ok(syms) = self
            .symbolizer()
            .symbolize(&Source::Elf(elf), Input::VirtOffset(&addrs))
        else {
            return;
        };
        for (i, ((req, _), sym)) in known.iter().zip(syms).enumerate() {
            if let Symbolized::Sym(sym) = sym {
                let loc = match locs.get(i) {
                    Some(Some(l)) => Loc {
                        file: Some(l.file.clone()),
                        line: l.line,
                    },
                    _ => Loc::default(),
                };
                out.push(Resolved {
                    frame: req.frame,
                    function: sym.name.into_owned(),
                    loc,
                    inlined: Vec::new(),
                });
            }
        }
    }

    fn elf(&mut self, path: PathBuf, reqs: &[SymbolRequest], out: &mut Vec<Resolved>) {
        let offsets: Vec<u64> = reqs.iter().map(|r| r.offset).collect();
        let src = Source::Elf(Elf::new(path));
        let Ok(syms) = self
            .symbolizer()
            .symbolize(&src, Input::FileOffset(&offsets))
        else {
            return;
        };
        for (req, sym) in reqs.iter().zip(syms) {
            if let Symbolized::Sym(sym) = sym {
                out.push(Resolved {
                    frame: req.frame,
                    function: sym.name.into_owned(),
                    loc: loc(sym.code_info.as_deref()),
                    inlined: sym
                        .inlined
                        .iter()
                        .map(|f| (f.name.to_string(), loc(f.code_info.as_ref())))
                        .collect(),
                });
            }
        }
    }

    fn jit(&mut self, pid: u32, reqs: &[SymbolRequest], out: &mut Vec<Resolved>) {
        let path = PathBuf::from(format!("/tmp/perf-{pid}.map"));
        // Re-read on a miss: the JIT appends as it compiles.
        let mut reread = !self.perf_maps.contains_key(&pid);
        for req in reqs {
            if reread
                || perf_map::lookup(self.perf_maps.get(&pid).map_or(&[][..], |v| v), req.offset)
                    .is_none()
            {
                if let Ok(bytes) = std::fs::read(&path) {
                    self.perf_maps.insert(pid, perf_map::parse(&bytes));
                }
                reread = false;
            }
            if let Some(e) = self
                .perf_maps
                .get(&pid)
                .and_then(|m| perf_map::lookup(m, req.offset))
            {
                out.push(Resolved {
                    frame: req.frame,
                    function: e.name.clone(),
                    loc: Loc::default(),
                    inlined: Vec::new(),
                });
            }
        }
    }

    /// The vDSO is the same in every process of this kernel: dump ours once to a file so
    /// it can be read like any ELF object.
    fn vdso_image(&mut self) -> Option<PathBuf> {
        if let Some(p) = &self.vdso {
            return p.clone();
        }
        let path = dump_vdso(&self.proc_root);
        self.vdso = Some(path.clone());
        path
    }
}

impl Drop for Resolver {
    fn drop(&mut self) {
        if let Some(Some(p)) = &self.vdso {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Decides how to name a module's frames from where its DWARF is and how it is stored.
fn plan(file: &ModuleFile, debug_dirs: &[PathBuf]) -> Plan {
    let light = |symbols: PathBuf| Plan::Light {
        symbols,
        lines: None,
    };
    match file.line_info() {
        LineInfo::Compressed => return light(file.path().to_path_buf()),
        LineInfo::Plain => return Plan::Full,
        LineInfo::Absent => {}
    }
    match file.debug_file(debug_dirs) {
        Some(debug) if debug_lines::line_info(debug) == Some(LineInfo::Compressed) => {
            light(debug.to_path_buf())
        }
        // Plain DWARF beside or under a debug directory: blazesym finds it by itself.
        _ => Plan::Full,
    }
}

fn dump_vdso(proc_root: &Path) -> Option<PathBuf> {
    let image = crate::module_file::own_vdso_image(proc_root)?;
    let path = std::env::temp_dir().join(format!("hotspot-vdso-{}.so", std::process::id()));
    std::fs::write(&path, &image).ok()?;
    Some(path)
}

fn loc(ci: Option<&CodeInfo<'_>>) -> Loc {
    match ci {
        Some(ci) => Loc {
            file: Some(ci.to_path().to_string_lossy().into_owned()),
            line: ci.line.unwrap_or(0),
        },
        None => Loc::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build_id;
    use crate::debug_lines::tests::{compile, source, symbol_address};
    use object::{Object, ObjectSegment};
    use std::process::Command;

    fn tool(cmd: &mut Command) {
        let status = cmd.status().expect("run binutils");
        assert!(status.success(), "{cmd:?} failed");
    }

    /// File offset of a virtual address in an executable segment.
    fn file_offset(path: &Path, vaddr: u64) -> u64 {
        let data = std::fs::read(path).expect("read");
        let obj = object::File::parse(&*data).expect("parse");
        obj.segments()
            .find(|s| vaddr >= s.address() && vaddr < s.address() + s.size())
            .map(|s| vaddr - s.address() + s.file_range().0)
            .expect("in a segment")
    }

    fn resolve_one(r: &mut Resolver, bin: &Path, recorded: &Path, offset: u64) -> Resolved {
        let info = ModuleInfo {
            id: 3,
            kind: ModuleKind::Elf,
            path: recorded.to_string_lossy().into_owned(),
            build_id: build_id::of_elf_file(bin).expect("build-id"),
            file: Some(std::sync::Arc::new(ModuleFile::open(bin).expect("ELF"))),
            pid: None,
        };
        let req = SymbolRequest {
            frame: 7,
            module: 3,
            offset,
        };
        let mut out = r.resolve(vec![(req, info)]);
        assert_eq!(out.len(), 1, "one name for one frame: {out:?}");
        out.remove(0)
    }

    /// A stripped binary whose compressed debug file is found by build-id, then by
    /// debuglink, is named from symbols and line table (no inlined frames), and agrees
    /// with blazesym's full DWARF reading of the unstripped build.
    #[test]
    fn compressed_debug_files_give_names_and_lines_without_the_dwarf_reader() {
        let dir = tempfile::tempdir().expect("tempdir");
        let full = compile(dir.path(), "prog", &[]);
        let stripped = dir.path().join("prog.stripped");
        let debug = dir.path().join("prog.debug");
        tool(
            Command::new("objcopy")
                .args(["--only-keep-debug", "--compress-debug-sections=zlib"])
                .arg(&full)
                .arg(&debug),
        );
        tool(
            Command::new("objcopy")
                .arg("--strip-all")
                .arg(format!("--add-gnu-debuglink={}", debug.display()))
                .arg(&full)
                .arg(&stripped),
        );
        let offset = file_offset(&full, symbol_address(&full, "work_fn") + 1);

        // Reference: the unstripped binary through blazesym.
        let mut r = Resolver::new(vec![], PathBuf::from("/proc"));
        let reference = resolve_one(&mut r, &full, &full, offset);
        assert!(matches!(r.plans.get(&full), Some(Plan::Full)));
        assert_eq!(reference.function, "work_fn");
        assert!(reference.loc.line + 1 >= source().1 && reference.loc.line <= source().1);

        // By build-id under a debug directory.
        let debug_root = dir.path().join("debug");
        let id = build_id::hex(&build_id::of_elf_file(&stripped).expect("build-id"));
        let by_id = debug_root.join(".build-id").join(&id[..2]);
        std::fs::create_dir_all(&by_id).expect("mkdir");
        std::fs::copy(&debug, by_id.join(format!("{}.debug", &id[2..]))).expect("copy");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).expect("mkdir");
        let moved = elsewhere.join("prog.stripped");
        std::fs::copy(&stripped, &moved).expect("copy");
        let mut r = Resolver::new(vec![debug_root], PathBuf::from("/proc"));
        let named = resolve_one(&mut r, &moved, &moved, offset);
        assert!(
            matches!(r.plans.get(&moved), Some(Plan::Light { .. })),
            "compressed debug info takes the light path"
        );
        assert_eq!(named.function, reference.function);
        assert_eq!(named.loc, reference.loc);
        assert!(named.inlined.is_empty());

        // By debuglink, beside the recorded path.
        let mut r = Resolver::new(vec![], PathBuf::from("/proc"));
        let named = resolve_one(&mut r, &stripped, &stripped, offset);
        assert!(matches!(r.plans.get(&stripped), Some(Plan::Light { .. })));
        assert_eq!(
            (named.function, named.loc),
            (reference.function, reference.loc)
        );

        // A debug file of another build is never used.
        let other = compile(dir.path(), "other", &["-O2"]);
        std::fs::remove_file(&debug).expect("rm");
        tool(
            Command::new("objcopy")
                .args(["--only-keep-debug", "--compress-debug-sections=zlib"])
                .arg(&other)
                .arg(&debug),
        );
        assert!(
            ModuleFile::open(&stripped)
                .expect("ELF")
                .debug_file(&[])
                .is_none()
        );
    }
}
