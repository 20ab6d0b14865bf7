//! The names the symbol worker found in the last two captures, by module file and
//! offset: a flight recorder's segments each define their frames anew, and on a box
//! whose processes run the same code all day most of a segment's frames were named in
//! the one before. Answered from here, they need no debug information parsed again (the
//! worker drops it after 30 s without new frames, sooner than a segment lasts).
//!
//! Two generations, turned at each new capture: a name unused for a whole segment goes,
//! so what is kept stays bounded by what two segments sampled.

use std::collections::HashMap;

use hotspot_format::ModuleKind;

use crate::convert::module_table::ModuleInfo;
use crate::symbol_worker::Resolved;

/// A module's names by file offset; the frame id in each is the one it was found for.
type Names = HashMap<u64, Option<Resolved>>;

/// What a module's names are kept under: its path and build-id.
type ModuleKey = (String, Vec<u8>);

#[derive(Debug, Default)]
pub struct NameCache {
    current: HashMap<ModuleKey, Names>,
    previous: HashMap<ModuleKey, Names>,
}

impl NameCache {
    /// The key of a module whose names can be kept: a file identified by its build-id
    /// (a file without one may be rebuilt under the same path), or the vDSO. A JIT's
    /// names change as it compiles, so they are not.
    pub fn key(info: &ModuleInfo) -> Option<ModuleKey> {
        match info.kind {
            ModuleKind::Elf if !info.build_id.is_empty() && info.file.is_some() => {
                Some((info.path.clone(), info.build_id.clone()))
            }
            ModuleKind::Vdso => Some((info.path.clone(), Vec::new())),
            _ => None,
        }
    }

    /// The name found for `offset` of module `key` in this capture or the last (`Some(None)`:
    /// none was found), moved into this capture's generation.
    pub fn get(&mut self, key: &ModuleKey, offset: u64) -> Option<Option<Resolved>> {
        if let Some(n) = self.current.get(key).and_then(|m| m.get(&offset)) {
            return Some(n.clone());
        }
        let n = self.previous.get_mut(key)?.remove(&offset)?;
        self.put(key.clone(), offset, n.clone());
        Some(n)
    }

    pub fn put(&mut self, key: ModuleKey, offset: u64, name: Option<Resolved>) {
        self.current.entry(key).or_default().insert(offset, name);
    }

    /// A new capture begins: what the one before last used goes.
    pub fn next_capture(&mut self) {
        self.previous = std::mem::take(&mut self.current);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbol_worker::Loc;

    fn named(frame: u32, f: &str) -> Option<Resolved> {
        Some(Resolved {
            frame,
            function: f.into(),
            loc: Loc::default(),
            inlined: Vec::new(),
        })
    }

    #[test]
    fn names_last_two_captures() {
        let mut c = NameCache::default();
        let k = ("/usr/lib/libc.so.6".to_string(), vec![1, 2]);
        c.put(k.clone(), 0x10, named(3, "memcpy"));
        c.put(k.clone(), 0x20, None);
        assert_eq!(c.get(&k, 0x10), Some(named(3, "memcpy")));
        assert_eq!(c.get(&k, 0x20), Some(None), "no name is remembered too");
        assert_eq!(c.get(&k, 0x30), None);
        c.next_capture();
        // Used in the new capture: kept for the next.
        assert!(c.get(&k, 0x10).is_some());
        c.next_capture();
        assert!(c.get(&k, 0x10).is_some());
        // 0x20 was not asked for during a whole capture: gone.
        assert_eq!(c.get(&k, 0x20), None);
        let other = ("/usr/lib/libc.so.6".to_string(), vec![9]);
        assert_eq!(c.get(&other, 0x10), None, "another build of the file");
    }
}
