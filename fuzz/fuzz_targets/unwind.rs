//! The unwinder on arbitrary bytes: an ELF file, a debug file, registers and a stack copy
//! (the layout and the checks are in `unwind/tests/fuzz_check/mod.rs`). The recorder runs
//! as root over the target's binaries and stack bytes: nothing here may panic, hang or
//! allocate beyond the caps of `hotspot_unwind::limits`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../unwind/tests/fuzz_check/mod.rs"]
mod fuzz_check;

fuzz_target!(|input: &[u8]| {
    fuzz_check::check(input);
});
