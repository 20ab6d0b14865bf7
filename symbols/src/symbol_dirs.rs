//! Every ELF file under the directories `--symbols` names, indexed by build-id
//! ([`SymbolDirs`]), for files kept under any name (`split7030.debug` next to a capture),
//! and the choice of binary and debug file that names a module again ([`Found`]).

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};

use object::{Object, ReadCache};

use crate::build_id;
use crate::module_file::ModuleFile;

/// Most files looked at per directory tree: a mistaken `--symbols /` must not take forever.
pub const MAX_FILES: usize = 100_000;

/// An ELF file found under a symbol directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub build_id: Vec<u8>,
    pub path: PathBuf,
}

/// The ELF files with a plausible GNU build-id under some directories, walked in sorted
/// order (so which file wins does not depend on directory order) and bounded by
/// [`MAX_FILES`] per tree.
#[derive(Debug, Default)]
pub struct SymbolDirs {
    dirs: Vec<PathBuf>,
    candidates: Vec<Candidate>,
    /// Index into `candidates` of every file with a build-id, in walk order.
    by_id: HashMap<Vec<u8>, Vec<usize>>,
    /// File name without `.debug` → indexes, in walk order.
    by_name: BTreeMap<String, Vec<usize>>,
}

impl SymbolDirs {
    /// Walks `dirs` (a file may be named directly too).
    pub fn scan(dirs: &[PathBuf]) -> Self {
        let mut s = SymbolDirs {
            dirs: dirs.to_vec(),
            ..SymbolDirs::default()
        };
        for d in dirs {
            collect(d, &mut s.candidates, &mut 0);
        }
        for (i, c) in s.candidates.iter().enumerate() {
            s.by_id.entry(c.build_id.clone()).or_default().push(i);
            let name = c
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let name = name.strip_suffix(".debug").unwrap_or(&name).to_string();
            s.by_name.entry(name).or_default().push(i);
        }
        s
    }

    /// The directories walked, to look debug files up in by build-id too.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Every file with build-id `id`, in walk order; none for an implausible id.
    pub fn with_build_id(&self, id: &[u8]) -> impl Iterator<Item = &Candidate> {
        let found = if build_id::plausible(id) {
            self.by_id.get(id).map_or(&[][..], Vec::as_slice)
        } else {
            &[]
        };
        found.iter().map(|&i| &self.candidates[i])
    }

    /// The first file named `name` (or `name.debug`), whatever its build-id: to tell the
    /// user why a module was not named again.
    pub fn named(&self, name: &str) -> Option<&Candidate> {
        self.by_name
            .get(name)
            .and_then(|v| v.first())
            .map(|&i| &self.candidates[i])
    }
}

/// The files that name a module again, as [`SymbolDirs::module`] picks them.
#[derive(Debug)]
pub struct Found {
    /// The module to symbolise: the binary (its segments give the offsets' addresses),
    /// with the debug file attached; or the debug file alone when no binary is at hand.
    pub file: ModuleFile,
    /// The file the names come from (the debug file if there is one).
    pub names_from: PathBuf,
}

impl SymbolDirs {
    /// The files for the module with build-id `id`, recorded at `recorded`: a debug file
    /// (a file whose code was stripped out, so its segments hold no bytes) and a binary
    /// with the same build-id, each the first in walk order. The binary is looked for
    /// under the directories, then at the recorded path (only used if its build-id is
    /// the same): only a binary's program headers say exactly where its code is in the
    /// file. `None` when no file has the module's build-id.
    pub fn module(&self, id: &[u8], recorded: &Path) -> Option<Found> {
        let mut binary = None;
        let mut debug = None;
        for c in self.with_build_id(id) {
            let Ok(f) = ModuleFile::open(&c.path) else {
                continue;
            };
            let slot = if f.segments().assumed() {
                &mut debug
            } else if !f.segments().is_empty() {
                &mut binary
            } else {
                continue;
            };
            if slot.is_none() {
                *slot = Some(f);
            }
            if binary.is_some() && debug.is_some() {
                break;
            }
        }
        if binary.is_none() && debug.is_some() {
            binary = ModuleFile::open(recorded)
                .ok()
                .filter(|f| f.build_id() == id && !f.segments().assumed());
        }
        match (binary, debug) {
            (Some(b), Some(d)) => Some(Found {
                names_from: d.path().to_path_buf(),
                file: b.with_debug_file(d.path().to_path_buf()),
            }),
            (Some(f), None) | (None, Some(f)) => Some(Found {
                names_from: f.path().to_path_buf(),
                file: f,
            }),
            (None, None) => None,
        }
    }
}

/// Walks `dir` (sorted, bounded), keeping ELF files with a plausible GNU build-id.
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
    if let Ok(Some(id)) = obj.build_id()
        && build_id::plausible(id)
    {
        out.push(Candidate {
            build_id: id.to_vec(),
            path: p.to_path_buf(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::debug_file::find;

    /// A build-id of two bytes (`ld --build-id=0x…` takes any) could be anyone's: the
    /// former `--symbols` index took every id, so a capture's module with such an id
    /// (captures are input) was named from whatever file carried it.
    #[test]
    fn files_with_implausible_build_ids_are_never_candidates() {
        let dir = tempfile::tempdir().expect("tempdir");
        let src = dir.path().join("x.c");
        std::fs::write(&src, "int main(void) { return 0; }\n").expect("write");
        let build = |name: &str, id: &str| {
            let out = dir.path().join(name);
            let status = std::process::Command::new("cc")
                .arg(format!("-Wl,--build-id={id}"))
                .arg("-o")
                .arg(&out)
                .arg(&src)
                .status()
                .expect("run cc");
            assert!(status.success());
            out
        };
        let short = build("short", "0xabcd");
        let long = build("long", "0x0123456789abcdef0123");
        let dirs = SymbolDirs::scan(&[dir.path().to_path_buf()]);
        let ids: Vec<&Path> = dirs.candidates.iter().map(|c| c.path.as_path()).collect();
        assert_eq!(ids, [long.as_path()], "only the plausible id is indexed");
        assert!(dirs.module(&[0xab, 0xcd], &short).is_none());
        let id = build_id::of_elf_file(&long).expect("plausible");
        let found = dirs.module(&id, Path::new("/nonexistent")).expect("found");
        assert_eq!(found.names_from, long);
        assert!(find(&[0xab, 0xcd], None, &short, &[dir.path().to_path_buf()]).is_none());
    }
}
