//! Names for user frames, resolved on the recording machine off the sampling path: a
//! worker thread takes batches of frames and returns their symbols. How a module is
//! named is [`hotspot_symbols`]' business (the same library names frames again for
//! `--symbols`); here is only what depends on the recording: the worker, which module
//! goes first, the vDSO image and the JIT maps of live processes.
//!
//! (The crate `hotspot_symbols` names code; this module runs it beside a recording.)

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hotspot_format::{FrameId, ModuleKind};
use hotspot_symbols::perf_map::PerfMaps;
use hotspot_symbols::{ModuleFile, Named, Symbolizer};

pub use hotspot_symbols::Loc;

use crate::convert::module_table::ModuleInfo;
use crate::convert::normalizer::SymbolRequest;
use crate::name_cache::NameCache;

/// The name of one frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub frame: FrameId,
    pub function: String,
    pub loc: Loc,
    /// Inlined functions, outermost first: (name, location inside it).
    pub inlined: Vec<(String, Loc)>,
}

impl Resolved {
    fn new(frame: FrameId, n: Named) -> Self {
        Resolved {
            frame,
            function: n.function,
            loc: n.loc,
            inlined: n.inlined,
        }
    }

    fn bare(frame: FrameId, function: String) -> Self {
        Resolved {
            frame,
            function,
            loc: Loc::default(),
            inlined: Vec::new(),
        }
    }
}

type Batch = Vec<(SymbolRequest, ModuleInfo)>;

/// What the worker is asked to do.
enum Job {
    /// Name these frames (one result is sent back per batch).
    Name(Batch),
    /// A new capture begins (see [`NameCache`]).
    NextCapture,
}

/// After this long without new frames the parsed debug info is dropped: new frames are
/// rare once a program has warmed up, and libc's DWARF alone holds ~10 MB. Not 2 s (as
/// it was): on a quiet box the few new frames of whatever runs there (a poller, a
/// profiler beside us) come a few seconds apart, and each re-parsed the same files.
/// Measured with `record -a --keep 30m --segment 60s -d 180s` beside `perf record -a`
/// and a Python loop that reads /proc every second: 0.56 and 0.59 s of CPU (user
/// 0.30 + sys 0.26, 0.31 + 0.28) with 2 s, 0.41 s (0.16 + 0.25) with 30 s; peak RSS
/// 37-38 MB against 39 MB.
const IDLE: Duration = Duration::from_secs(30);

/// How often, while frames keep coming, the parsed debug information of the files that
/// had none in the meantime is dropped: long enough that a warming-up program's frames
/// are named from one parse, short enough that what a box's passing programs needed does
/// not pile up (measured under churn: +10 MB of blazesym's DWARF tables in 60 s, never
/// idle for long).
const BUSY_RELEASE: Duration = Duration::from_secs(30);

/// The worker thread; dropping the handle's sender lets it finish.
#[derive(Debug)]
pub struct SymbolWorker {
    tx: Option<Sender<Job>>,
    rx: Receiver<Vec<Resolved>>,
    handle: Option<JoinHandle<()>>,
    /// Batches submitted whose results have not been taken yet (one result per batch).
    outstanding: usize,
}

impl SymbolWorker {
    /// Starts the thread; `vdso_image` is the vDSO's bytes, for naming frames in it.
    pub fn start(debug_dirs: Vec<PathBuf>, vdso_image: Option<Arc<[u8]>>) -> std::io::Result<Self> {
        let (tx, req_rx) = channel::<Job>();
        let (res_tx, rx) = channel();
        let handle = std::thread::Builder::new()
            .name("hotspot-symbols".into())
            .spawn(move || {
                let mut resolver = Resolver::new(debug_dirs, vdso_image);
                let mut released = Instant::now();
                loop {
                    match req_rx.recv_timeout(IDLE) {
                        Ok(Job::NextCapture) => resolver.names.next_capture(),
                        Ok(Job::Name(batch)) => {
                            if res_tx.send(resolver.resolve(batch)).is_err() {
                                break;
                            }
                            // New frames that never stop (processes coming and going)
                            // would keep every file's parsed debug information forever:
                            // what was not needed for a while goes.
                            if released.elapsed() >= BUSY_RELEASE {
                                resolver.release_unused();
                                released = Instant::now();
                            }
                        }
                        Err(RecvTimeoutError::Timeout) => {
                            resolver.release();
                            released = Instant::now();
                        }
                        Err(RecvTimeoutError::Disconnected) => break,
                    }
                }
            })?;
        Ok(SymbolWorker {
            tx: Some(tx),
            rx,
            handle: Some(handle),
            outstanding: 0,
        })
    }

