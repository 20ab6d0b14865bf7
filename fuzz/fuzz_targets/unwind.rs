//! The unwinder on arbitrary bytes: an ELF file, a debug file, registers and a stack copy
//! (the layout and the checks are in `testkit/src/unwind/fuzz_check.rs`). The recorder runs
//! as root over the target's binaries and stack bytes: nothing here may panic, hang or
//! allocate beyond the caps of `hotspot_unwind::limits`.
#![no_main]

use libfuzzer_sys::fuzz_target;

use hotspot_testkit::unwind::fuzz_check;

fuzz_target!(|input: &[u8]| {
    fuzz_check::check(input);
});
