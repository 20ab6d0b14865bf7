//! One ELF file the recorder reads (a target's executable or library, the vDSO image),
//! opened once and shared by the unwinder and the symboliser: its build-id, debug link,
//! segments, line-table storage, separate debug file and unwind tables.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use hotspot_unwind::ModuleUnwind;
use object::{Object, ObjectSection, ObjectSegment, ReadCache, ReadRef, SegmentFlags};

use crate::build_id;
use crate::debug_lines::LineInfo;

/// Most heap all modules' unwind tables may hold together (see [`ModuleFile::unwind`]).
/// The largest real `.eh_frame` on these machines is 7.4 MiB (LLVM's library).
const UNWIND_BUDGET: usize = 256 << 20;

/// Heap held by the unwind tables read so far. Tables are kept for the whole recording
/// (a module's code keeps being sampled), so this only grows.
static UNWIND_HEAP: AtomicUsize = AtomicUsize::new(0);

/// Deleted or replaced files kept open (see [`ModuleFile::open_mapping`]): a target
/// cannot make the recorder run out of descriptors by mapping many.
static HELD_FILES: AtomicUsize = AtomicUsize::new(0);
const MAX_HELD_FILES: usize = 256;

/// A `PT_LOAD` segment: where a range of the file is mapped in the ELF's own addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Segment {
    offset: u64,
    size: u64,
    vaddr: u64,
    executable: bool,
}

/// What the recorder knows of one ELF file.
#[derive(Debug)]
pub struct ModuleFile {
    /// Where it was opened (a real path, `/proc/PID/map_files/…`, or a dumped image).
    path: PathBuf,
    /// The path the process's maps name: where debug links resolve from.
    recorded: PathBuf,
    build_id: Vec<u8>,
    debuglink: Option<OsString>,
    segments: Vec<Segment>,
    line_info: LineInfo,
    /// The separate debug file, looked for once (see [`ModuleFile::debug_file`]).
    debug_file: OnceLock<Option<PathBuf>>,
    /// Call-frame information, read at the first unwind through this file (`None` inside
    /// when it could not be read).
    unwind: OnceLock<Option<ModuleUnwind>>,
    /// Kept open when no path leads to the file any more: `path` names this descriptor.
    held: Option<File>,
}

impl ModuleFile {
    /// Reads the headers of the ELF file at `path` (not its contents: libraries can be
    /// hundreds of megabytes); `None` if it is not a readable ELF file.
    pub fn open(path: &Path) -> Option<ModuleFile> {
        let file = File::open(path).ok()?;
        let cache = ReadCache::new(file);
        Self::parse(path, &cache)
    }

    /// An ELF image held in memory (the vDSO, dumped from our own process), recorded
    /// under `path`.
    pub fn from_image(path: &Path, image: &[u8]) -> Option<ModuleFile> {
        let f = Self::parse(path, image)?;
        // There is no file to read the tables from later.
        let _ = f.unwind.set(ModuleUnwind::from_elf(image).ok());
        Some(f)
    }

    fn parse<'data, R: ReadRef<'data>>(path: &Path, data: R) -> Option<ModuleFile> {
        let obj = object::File::parse(data).ok()?;
        let build_id = obj
            .build_id()
            .ok()
            .flatten()
            .filter(|id| build_id::plausible(id))
            .map(<[u8]>::to_vec)
            .unwrap_or_default();
        let debuglink = obj
            .gnu_debuglink()
            .ok()
            .flatten()
            .and_then(|(name, _crc)| build_id::link_name(name));
        let segments = obj
            .segments()
            .map(|s| {
                let (offset, size) = s.file_range();
                let executable = matches!(
                    s.flags(),
                    SegmentFlags::Elf { p_flags, .. } if p_flags.0 & object::elf::PF_X.0 != 0
                );
                Segment {
                    offset,
                    size,
                    vaddr: s.address(),
                    executable,
                }
            })
            .collect();
        let line_info = match obj
            .section_by_name(".debug_line")
            .or_else(|| obj.section_by_name(".zdebug_line"))
        {
            None => LineInfo::Absent,
            Some(s) => match s.compressed_file_range().ok()?.format {
                object::CompressionFormat::None => LineInfo::Plain,
                _ => LineInfo::Compressed,
            },
        };
        Some(ModuleFile {
            path: path.to_path_buf(),
            recorded: path.to_path_buf(),
            build_id,
            debuglink,
            segments,
            line_info,
            debug_file: OnceLock::new(),
            unwind: OnceLock::new(),
            held: None,
        })
    }