    /// Queues frames for resolution.
    pub fn submit(&mut self, batch: Batch) {
        if batch.is_empty() {
            return;
        }
        // A dead worker only costs names, never samples.
        if let Some(tx) = &self.tx
            && tx.send(Job::Name(batch)).is_ok()
        {
            self.outstanding += 1;
        }
    }

    /// A new capture begins: names found in the last two are given again from memory.
    pub fn next_capture(&mut self) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Job::NextCapture);
        }
    }

    /// Results that are ready now.
    pub fn ready(&mut self) -> Vec<Resolved> {
        let got: Vec<Vec<Resolved>> = self.rx.try_iter().collect();
        self.outstanding = self.outstanding.saturating_sub(got.len());
        got.into_iter().flatten().collect()
    }

    /// Waits for every batch submitted so far and returns their results; the worker goes
    /// on (a flight recorder's segment ends: its frames are named in it).
    pub fn drain(&mut self) -> Vec<Resolved> {
        let mut out = Vec::new();
        while self.outstanding > 0 {
            match self.rx.recv() {
                Ok(r) => {
                    self.outstanding -= 1;
                    out.extend(r);
                }
                // The worker died: what it had is lost (names, never samples).
                Err(_) => {
                    self.outstanding = 0;
                }
            }
        }
        out
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

/// The worker thread's state.
struct Resolver {
    symbolizer: Symbolizer,
    vdso_image: Option<Arc<[u8]>>,
    perf_maps: PerfMaps,
    /// Our own vDSO, dumped to a file at first use (`None` inside when that failed).
    vdso: Option<Option<(PathBuf, Arc<ModuleFile>)>>,
    /// Names found in the last two captures.
    names: NameCache,
}

impl Resolver {
    fn new(debug_dirs: Vec<PathBuf>, vdso_image: Option<Arc<[u8]>>) -> Self {
        Resolver {
            symbolizer: Symbolizer::new(debug_dirs),
            vdso_image,
            perf_maps: PerfMaps::default(),
            vdso: None,
            names: NameCache::default(),
        }
    }

    /// Names a batch: from memory what the last two captures named, the rest from the
    /// files (and then remembered).
    fn resolve(&mut self, batch: Batch) -> Vec<Resolved> {
        let mut out = Vec::new();
        let mut misses = Vec::new();
        let mut remember = Vec::new();
        for (req, info) in batch {
            let key = NameCache::key(&info);
            match key.as_ref().and_then(|k| self.names.get(k, req.offset)) {
                Some(hit) => out.extend(hit.map(|r| Resolved {
                    frame: req.frame,
                    ..r
                })),
                None => {
                    if let Some(k) = key {
                        remember.push((req.frame, k, req.offset));
                    }
                    misses.push((req, info));
                }
            }
        }
        let found = self.resolve_files(misses);
        let by_frame: HashMap<FrameId, &Resolved> = found.iter().map(|r| (r.frame, r)).collect();
        for (frame, key, offset) in remember {
            let name = by_frame.get(&frame).map(|r| (*r).clone());
            self.names.put(key, offset, name);
        }
        out.extend(found);
        out
    }

    fn resolve_files(&mut self, batch: Batch) -> Vec<Resolved> {
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
            let ephemeral = info.ephemeral();
            let size = info
                .open_path()
                .and_then(|p| std::fs::metadata(p).ok())
                .map_or(0, |m| m.len());
            (!ephemeral, size, info.id)
        });
        let mut out = Vec::new();
        for (info, reqs) in work {
            let offsets: Vec<u64> = reqs.iter().map(|r| r.offset).collect();
            match info.kind {
                ModuleKind::Elf => {
                    if let Some(file) = &info.file {
                        self.elf(&info, file, &reqs, &offsets, &mut out);
                    }
                }
                ModuleKind::Vdso => {
                    if let Some(file) = self.vdso_image() {
                        // Any failure leaves the frames unnamed, as any unreadable module.
                        let named = self.symbolizer.symbolize(&file, &offsets);
                        push_named(&reqs, named.unwrap_or_default(), &mut out);
                    }
                }
                ModuleKind::Jit => {
                    if let Some(pid) = info.pid {
                        let path = PathBuf::from(format!("/tmp/perf-{pid}.map"));
                        let names = self.perf_maps.names(&path, &offsets);
                        for (req, name) in reqs.iter().zip(names) {
                            if let Some(name) = name {
                                out.push(Resolved::bare(req.frame, name));
                            }
                        }
                    }
                }
                ModuleKind::Kernel | ModuleKind::KernelModule => {}
            }
        }
        out
    }

    /// A mapped ELF file: named by the symboliser, and the rest by placeholders.
    fn elf(
        &mut self,
        info: &ModuleInfo,
        file: &ModuleFile,
        reqs: &[SymbolRequest],
        offsets: &[u64],
        out: &mut Vec<Resolved>,
    ) {
        let named = self
            .symbolizer
            .symbolize(file, offsets)
            .unwrap_or_else(|_| vec![None; offsets.len()]);
        let unnamed: Vec<usize> = (0..reqs.len()).filter(|&i| named[i].is_none()).collect();
        push_named(reqs, named, out);
        if unnamed.is_empty() {
            return;
        }
        let module = info.path.rsplit('/').next().unwrap_or(&info.path);
        let rest: Vec<u64> = unnamed.iter().map(|&i| offsets[i]).collect();
        let names = self.symbolizer.placeholders(module, file, &rest);
        for (&i, name) in unnamed.iter().zip(names) {
            if let Some(name) = name {
                out.push(Resolved::bare(reqs[i].frame, name));
            }
        }
    }

    /// The vDSO is the same in every process of this kernel: dump ours once to a file so
    /// it can be read like any ELF object.
    fn vdso_image(&mut self) -> Option<Arc<ModuleFile>> {
        let image = &self.vdso_image;
        self.vdso
            .get_or_insert_with(|| {
                let path = dump_vdso(image.as_deref()?)?;
                let file = ModuleFile::open(&path).ok()?;
                Some((path, Arc::new(file)))
            })
            .as_ref()
            .map(|(_, f)| Arc::clone(f))
    }
}

