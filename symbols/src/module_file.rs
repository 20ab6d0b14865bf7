//! The module cache: one ELF file (a target's executable or library, the vDSO image, a
//! binary or debug file `--symbols` found), opened once and shared by the unwinder and
//! the symboliser: its build-id, debug link, code segments, line-table storage,
//! separate debug file and call-frame tables. Only headers are read at open; the tables
//! are read at first use, all modules' together under a memory budget.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use hotspot_unwind::ModuleUnwind;
use object::{Object, ObjectSection, ReadCache, ReadRef};

use crate::build_id;
use crate::debug_file;
use crate::debug_lines::LineInfo;
use crate::error::SymbolsError;
use crate::segments::CodeSegments;

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

/// What is known of one ELF file.
#[derive(Debug)]
pub struct ModuleFile {
    /// Where it was opened (a real path, `/proc/PID/map_files/…`, or a dumped image).
    path: PathBuf,
    /// The path the process's maps name: where debug links resolve from.
    recorded: PathBuf,
    build_id: Vec<u8>,
    debuglink: Option<OsString>,
    segments: CodeSegments,
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
    /// hundreds of megabytes).
    pub fn open(path: &Path) -> Result<ModuleFile, SymbolsError> {
        let file = File::open(path).map_err(|source| SymbolsError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let cache = ReadCache::new(file);
        Self::parse(path, &cache)
    }

    /// An ELF image held in memory (the vDSO, dumped from our own process), recorded
    /// under `path`.
    pub fn from_image(path: &Path, image: &[u8]) -> Option<ModuleFile> {
        let f = Self::parse(path, image).ok()?;
        // There is no file to read the tables from later.
        let _ = f.unwind.set(ModuleUnwind::from_elf(image).ok());
        Some(f)
    }

    fn parse<'data, R: ReadRef<'data>>(path: &Path, data: R) -> Result<ModuleFile, SymbolsError> {
        let obj = object::File::parse(data).map_err(|source| SymbolsError::NotElf {
            path: path.to_path_buf(),
            source,
        })?;
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
        let line_info = match obj
            .section_by_name(".debug_line")
            .or_else(|| obj.section_by_name(".zdebug_line"))
        {
            None => LineInfo::Absent,
            Some(s) => match s.compressed_file_range() {
                Ok(r) if r.format == object::CompressionFormat::None => LineInfo::Plain,
                Ok(_) => LineInfo::Compressed,
                Err(source) => {
                    return Err(SymbolsError::NotElf {
                        path: path.to_path_buf(),
                        source,
                    });
                }
            },
        };
        Ok(ModuleFile {
            path: path.to_path_buf(),
            recorded: path.to_path_buf(),
            build_id,
            debuglink,
            segments: CodeSegments::of_object(&obj),
            line_info,
            debug_file: OnceLock::new(),
            unwind: OnceLock::new(),
            held: None,
        })
    }

    /// Takes `debug` as the separate debug file instead of looking for one (`--symbols`
    /// found it under a name no search would try). The caller checked its build-id.
    pub fn with_debug_file(self, debug: PathBuf) -> Self {
        let _ = self.debug_file.set(Some(debug));
        self
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
            return same_inode.then(|| ModuleFile::open(plain).ok()).flatten();
        };
        let mut f = Self::parse(mapped, &ReadCache::new(held.try_clone().ok()?)).ok()?;
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
    /// mapped from that offset sits in the file's own address space (see
    /// [`crate::segments`] for the rule).
    pub fn vaddr_of(&self, offset: u64) -> Option<u64> {
        self.segments.vaddr_of(offset)
    }

    /// The executable segment holding file offset `offset`: (its file offset, size,
    /// virtual address), so a caller can translate a whole range at once.
    pub fn code_segment(&self, offset: u64) -> Option<(u64, u64, u64)> {
        self.segments
            .code_segment(offset)
            .map(|s| (s.offset, s.size, s.vaddr))
    }

    /// The code segments, with whether their layout had to be assumed.
    pub fn segments(&self) -> &CodeSegments {
        &self.segments
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
        debug_file::find(
            &self.build_id,
            self.debuglink.as_deref(),
            &self.recorded,
            debug_dirs,
        )
    }
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

    /// Drops the files nothing else holds beyond `others` more references (what the
    /// caller's own tables hold): files mapped by processes that are gone. Such a file
    /// mapped again is opened again.
    pub fn release_unheld(&mut self, others: usize) {
        self.files.retain(|_, f| {
            f.as_ref()
                .is_some_and(|a| Arc::strong_count(a) > 1 + others)
        });
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
        let text = *f.segments().as_slice().first().expect("a code segment");
        let (offset, vaddr) = (text.offset, text.vaddr);
        assert_eq!(
            f.vaddr_of(offset + 0x10),
            Some(vaddr + 0x10),
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
                ModuleFile::open(&exe).ok()
            });
            assert!(f.is_some());
        }
        assert_eq!(opened, 1);
        assert!(files.get((2, "not elf".into()), || None).is_none());
        assert_eq!(files.len(), 2);
    }
}