    /// The file's call-frame information, read at the first call (only the CFI sections,
    /// through `pread`: never a mapping a target could truncate under us). A separate
    /// debug file's `.debug_frame` is added where `.eh_frame` has no entry.
    pub fn unwind(&self, debug_dirs: &[PathBuf]) -> Option<&ModuleUnwind> {
        self.unwind
            .get_or_init(|| {
                // Every module's tables are capped (64 MiB a section); this caps them all,
                // so a target mapping many crafted files cannot exhaust the recorder.
                // Past it, code is unwound by frame pointers only.
                if UNWIND_HEAP.load(Ordering::Relaxed) >= UNWIND_BUDGET {
                    return None;
                }
                let file = File::open(&self.path).ok()?;
                let mut unwind = ModuleUnwind::read(&ReadCache::new(file)).ok()?;
                if let Some(debug) = self.debug_file(debug_dirs)
                    && let Ok(f) = File::open(debug)
                {
                    // A debug file without .debug_frame (the usual case) changes nothing.
                    let _ = unwind.read_debug_frame(&ReadCache::new(f));
                }
                UNWIND_HEAP.fetch_add(unwind.heap_bytes(), Ordering::Relaxed);
                Some(unwind)
            })
            .as_ref()
    }

    /// The unwind tables if they were read already (never reads them).
    pub fn unwind_if_read(&self) -> Option<&ModuleUnwind> {
        self.unwind.get().and_then(Option::as_ref)
    }

    /// Opens the file a process maps: `mapped` is `/proc/PID/map_files/…` (the very file
    /// mapped, even if its path was since replaced or deleted), `plain` the path the maps
    /// name and `inode` the mapped file's. The plain path is kept as where to read it
    /// again when it holds the same build-id (it outlives the process, and debug links
    /// resolve from it). A file the path no longer holds is kept open (a few at most), so
    /// its symbols can still be read once the process is gone. With the process gone,
    /// the plain path is used only if it still holds the same inode.
    pub fn open_mapping(mapped: &Path, plain: &Path, inode: u64) -> Option<ModuleFile> {
        let Ok(held) = File::open(mapped) else {
            let same_inode = inode == 0
                || std::fs::metadata(plain).is_ok_and(|md| {
                    use std::os::unix::fs::MetadataExt;
                    md.ino() == inode
                });
            return same_inode.then(|| ModuleFile::open(plain)).flatten();
        };
        let mut f = Self::parse(mapped, &ReadCache::new(held.try_clone().ok()?))?;
        f.recorded = plain.to_path_buf();
        let same = if f.build_id.is_empty() {
            // Nothing to compare: trust a path that exists.
            plain.exists()
        } else {
            build_id::of_elf_file(plain).is_some_and(|id| id == f.build_id)
        };
        if same {
            f.path = plain.to_path_buf();
        } else if HELD_FILES.fetch_add(1, Ordering::Relaxed) < MAX_HELD_FILES {
            use std::os::fd::AsRawFd;
            // Our own descriptor outlives the target's map_files entry.
            f.path = PathBuf::from(format!("/proc/self/fd/{}", held.as_raw_fd()));
            f.held = Some(held);
        }
        Some(f)
    }

