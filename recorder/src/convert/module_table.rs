//! Code objects seen while recording: one id per distinct (kind, path, build-id), with
//! what the symboliser needs to find the file again.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use hotspot_format::{Module, ModuleId, ModuleKind};

use hotspot_symbols::ModuleFile;

/// What the recorder knows about a module beyond what goes on disk.
#[derive(Debug, Clone)]
pub struct ModuleInfo {
    pub id: ModuleId,
    pub kind: ModuleKind,
    /// Path as recorded (`/usr/lib/libc.so.6`, `[vdso]`, `[jit:PID]`, kernel module name).
    pub path: String,
    pub build_id: Vec<u8>,
    /// The file as the host opened it, once, for the unwinder and the symboliser: from
    /// the recorded path if its build-id matches, else however the host still reaches the
    /// file mapped (live: `/proc/PID/map_files/…`, or a descriptor held open).
    pub file: Option<Arc<ModuleFile>>,
    /// Owning process for per-process modules (JIT maps).
    pub pid: Option<u32>,
}

impl ModuleInfo {
    /// Where the symboliser can read the object.
    pub fn open_path(&self) -> Option<&Path> {
        self.file.as_deref().map(ModuleFile::path)
    }

    /// Its names may vanish with its process: a JIT's perf map is deleted at exit, and a
    /// file no longer at its path is reached only as long as the host can.
    pub fn ephemeral(&self) -> bool {
        self.kind == ModuleKind::Jit || self.file.as_ref().is_some_and(|f| !f.at_recorded_path())
    }

    /// The on-disk record for this module.
    pub fn record(&self) -> Module {
        Module {
            id: self.id,
            kind: self.kind,
            path: self.path.clone(),
            build_id: self.build_id.clone(),
        }
    }
}

type Key = (ModuleKind, String, Vec<u8>);

/// Interns modules.
#[derive(Debug, Default)]
pub struct ModuleTable {
    ids: HashMap<Key, ModuleId>,
    infos: Vec<ModuleInfo>,
}

impl ModuleTable {
    /// The id for this module, and whether it is new (so its record must be written).
    pub fn intern(
        &mut self,
        kind: ModuleKind,
        path: &str,
        build_id: &[u8],
        file: Option<Arc<ModuleFile>>,
        pid: Option<u32>,
    ) -> (ModuleId, bool) {
        let key = (kind, path.to_string(), build_id.to_vec());
        if let Some(&id) = self.ids.get(&key) {
            // Its file was released (no process mapped it for a while), and it is mapped
            // again: the symboliser reads it from here.
            if let Some(info) = self.infos.get_mut(id as usize)
                && info.file.is_none()
            {
                info.file = file;
            }
            return (id, false);
        }
        let id = self.infos.len() as ModuleId;
        self.infos.push(ModuleInfo {
            id,
            kind,
            path: path.to_string(),
            build_id: build_id.to_vec(),
            file,
            pid,
        });
        self.ids.insert(key, id);
        (id, true)
    }

    pub fn get(&self, id: ModuleId) -> Option<&ModuleInfo> {
        self.infos.get(id as usize)
    }

    /// Retires the module of `kind` and `path` (a process's own, whose process is
    /// gone): the same path later is a new module, with frames of its own. Its info
    /// stays (the id indexes it, and frames of it may still be on their way to the
    /// symboliser), without what it held. Returns its id.
    pub fn retire(&mut self, kind: ModuleKind, path: &str) -> Option<ModuleId> {
        let id = self.ids.remove(&(kind, path.to_string(), Vec::new()))?;
        if let Some(info) = self.infos.get_mut(id as usize) {
            info.file = None;
        }
        Some(id)
    }

    /// Lets go of the files only their module holds (no process the recorder knows maps
    /// them, and no frame of them waits for names): a module mapped again gets its file
    /// back at its next [`ModuleTable::intern`].
    pub fn release_unheld_files(&mut self) {
        for info in &mut self.infos {
            if info
                .file
                .as_ref()
                .is_some_and(|f| Arc::strong_count(f) == 1)
            {
                info.file = None;
            }
        }
    }

    /// Modules interned and not retired.
    pub fn len(&self) -> usize {
        self.ids.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_only_its_module_holds_is_let_go_of_and_taken_back_when_mapped_again() {
        let exe = std::env::current_exe().expect("exe");
        let file = Arc::new(ModuleFile::open(&exe).expect("our own binary is ELF"));
        let mut t = ModuleTable::default();
        let mapped = Arc::clone(&file);
        let (id, new) = t.intern(ModuleKind::Elf, "/x", b"b", Some(file), None);
        assert!(new);
        t.release_unheld_files();
        assert!(
            t.get(id).and_then(|m| m.file.as_ref()).is_some(),
            "still mapped"
        );
        drop(mapped);
        t.release_unheld_files();
        assert!(
            t.get(id).and_then(|m| m.file.as_ref()).is_none(),
            "let go of"
        );
        let again = Arc::new(ModuleFile::open(&exe).expect("ELF"));
        assert_eq!(
            t.intern(ModuleKind::Elf, "/x", b"b", Some(again), None),
            (id, false)
        );
        assert!(t.get(id).and_then(|m| m.file.as_ref()).is_some(), "back");
        // A process's own module is retired: its path again is a new module.
        let (jit, _) = t.intern(ModuleKind::Jit, "[jit:5]", &[], None, Some(5));
        assert_eq!(t.retire(ModuleKind::Jit, "[jit:5]"), Some(jit));
        let (jit2, new) = t.intern(ModuleKind::Jit, "[jit:5]", &[], None, Some(5));
        assert!(new && jit2 != jit);
        assert_eq!(t.len(), 2);
    }
}
