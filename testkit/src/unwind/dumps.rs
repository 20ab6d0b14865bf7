//! Real stacks for the unwinder's tests and benchmark: builds `unwind/tests/dumper.c` with gcc, runs it,
//! and reads its dumps (registers, stack bytes, maps) back, with the ELF files the maps
//! name loaded as modules and symbolised by their symbol tables (or their debug files').

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

use hotspot_unwind::{
    AddressSpace, CodeAt, CopyEnd, End, Frame, ModuleUnwind, Regs, StackCopy, Unwinder,
};
use object::read::elf::{ElfFile64, ProgramHeader};
use object::{LittleEndian, Object, ObjectSymbol, SymbolKind};

/// The two builds of the dumper.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Build {
    /// `-O2 -g`: no frame pointers.
    Plain,
    /// `-O2 -g -fno-omit-frame-pointer`.
    FramePointers,
}

impl Build {
    pub const ALL: [Build; 2] = [Build::Plain, Build::FramePointers];

    fn flags(self) -> &'static [&'static str] {
        match self {
            Build::Plain => &[],
            Build::FramePointers => &["-fno-omit-frame-pointer"],
        }
    }

    fn name(self) -> &'static str {
        match self {
            Build::Plain => "plain",
            Build::FramePointers => "fp",
        }
    }
}

/// One executable mapping of the dumped process.
#[derive(Clone, Debug)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub offset: u64,
    pub path: String,
}

/// One dump: what the BPF side will hand over per sample, plus the process's maps.
#[derive(Debug)]
pub struct Dump {
    pub name: String,
    pub regs: Regs,
    pub stack: Vec<u8>,
    pub maps: Vec<Mapping>,
    pub dir: PathBuf,
}

impl Dump {
    /// The dumper binary's path (the first mapping).
    pub fn exe(&self) -> &str {
        &self
            .maps
            .iter()
            .find(|m| m.path.ends_with("/dumper"))
            .unwrap()
            .path
    }

    pub fn copy(&self) -> StackCopy<'_> {
        StackCopy {
            base: self.regs.sp,
            bytes: &self.stack,
            end: CopyEnd::MappingEnd,
        }
    }
}

/// An ELF file the dumped process mapped.
pub struct Loaded {
    pub path: String,
    pub data: Vec<u8>,
    pub unwind: ModuleUnwind,
    /// (p_offset, p_filesz, p_vaddr) of each PT_LOAD.
    loads: Vec<(u64, u64, u64)>,
    /// (address, size, name), sorted.
    symbols: Vec<(u64, u64, String)>,
}

impl Loaded {
    pub fn load(path: &str, data: Vec<u8>) -> Loaded {
        let unwind = ModuleUnwind::from_elf(&data).unwrap();
        let file = ElfFile64::<LittleEndian>::parse(&*data).unwrap();
        let loads = file
            .elf_program_headers()
            .iter()
            .filter(|p| p.p_type(LittleEndian) == object::elf::PT_LOAD)
            .map(|p| {
                (
                    p.p_offset(LittleEndian),
                    p.p_filesz(LittleEndian),
                    p.p_vaddr(LittleEndian),
                )
            })
            .collect();
        let mut symbols = Vec::new();
        let mut add = |file: &ElfFile64<LittleEndian>| {
            for s in file.symbols().chain(file.dynamic_symbols()) {
                if s.kind() == SymbolKind::Text
                    && s.address() != 0
                    && let Ok(name) = s.name()
                {
                    symbols.push((s.address(), s.size(), name.to_string()));
                }
            }
        };
        add(&file);
        // Debian's libc keeps its local symbols (__libc_start_call_main, __restore_rt)
        // in libc6-dbg's file, found by build-id.
        if let Ok(Some(id)) = file.build_id() {
            let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
            let debug = format!("/usr/lib/debug/.build-id/{}/{}.debug", &hex[..2], &hex[2..]);
            if let Ok(debug) = std::fs::read(debug)
                && let Ok(file) = ElfFile64::<LittleEndian>::parse(&*debug)
            {
                add(&file);
            }
        }
        // Prefer sized symbols, then the shortest name among aliases at one address.
        symbols.sort_by(|a, b| {
            (a.0, b.1.cmp(&a.1), a.2.len(), &a.2).cmp(&(
                b.0,
                std::cmp::Ordering::Equal,
                b.2.len(),
                &b.2,
            ))
        });
        symbols.dedup_by_key(|s| s.0);
        Loaded {
            path: path.to_string(),
            data,
            unwind,
            loads,
            symbols,
        }
    }

    /// The file's virtual address for a file offset.
    pub fn svma_of_offset(&self, off: u64) -> Option<u64> {
        self.loads
            .iter()
            .find(|(o, size, _)| *o <= off && off < o + size)
            .map(|(o, _, vaddr)| off - o + vaddr)
    }

    /// The symbol covering svma.
    pub fn symbol(&self, svma: u64) -> Option<&str> {
        let i = self
            .symbols
            .partition_point(|s| s.0 <= svma)
            .checked_sub(1)?;
        let (addr, size, name) = &self.symbols[i];
        (*size == 0 || svma < addr + size).then_some(name.as_str())
    }
}

