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
}
