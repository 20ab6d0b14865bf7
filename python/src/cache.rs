//! Decoded code objects of one process, by address. Each lookup re-reads the code
//! object's header (one small read) and compares its [`CodeStamp`]: a code object freed
//! and another allocated at the same address differs in its names, line table, size or
//! first line, and is decoded afresh instead of being named after the old one.
//!
//! Failures are cached too (a crafted object costs one decode, not one per sample). The
//! cache holds at most [`MAX_CACHED_CODE_OBJECTS`] entries and starts over when full.
//!
//! Each entry also keeps the last code object that decoded at its address
//! ([`CodeCache::last_good`]): samples are named after they were taken, and by then the
//! code object a sampled frame held may have been freed and its memory reused (a
//! script's main() as the interpreter tears the module down, ~100 ms after the last
//! sample: 50 of ~1000 samples of tests/python_views_e2e.rs's lines.py on 3.11 lost
//! their main() that way).

use std::collections::HashMap;
use std::sync::Arc;

use crate::code::{CodeError, CodeHeader, CodeObject, CodeStamp, TypeAddresses};
use crate::layout::Layout;
use crate::limits::MAX_CACHED_CODE_OBJECTS;
use crate::memory::MemoryReader;

/// A process's decoded code objects.
#[derive(Debug)]
pub struct CodeCache {
    layout: Layout,
    types: TypeAddresses,
    entries: HashMap<u64, Entry>,
    /// Decodes done (each a miss, or a stamp that changed).
    pub decodes: u64,
    /// Lookups answered from the cache.
    pub hits: u64,
}

/// What was decoded at one address.
#[derive(Debug)]
struct Entry {
    stamp: CodeStamp,
    result: Result<Arc<CodeObject>, CodeError>,
    /// The last code object that decoded here (`result`'s, when it is one).
    good: Option<Arc<CodeObject>>,
}

impl CodeCache {
    pub fn new(layout: Layout, types: TypeAddresses) -> Self {
        CodeCache {
            layout,
            types,
            entries: HashMap::new(),
            decodes: 0,
            hits: 0,
        }
    }

    /// The code object at `addr`, decoded now or earlier with the same stamp.
    pub fn get(
        &mut self,
        mem: &impl MemoryReader,
        addr: u64,
    ) -> Result<Arc<CodeObject>, CodeError> {
        let header = CodeHeader::read(mem, &self.layout, addr)?;
        if let Some(e) = self.entries.get(&addr)
            && e.stamp == header.stamp
        {
            self.hits += 1;
            return e.result.clone();
        }
        self.decodes += 1;
        let result = header.decode(mem, &self.layout, &self.types).map(Arc::new);
        if self.entries.len() >= MAX_CACHED_CODE_OBJECTS {
            self.entries.clear();
        }
        let good = match &result {
            Ok(c) => Some(c.clone()),
            Err(_) => self.entries.get(&addr).and_then(|e| e.good.clone()),
        };
        self.entries.insert(
            addr,
            Entry {
                stamp: header.stamp,
                result: result.clone(),
                good,
            },
        );
        result
    }

    /// The code object that decoded last at `addr`, without reading the target: the
    /// best answer for a frame sampled a moment ago whose code object can no longer be
    /// read or no longer decodes (the process exited, or freed the object since: a
    /// sampled frame holds its code object alive, so when sampled it was a code
    /// object, and this one unless another came and went at the same address between).
    pub fn last_good(&self, addr: u64) -> Option<Arc<CodeObject>> {
        self.entries.get(&addr)?.good.clone()
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::test_image::{BYTES_TYPE, CODE_TYPE, Image, STR_TYPE};
    use crate::version::PyVersion;

    #[test]
    fn a_reused_address_is_decoded_again() {
        let layout = Layout::for_version(PyVersion::minor(3, 11)).unwrap();
        let types = TypeAddresses {
            code: Some(CODE_TYPE),
            str: Some(STR_TYPE),
            bytes: Some(BYTES_TYPE),
        };
        let mut img = Image::new(layout);
        let addr = img.code("old", "old", "a.py", 1, &[0x80], 2);
        let mut cache = CodeCache::new(layout, types);
        assert_eq!(cache.get(&img.mem, addr).unwrap().qualname, "old");
        assert_eq!(cache.get(&img.mem, addr).unwrap().qualname, "old");
        assert_eq!((cache.decodes, cache.hits), (1, 1));
        // The old code object is freed and another one allocated at its address: its
        // names are other string objects.
        let new = img.str("new");
        img.poke(addr, layout.code.qualname.unwrap(), new);
        img.poke(addr, layout.code.name, new);
        assert_eq!(cache.get(&img.mem, addr).unwrap().qualname, "new");
        assert_eq!((cache.decodes, cache.hits), (2, 1));
        // A failure is kept too: the same bad object is not decoded twice.
        img.poke(addr, layout.ob_type, 7);
        assert!(cache.get(&img.mem, addr).is_err());
        assert!(cache.get(&img.mem, addr).is_err());
        assert_eq!((cache.decodes, cache.hits), (3, 2));
        // An unreadable header is an error, never a stale answer.
        assert!(cache.get(&img.mem, 0xdead_0000).is_err());
        assert_eq!(cache.len(), 1);
        // What decoded last, without a read: the bad object did not replace it.
        assert_eq!(cache.last_good(addr).unwrap().qualname, "new");
        assert!(cache.last_good(0xdead_0000).is_none());
    }
}