/// Every module loaded so far, by path: each file is read once per test process.
fn modules() -> &'static Mutex<HashMap<String, Arc<Loaded>>> {
    static MODULES: OnceLock<Mutex<HashMap<String, Arc<Loaded>>>> = OnceLock::new();
    MODULES.get_or_init(Default::default)
}

fn module(path: &str, dir: &Path) -> Option<Arc<Loaded>> {
    let key = if path == "[vdso]" {
        dir.join("vdso.so").display().to_string()
    } else {
        path.to_string()
    };
    let mut all = modules().lock().unwrap();
    if let Some(m) = all.get(&key) {
        return Some(m.clone());
    }
    // A mapping of a file that is gone (deleted, memfd) is code without a module.
    let loaded = Arc::new(Loaded::load(path, std::fs::read(&key).ok()?));
    all.insert(key, loaded.clone());
    Some(loaded)
}

/// The dumped process's executable mappings with their modules: an [`AddressSpace`].
pub struct Process {
    pub maps: Vec<(Mapping, Option<Arc<Loaded>>)>,
}

impl Process {
    /// The process with `path`'s module replaced by `with` (e.g. a copy without CFI).
    pub fn replacing(dump: &Dump, path: &str, with: Arc<Loaded>) -> Process {
        let mut p = Process::new(dump);
        for (m, module) in &mut p.maps {
            if m.path == path {
                *module = Some(with.clone());
            }
        }
        p
    }

    pub fn new(dump: &Dump) -> Process {
        Process {
            maps: dump
                .maps
                .iter()
                .map(|m| {
                    let module = (!m.path.is_empty()
                        && (m.path == "[vdso]" || !m.path.starts_with('[')))
                    .then(|| module(&m.path, &dump.dir))
                    .flatten();
                    (m.clone(), module)
                })
                .collect(),
        }
    }

    pub fn find(&self, avma: u64) -> Option<&(Mapping, Option<Arc<Loaded>>)> {
        self.maps
            .iter()
            .find(|(m, _)| m.start <= avma && avma < m.end)
    }

    /// (module, svma) for a process address.
    pub fn translate(&self, avma: u64) -> Option<(&Arc<Loaded>, u64)> {
        let (m, module) = self.find(avma)?;
        let module = module.as_ref()?;
        let svma = module.svma_of_offset(avma - m.start + m.offset)?;
        Some((module, svma))
    }

    /// `function` or `module!function` of a frame, `?` when unknown.
    pub fn name(&self, frame: &Frame) -> String {
        let at = if frame.exact {
            frame.addr
        } else {
            frame.addr - 1
        };
        match self.translate(at) {
            Some((module, svma)) => module.symbol(svma).unwrap_or("?").to_string(),
            None => match self.find(at) {
                Some(_) => "[anon]".to_string(),
                None => "[unmapped]".to_string(),
            },
        }
    }

    pub fn names(&self, frames: &[Frame]) -> Vec<String> {
        frames.iter().map(|f| self.name(f)).collect()
    }
}

impl AddressSpace for Process {
    /// A module's code from its file (the dumps hold no code; JIT code has none here).
    fn read_code(&mut self, avma: u64, buf: &mut [u8]) -> usize {
        let Some((m, Some(module))) = self.find(avma) else {
            return 0;
        };
        let at = (avma - m.start + m.offset) as usize;
        let code = module.data.get(at..).unwrap_or(&[]);
        let n = buf.len().min(code.len());
        buf[..n].copy_from_slice(&code[..n]);
        n
    }

    fn code_at(&mut self, avma: u64) -> CodeAt<'_> {
        match self.find(avma) {
            None => CodeAt::Unmapped,
            Some((_, None)) => CodeAt::Anonymous,
            Some((m, Some(module))) => match module.svma_of_offset(avma - m.start + m.offset) {
                Some(svma) => CodeAt::Module {
                    module: &module.unwind,
                    svma,
                },
                None => CodeAt::Unmapped,
            },
        }
    }
}

fn parse_maps(text: &str) -> Vec<Mapping> {
    text.lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let (range, perms, offset) = (f.next()?, f.next()?, f.next()?);
            let _dev = f.next()?;
            let _inode = f.next()?;
            let path = f.collect::<Vec<_>>().join(" ");
            if !perms.contains('x') {
                return None;
            }
            let (start, end) = range.split_once('-')?;
            Some(Mapping {
                start: u64::from_str_radix(start, 16).ok()?,
                end: u64::from_str_radix(end, 16).ok()?,
                offset: u64::from_str_radix(offset, 16).ok()?,
                path,
            })
        })
        .collect()
}

