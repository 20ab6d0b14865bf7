//! The recorder's side of the module cache ([`hotspot_symbols::module_file`]): which
//! file a process maps, found through `/proc/PID/map_files`, and our own vDSO image.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

pub use hotspot_symbols::module_file::{ModuleFile, ModuleFiles};

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