impl Resolver {
    /// Drops what was parsed and read for naming: debug information, perf maps.
    fn release(&mut self) {
        self.symbolizer.release();
        self.perf_maps = PerfMaps::default();
    }

    /// Drops the debug information of the files that had no new frame since the last
    /// release, and the perf maps. A file whose frames keep coming stays parsed: on an
    /// idle box with a Python poller, libpython's new frames came every few seconds and
    /// its DWARF was parsed again at every release, most of the recorder's CPU there
    /// (`perf record -p` of it: 61% in `Symbolizer::symbolize`, parsing).
    fn release_unused(&mut self) {
        self.symbolizer.release_unused();
        self.perf_maps = PerfMaps::default();
    }
}

impl Drop for Resolver {
    fn drop(&mut self) {
        if let Some(Some((p, _))) = &self.vdso {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn push_named(reqs: &[SymbolRequest], named: Vec<Option<Named>>, out: &mut Vec<Resolved>) {
    for (req, n) in reqs.iter().zip(named) {
        if let Some(n) = n {
            out.push(Resolved::new(req.frame, n));
        }
    }
}

fn dump_vdso(image: &[u8]) -> Option<PathBuf> {
    let path = std::env::temp_dir().join(format!("hotspot-vdso-{}.so", std::process::id()));
    std::fs::write(&path, image).ok()?;
    Some(path)
}
