//! Names for user frames, resolved on the recording machine off the sampling path: a
//! worker thread takes batches of frames and returns their symbols.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::Duration;

use blazesym::symbolize::source::{Elf, Source};
use blazesym::symbolize::{CodeInfo, Input, Symbolized, Symbolizer};
use hotspot_format::{FrameId, ModuleKind};

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

/// The blazesym side, owned by the worker thread.
struct Resolver {
    /// Built on demand and dropped when idle (see [`IDLE`]).
    symbolizer: Option<Symbolizer>,
    debug_dirs: Vec<PathBuf>,
    proc_root: PathBuf,
    perf_maps: HashMap<u32, Vec<perf_map::PerfMapEntry>>,
    vdso: Option<Option<PathBuf>>,
}

impl Resolver {
    fn new(debug_dirs: Vec<PathBuf>, proc_root: PathBuf) -> Self {
        Resolver {
            symbolizer: None,
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
                    .open_path
                    .as_ref()
                    .is_some_and(|p| p.starts_with(&self.proc_root));
            let size = info
                .open_path
                .as_ref()
                .and_then(|p| std::fs::metadata(p).ok())
                .map_or(0, |m| m.len());
            (!ephemeral, size, info.id)
        });
        let mut out = Vec::new();
        for (info, reqs) in work {
            match info.kind {
                ModuleKind::Elf => {
                    if let Some(path) = &info.open_path {
                        self.elf(path.clone(), &reqs, &mut out);
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
        if self.symbolizer.take().is_some() {
            // SAFETY: malloc_trim only returns free heap pages to the kernel.
            unsafe { libc::malloc_trim(0) };
        }
    }

    fn elf(&mut self, path: PathBuf, reqs: &[SymbolRequest], out: &mut Vec<Resolved>) {
        let offsets: Vec<u64> = reqs.iter().map(|r| r.offset).collect();
        let src = Source::Elf(Elf::new(path));
        let dirs = &self.debug_dirs;
        let symbolizer = self.symbolizer.get_or_insert_with(|| {
            Symbolizer::builder()
                .enable_code_info(true)
                .enable_inlined_fns(true)
                .enable_demangling(true)
                .set_debug_dirs(Some(dirs.clone()))
                .build()
        });
        let Ok(syms) = symbolizer.symbolize(&src, Input::FileOffset(&offsets)) else {
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

fn dump_vdso(proc_root: &std::path::Path) -> Option<PathBuf> {
    use std::io::{Read, Seek, SeekFrom};
    let maps = std::fs::read_to_string(proc_root.join("self/maps")).ok()?;
    let line = maps.lines().find(|l| l.ends_with("[vdso]"))?;
    let (range, _) = line.split_once(' ')?;
    let (s, e) = range.split_once('-')?;
    let (s, e) = (
        u64::from_str_radix(s, 16).ok()?,
        u64::from_str_radix(e, 16).ok()?,
    );
    let mut mem = std::fs::File::open(proc_root.join("self/mem")).ok()?;
    mem.seek(SeekFrom::Start(s)).ok()?;
    let mut buf = vec![0u8; usize::try_from(e.checked_sub(s)?).ok()?.min(1 << 20)];
    mem.read_exact(&mut buf).ok()?;
    let path = std::env::temp_dir().join(format!("hotspot-vdso-{}.so", std::process::id()));
    std::fs::write(&path, &buf).ok()?;
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
