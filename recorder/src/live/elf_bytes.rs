//! An ELF file's bytes without its DWARF: recognising an interpreter (or libc's
//! thread-specific data) takes the headers, the allocated sections and the symbol tables,
//! never `.debug_*`. pyenv's libpython3.12.so is 30 MB, 22 MB of it debug sections, and
//! it was read whole when a process was first seen, in every segment of a flight
//! recording and every short recording of a Python program.

use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;

use hotspot_python::elf::debug_ranges;
use object::ReadCache;

/// The `len` bytes of `file` (its length), the contents of its non-allocated `.debug*`
/// and `.zdebug*` sections ([`debug_ranges`], the section table read through a
/// [`ReadCache`]) left as zeros: never read, and the zeroed pages of the buffer never
/// touched. A file that is not a 64-bit ELF, or whose section table does not parse,
/// is read whole. `None` when a read fails (the file shrank, an I/O error).
pub fn read_without_debug(file: &File, len: u64) -> Option<Vec<u8>> {
    let mut bytes = vec![0u8; usize::try_from(len).ok()?];
    let mut at = 0;
    for skip in debug_ranges(&ReadCache::new(file), len) {
        read_range(file, &mut bytes, at..skip.start)?;
        at = skip.end;
    }
    read_range(file, &mut bytes, at..len)?;
    Some(bytes)
}

fn read_range(file: &File, bytes: &mut [u8], r: Range<u64>) -> Option<()> {
    if r.start >= r.end {
        return Some(());
    }
    let (start, end) = (usize::try_from(r.start).ok()?, usize::try_from(r.end).ok()?);
    file.read_exact_at(bytes.get_mut(start..end)?, r.start).ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// This test binary carries DWARF (a debug build's test): its debug sections come
    /// back as zeros and every other byte as it is in the file.
    #[test]
    fn debug_sections_are_zeros_and_the_rest_is_the_file() {
        let path = std::env::current_exe().unwrap();
        let whole = std::fs::read(&path).unwrap();
        let file = File::open(&path).unwrap();
        let skipped = debug_ranges(&*whole, whole.len() as u64);
        let debug: u64 = skipped.iter().map(|r| r.end - r.start).sum();
        assert!(
            debug > whole.len() as u64 / 10,
            "{} has {debug} bytes of debug sections of {}: build the tests with debug info",
            path.display(),
            whole.len()
        );
        let read = read_without_debug(&file, whole.len() as u64).unwrap();
        assert_eq!(read.len(), whole.len());
        let mut at = 0usize;
        for r in &skipped {
            let (s, e) = (r.start as usize, r.end as usize);
            assert_eq!(read[at..s], whole[at..s], "bytes {at}..{s} differ");
            assert!(read[s..e].iter().all(|&b| b == 0), "{s}..{e} was read");
            at = e;
        }
        assert_eq!(read[at..], whole[at..]);
        // What recognition reads is all there: the same symbol tables and sections.
        let a = object::File::parse(&*whole).unwrap();
        let b = object::File::parse(&*read).unwrap();
        use object::{Object, ObjectSection, ObjectSymbol};
        let names = |f: &object::File| -> Vec<String> {
            f.symbols()
                .take(2000)
                .map(|s| s.name().unwrap_or("").to_string())
                .collect()
        };
        assert_eq!(names(&a), names(&b));
        let text = |f: &object::File| f.section_by_name(".text").unwrap().data().unwrap().to_vec();
        assert_eq!(text(&a), text(&b));
    }

    /// Not an ELF file: read whole.
    #[test]
    fn other_files_are_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let bytes: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&p, &bytes).unwrap();
        let got = read_without_debug(&File::open(&p).unwrap(), bytes.len() as u64).unwrap();
        assert_eq!(got, bytes);
        // A length past the file's end: the read fails rather than inventing zeros.
        assert!(read_without_debug(&File::open(&p).unwrap(), bytes.len() as u64 + 1).is_none());
    }
}
