//! The CPython decoders on arbitrary target memory (layout in
//! `testkit/src/python/fuzz_check.rs`, shared with the regression test): code objects,
//! strings, line tables in every format, the code cache, the thread-state lookup and the
//! frame walk. The recorder runs them as root on a process that may be crafted to look
//! like CPython: nothing may panic, hang or allocate past `hotspot_python::limits`.
#![no_main]

use libfuzzer_sys::fuzz_target;

use hotspot_testkit::python::fuzz_check;

fuzz_target!(|input: &[u8]| {
    fuzz_check::check_memory(input);
});
