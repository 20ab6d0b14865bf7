//! glibc's thread-specific data layout as read from the installed `libc.so.6` (its
//! `_thread_db_*` descriptors and `pthread_getspecific`'s code), against glibc's own
//! DWARF (Debian's libc6-dbg, which `.ci/run` installs): `struct pthread`'s `specific`
//! and `specific_1stblock`, `struct pthread_key_data`. The live test reads real threads'
//! states through it.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::PathBuf;

use hotspot_python::TsdLayout;
use hotspot_python::glibc_tsd::TsdError;
use object::Object;

const LIBC: &str = "/lib/x86_64-linux-gnu/libc.so.6";

fn debug_file(elf: &[u8]) -> PathBuf {
    let file = object::File::parse(elf).unwrap();
    let id = file.build_id().unwrap().expect("libc has a build-id");
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    let path = PathBuf::from(format!(
        "/usr/lib/debug/.build-id/{}/{}.debug",
        &hex[..2],
        &hex[2..]
    ));
    assert!(
        path.exists(),
        "{}: no debug file for libc (install libc6-dbg, as .ci/run does)",
        path.display()
    );
    path
}

#[test]
fn the_layout_is_glibcs() {
    let libc = std::fs::read(LIBC).unwrap();
    let tsd = TsdLayout::from_elf(&libc).unwrap();
    let d = common::dwarf::Dwarf::load(&debug_file(&libc));
    assert_eq!(u64::from(tsd.specific), d.offset_of("pthread", "specific"));
    assert_eq!(
        tsd.first_block.map(u64::from),
        Some(d.offset_of("pthread", "specific_1stblock")),
        "from pthread_getspecific's code"
    );
    assert_eq!(u64::from(tsd.key_data_size), d.size_of("pthread_key_data"));
    assert_eq!(
        u64::from(tsd.key_data_data),
        d.offset_of("pthread_key_data", "data")
    );
    // `specific` follows the first block, of `per_block` entries.
    assert_eq!(
        d.offset_of("pthread", "specific") - d.offset_of("pthread", "specific_1stblock"),
        u64::from(tsd.per_block) * u64::from(tsd.key_data_size)
    );
    assert_eq!(
        u32::from(tsd.per_block) * u32::from(tsd.blocks),
        1024,
        "PTHREAD_KEYS_MAX"
    );
    let b = tsd.to_bytes();
    assert_eq!(u16::from_le_bytes([b[0], b[1]]), tsd.specific);
    assert_eq!((b[2], b[3]), (tsd.per_block, tsd.key_data_size));
    assert_eq!(u16::from_le_bytes([b[4], b[5]]), tsd.first_block.unwrap());
    assert_eq!((b[6], b[7]), (tsd.key_data_data, tsd.blocks));
    println!("{LIBC}: {tsd:?}");
}

#[test]
fn other_libraries_are_no_glibc() {
    let py = common::debian();
    let err = TsdLayout::from_elf(&std::fs::read(&py.elf).unwrap()).unwrap_err();
    assert!(matches!(err, TsdError::NoDescriptor(_)), "{err}");
    assert!(matches!(
        TsdLayout::from_elf(b"not an ELF"),
        Err(TsdError::Elf(_))
    ));
}