    /// False when the path the maps name no longer holds this file (deleted or replaced
    /// since it was mapped).
    pub fn at_recorded_path(&self) -> bool {
        self.path == self.recorded
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The GNU build-id; empty when the file has none (or an implausible one).
    pub fn build_id(&self) -> &[u8] {
        &self.build_id
    }

    /// How the file stores its own line table.
    pub fn line_info(&self) -> LineInfo {
        self.line_info
    }

    /// The ELF virtual address of a file offset inside an executable segment: where code
    /// mapped from that offset sits in the file's own address space.
    pub fn vaddr_of(&self, offset: u64) -> Option<u64> {
        self.code_segment(offset)
            .map(|(start, _, vaddr)| offset - start + vaddr)
    }

    /// The executable segment holding file offset `offset`: (its file offset, size,
    /// virtual address), so a caller can translate a whole range at once.
    pub fn code_segment(&self, offset: u64) -> Option<(u64, u64, u64)> {
        self.segments
            .iter()
            .filter(|s| s.executable)
            .find(|s| offset >= s.offset && offset - s.offset < s.size)
            .map(|s| (s.offset, s.size, s.vaddr))
    }

    /// The separate debug file of this module: under a debug directory by build-id, or by
    /// its `.gnu_debuglink` name beside the path the maps name, in its `.debug/` or under
    /// a debug directory. Only a file with the same build-id counts, so a module without
    /// one never gets a debug file. Looked for once.
    pub fn debug_file(&self, debug_dirs: &[PathBuf]) -> Option<&Path> {
        self.debug_file
            .get_or_init(|| self.find_debug_file(debug_dirs))
            .as_deref()
    }

    fn find_debug_file(&self, debug_dirs: &[PathBuf]) -> Option<PathBuf> {
        let recorded = &self.recorded;
        let id = &self.build_id;
        if id.len() < 2 {
            return None;
        }
        let matches = |p: &Path| build_id::of_elf_file(p).is_some_and(|found| &found == id);
        let hex = build_id::hex(id);
        let by_id = debug_dirs.iter().map(|d| {
            d.join(".build-id")
                .join(&hex[..2])
                .join(format!("{}.debug", &hex[2..]))
        });
        let dir = recorded.parent().unwrap_or(Path::new("/"));
        let by_link = self.debuglink.iter().flat_map(|name| {
            let under = debug_dirs
                .iter()
                .map(|d| d.join(dir.strip_prefix("/").unwrap_or(dir)).join(name));
            [dir.join(name), dir.join(".debug").join(name)]
                .into_iter()
                .chain(under.collect::<Vec<_>>())
        });
        by_id.chain(by_link).find(|p| p.is_file() && matches(p))
    }
}

/// The file a process maps at `m` (see [`ModuleFile::open_mapping`]), opened once across
/// every process that maps it.
pub fn of_mapping(
    files: &mut ModuleFiles,
    proc_root: &Path,
    pid: u32,
    m: &crate::proc_maps::Mapping,
) -> Option<Arc<ModuleFile>> {
    files.get((m.inode, m.path.clone()), || {
        let mapped = proc_root
            .join(pid.to_string())
            .join("map_files")
            .join(format!("{:x}-{:x}", m.start, m.end));
        ModuleFile::open_mapping(&mapped, Path::new(&m.path), m.inode)
    })
}

/// Whether the path of file mapping `m` still holds the file mapped (same inode): false
/// once it was deleted or replaced.
pub fn still_at_path(m: &crate::proc_maps::Mapping) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(&m.path).is_ok_and(|md| m.inode == 0 || md.ino() == m.inode)
}

/// Our own vDSO's bytes: the kernel maps the same image into every process.
pub fn own_vdso_image(proc_root: &Path) -> Option<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let maps = std::fs::read_to_string(proc_root.join("self/maps")).ok()?;
    let line = maps.lines().find(|l| l.ends_with("[vdso]"))?;
    let (range, _) = line.split_once(' ')?;
    let (s, e) = range.split_once('-')?;
    let (s, e) = (
        u64::from_str_radix(s, 16).ok()?,
        u64::from_str_radix(e, 16).ok()?,
    );
    let mut mem = File::open(proc_root.join("self/mem")).ok()?;
    mem.seek(SeekFrom::Start(s)).ok()?;
    let mut buf = vec![0u8; usize::try_from(e.checked_sub(s)?).ok()?.min(1 << 20)];
    mem.read_exact(&mut buf).ok()?;
    Some(buf)
}

/// Identity of a mapped file across processes: the same inode under the same path is
/// the same file, whichever process maps it.
pub type FileKey = (u64, String);

/// Every ELF file opened while recording, once each.
#[derive(Debug, Default)]
pub struct ModuleFiles {
    files: HashMap<FileKey, Option<Arc<ModuleFile>>>,
}

impl ModuleFiles {
    /// The file under `key`, opened from `open` the first time (`None`, remembered, when
    /// it cannot be read as ELF).
    pub fn get(
        &mut self,
        key: FileKey,
        open: impl FnOnce() -> Option<ModuleFile>,
    ) -> Option<Arc<ModuleFile>> {
        self.files
            .entry(key)
            .or_insert_with(|| open().map(Arc::new))
            .clone()
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_executable_has_a_build_id_and_code_segments() {
        let exe = std::env::current_exe().expect("exe");
        let f = ModuleFile::open(&exe).expect("our own binary is ELF");
        assert_eq!(Some(f.build_id().to_vec()), build_id::of_elf_file(&exe));
        let text = f
            .segments
            .iter()
            .find(|s| s.executable)
            .expect("an executable segment");
        assert_eq!(
            f.vaddr_of(text.offset + 0x10),
            Some(text.vaddr + 0x10),
            "offsets in the code segment map to its addresses"
        );
        assert_eq!(f.vaddr_of(u64::MAX), None);
    }

    #[test]
    fn files_are_opened_once() {
        let mut files = ModuleFiles::default();
        let exe = std::env::current_exe().expect("exe");
        let mut opened = 0;
        for _ in 0..3 {
            let f = files.get((1, "x".into()), || {
                opened += 1;
                ModuleFile::open(&exe)
            });
            assert!(f.is_some());
        }
        assert_eq!(opened, 1);
        assert!(files.get((2, "not elf".into()), || None).is_none());
        assert_eq!(files.len(), 2);
    }
}
