//! Where a module's separate debug file is, as gdb looks for it ([`find`]): under a debug
//! directory by build-id (`DIR/.build-id/ab/cdef….debug`), or by its `.gnu_debuglink`
//! name beside the binary, in its `.debug/`, or under a debug directory at the binary's
//! path. Only a file with the module's own (plausible) build-id counts. The files
//! `--symbols` names are indexed by [`crate::symbol_dirs`].

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::build_id;

/// The debug file of the module with build-id `id` and debug link `debuglink`, whose
/// binary the process mapped from `binary` (see the module docs for the places looked
/// at, in order). `None` for a module without a plausible build-id: nothing could tell
/// its debug file from another build's.
pub fn find(
    id: &[u8],
    debuglink: Option<&OsStr>,
    binary: &Path,
    debug_dirs: &[PathBuf],
) -> Option<PathBuf> {
    if !build_id::plausible(id) {
        return None;
    }
    let matches = |p: &Path| build_id::of_elf_file(p).is_some_and(|found| found == id);
    let hex = build_id::hex(id);
    let by_id = debug_dirs.iter().map(|d| by_build_id(d, &hex));
    let dir = binary.parent().unwrap_or(Path::new("/"));
    let by_link = debuglink.into_iter().flat_map(|name| {
        let under = debug_dirs
            .iter()
            .map(|d| d.join(dir.strip_prefix("/").unwrap_or(dir)).join(name));
        [dir.join(name), dir.join(".debug").join(name)]
            .into_iter()
            .chain(under.collect::<Vec<_>>())
    });
    by_id.chain(by_link).find(|p| p.is_file() && matches(p))
}

/// `DIR/.build-id/ab/cdef….debug` for the build-id whose hex is `hex`.
pub fn by_build_id(dir: &Path, hex: &str) -> PathBuf {
    let (head, tail) = hex.split_at(hex.len().min(2));
    dir.join(".build-id")
        .join(head)
        .join(format!("{tail}.debug"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_id_paths_split_the_first_byte_off() {
        assert_eq!(
            by_build_id(Path::new("/usr/lib/debug"), "93ac61"),
            PathBuf::from("/usr/lib/debug/.build-id/93/ac61.debug")
        );
    }
}
