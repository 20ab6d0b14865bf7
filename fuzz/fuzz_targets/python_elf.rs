//! CPython detection on arbitrary ELF files (checks in `testkit/src/python/fuzz_check.rs`):
//! symbols, `Py_Version`, `_Py_DebugOffsets`, the key's offset in the code, the eval
//! loop's cold part from its jumps, opcode table and CFI, glibc's thread_db descriptors.
//! The recorder runs it as root on any file a process maps.
#![no_main]

use libfuzzer_sys::fuzz_target;

use hotspot_testkit::python::fuzz_check;

fuzz_target!(|input: &[u8]| {
    fuzz_check::check_elf(input);
});
