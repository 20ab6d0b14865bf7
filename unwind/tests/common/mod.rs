//! The unwinder's test helpers (real stacks dumped from C programs, ELF/CFI crafting,
//! framehop as the oracle) live in `hotspot-testkit`, shared with the benchmark and the
//! fuzz target; the tests name them `common::…`.

pub use hotspot_testkit::unwind::*;
