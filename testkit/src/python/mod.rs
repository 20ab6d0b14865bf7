//! Test helpers for the CPython knowledge (`hotspot-python`): [`fuzz_check`] (what its
//! fuzz targets check, replayed by its regression test) and [`craft`] (fake interpreters
//! built with gcc).

pub mod craft;
pub mod fuzz_check;
