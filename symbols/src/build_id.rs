//! Reading GNU build-ids: from ELF files (via `object`, which checks the note's name is
//! "GNU", unlike blazesym's reader) and from raw note blobs such as `/sys/kernel/notes`.

use std::fs::File;
use std::path::Path;

use object::{Object, ReadCache};

const NT_GNU_BUILD_ID: u32 = 3;

/// The GNU build-id of the ELF file at `path`, if it has one. Reads only the headers and
/// note sections, not the whole file (libraries can be hundreds of megabytes).
pub fn of_elf_file(path: &Path) -> Option<Vec<u8>> {
    let file = File::open(path).ok()?;
    let cache = ReadCache::new(file);
    let obj = object::File::parse(&cache).ok()?;
    let id = obj.build_id().ok()??;
    plausible(id).then(|| id.to_vec())
}

/// A `.gnu_debuglink` name as a file name: a name, not a path, so that a link cannot point
/// outside the directories searched.
pub fn link_name(name: &[u8]) -> Option<std::ffi::OsString> {
    use std::os::unix::ffi::OsStrExt;
    (!name.is_empty() && !name.contains(&b'/'))
        .then(|| std::ffi::OsStr::from_bytes(name).to_os_string())
}

/// The GNU build-id in a blob of ELF notes (the format of `/sys/kernel/notes`).
pub fn of_notes(blob: &[u8]) -> Option<Vec<u8>> {
    let mut rest = blob;
    while rest.len() >= 12 {
        let word = |i: usize| u32::from_ne_bytes([rest[i], rest[i + 1], rest[i + 2], rest[i + 3]]);
        let (namesz, descsz, kind) = (word(0) as usize, word(4) as usize, word(8));
        let name_end = 12usize.checked_add(namesz)?;
        let desc_start = align4(name_end)?;
        let desc_end = desc_start.checked_add(descsz)?;
        if desc_end > rest.len() {
            return None;
        }
        let name = &rest[12..name_end];
        if kind == NT_GNU_BUILD_ID && name == b"GNU\0" {
            let id = &rest[desc_start..desc_end];
            return plausible(id).then(|| id.to_vec());
        }
        rest = &rest[align4(desc_end)?.min(rest.len())..];
    }
    None
}

fn align4(n: usize) -> Option<usize> {
    Some(n.checked_add(3)? & !3)
}

/// Build-ids are SHA-1 (20 bytes) in practice; other lengths (md5, uuid: 16) exist.
/// Anything outside 8..=64 bytes is not a build-id we trust.
pub fn plausible(id: &[u8]) -> bool {
    (8..=64).contains(&id.len())
}

/// Lower-case hex of a build-id.
pub fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(name: &[u8], kind: u32, desc: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&(name.len() as u32).to_ne_bytes());
        v.extend_from_slice(&(desc.len() as u32).to_ne_bytes());
        v.extend_from_slice(&kind.to_ne_bytes());
        v.extend_from_slice(name);
        while v.len() % 4 != 0 {
            v.push(0);
        }
        v.extend_from_slice(desc);
        while v.len() % 4 != 0 {
            v.push(0);
        }
        v
    }

    #[test]
    fn finds_the_gnu_note_and_ignores_others_of_type_3() {
        let mut blob = note(b"stapsdt\0", 3, &[9; 56]);
        blob.extend(note(b"Xen\0", 1, &[1, 2, 3]));
        blob.extend(note(b"GNU\0", 3, &[0xab; 20]));
        assert_eq!(of_notes(&blob), Some(vec![0xab; 20]));
    }

    #[test]
    fn truncated_or_garbage_blobs_give_none() {
        let blob = note(b"GNU\0", 3, &[0xab; 20]);
        for cut in 0..blob.len() {
            assert_eq!(of_notes(&blob[..cut]), None, "cut at {cut}");
        }
        assert_eq!(of_notes(&[0xff; 64]), None);
    }

    #[test]
    fn reads_the_build_id_of_a_real_binary() {
        // The test binary itself is linked by rustc's default linker settings, which on
        // Debian include a GNU build-id.
        let exe = std::env::current_exe().expect("current exe");
        if let Some(id) = of_elf_file(&exe) {
            assert!(id.len() >= 8);
        }
        assert_eq!(of_elf_file(Path::new("/nonexistent/file")), None);
    }
}