pub fn read_dump(dir: &Path, name: &str) -> Dump {
    let bytes = std::fs::read(dir.join(format!("{name}.dump"))).unwrap();
    assert_eq!(&bytes[..8], b"HSDUMP02");
    let word = |i: usize| u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap());
    let (ip, sp, bp, rbx, r11) = (word(1), word(2), word(3), word(4), word(5));
    let (stack_len, maps_len) = (word(6), word(7));
    let stack = bytes[64..64 + stack_len as usize].to_vec();
    let maps = &bytes[64 + stack_len as usize..];
    assert_eq!(maps.len() as u64, maps_len);
    Dump {
        name: name.to_string(),
        regs: Regs {
            ip,
            sp,
            bp,
            rbx,
            r11,
        },
        stack,
        maps: parse_maps(std::str::from_utf8(maps).unwrap()),
        dir: dir.to_path_buf(),
    }
}

/// The dump scenarios `dumper.c` writes.
pub const SCENARIOS: [&str; 8] = [
    "chain",
    "thread",
    "recursion",
    "drap",
    "jit",
    "leaf",
    "signal",
    "vdso",
];

/// The dumps of one build, made once per test process.
pub fn dumps(build: Build) -> &'static HashMap<String, Dump> {
    static DUMPS: OnceLock<Mutex<HashMap<Build, &'static HashMap<String, Dump>>>> = OnceLock::new();
    let mut all = DUMPS.get_or_init(Default::default).lock().unwrap();
    all.entry(build)
        .or_insert_with(|| Box::leak(Box::new(make_dumps(build))))
}

fn make_dumps(build: Build) -> HashMap<String, Dump> {
    let tmp = target_tmp().join(format!(
        "unwind-dumps-{}-{}",
        build.name(),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let exe = tmp.join("dumper");
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/../unwind/tests/dumper.c");
    gcc(&[src], build.flags(), &exe);
    let status = Command::new(&exe).arg(&tmp).status().unwrap();
    assert!(status.success(), "the dumper failed");
    SCENARIOS
        .iter()
        .map(|name| (name.to_string(), read_dump(&tmp, name)))
        .collect()
}

/// Unwinds a dump with a fresh unwinder: (frame names, end).
pub fn unwind(dump: &Dump) -> (Vec<Frame>, End, Process) {
    let mut process = Process::new(dump);
    let mut out = Vec::new();
    let end = Unwinder::new().unwind(dump.regs, &dump.copy(), &mut process, &mut out);
    (out, end, process)
}

/// Scratch space under target/ (set by cargo for integration tests and benchmarks), one
/// directory per test binary, emptied when it starts: reruns leave nothing behind.
fn target_tmp() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        let stem = exe.file_stem().unwrap().to_string_lossy();
        let name = stem.split('-').next().unwrap_or("unwind").to_string();
        let dir = crate::target_tmp().join(format!("unwind-{name}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    })
    .clone()
}

fn gcc(sources: &[&str], flags: &[&str], out: &Path) {
    let status = Command::new("gcc")
        .args(["-O2", "-g", "-Wall", "-Wextra", "-Werror", "-pthread"])
        .args(flags)
        .args(sources)
        .arg("-o")
        .arg(out)
        .status()
        .expect("gcc runs");
    assert!(status.success(), "gcc failed on {sources:?}");
}

/// A Python workload for Debian's /usr/bin/python3 (3.11, no frame pointers, stripped):
/// recursion, json and re (C code called from Python and calling back).
pub const PYTHON_WORK: &str = "
import json, re
def fib(n): return n if n < 2 else fib(n-1) + fib(n-2)
def work():
    for i in range(1000):
        fib(18)
        json.dumps({'a': [list(range(100)) for _ in range(20)]})
        re.sub(r'(\\d+)', lambda m: m.group(1)[::-1], ' '.join(map(str, range(2000))))
work()
";

/// Samples of a real program taken by `tests/sampler.c` (LD_PRELOAD, every 2 ms of CPU),
/// at most `n`, made once per test process and name.
pub fn samples(name: &str, program: &[&str], n: usize) -> &'static [Dump] {
    static SAMPLES: OnceLock<Mutex<HashMap<String, &'static [Dump]>>> = OnceLock::new();
    let mut all = SAMPLES.get_or_init(Default::default).lock().unwrap();
    all.entry(name.to_string()).or_insert_with(|| {
        let dir = target_tmp().join(format!("samples-{name}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let so = dir.join("sampler.so");
        let src = concat!(env!("CARGO_MANIFEST_DIR"), "/../unwind/tests/sampler.c");
        gcc(&[src], &["-shared", "-fPIC"], &so);
        let status = Command::new(program[0])
            .args(&program[1..])
            .env("HS_SAMPLE_DIR", &dir)
            .env("HS_SAMPLES", n.to_string())
            .env("LD_PRELOAD", &so)
            .status()
            .unwrap();
        assert!(status.success(), "{program:?} failed");
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| {
                let name = e.unwrap().file_name().into_string().unwrap();
                name.strip_suffix(".dump").map(str::to_string)
            })
            .collect();
        names.sort();
        let dumps: Vec<Dump> = names.iter().map(|n| read_dump(&dir, n)).collect();
        Box::leak(dumps.into_boxed_slice())
    })
}
