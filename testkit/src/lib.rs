//! hotspot's shared test kit, a dev-dependency of the other crates (never published):
//!
//! - [`rng`]: the one seeded random generator of tests, benchmarks and examples;
//! - [`synthetic`]: the synthetic profiling stream and the committed synthetic fixture;
//! - [`hostile`]: the hostile-capture corpus;
//! - `unwind` (feature `unwind`): the unwinder's fuzz check and ELF/CFI crafting; with
//!   `unwind-dumps`, real stacks dumped from C programs and framehop as the oracle;
//! - `python` (feature `python`): the CPython decoders' fuzz checks, and fake interpreters
//!   built with gcc;
//! - `e2e` (feature `e2e`): running the `hotspot` binary from end-to-end tests.
//!
//! It depends on the library crates as a normal dependency while they depend on it as a
//! dev-dependency only: cargo builds each library once and links its integration tests,
//! benchmarks and examples against the same copy the kit uses.

// Test code: a failed unwrap is a test failure with a backtrace.
#![allow(clippy::unwrap_used)]

#[cfg(feature = "e2e")]
pub mod e2e;
pub mod hostile;
#[cfg(feature = "python")]
pub mod python;
pub mod rng;
pub mod synthetic;
#[cfg(feature = "unwind")]
pub mod unwind;

pub use rng::Rng;

use std::path::PathBuf;
use std::sync::OnceLock;

/// Scratch space under `target/` (what cargo calls `CARGO_TARGET_TMPDIR`, which it sets
/// only when compiling integration tests and benchmarks, not this library): found from the
/// running test binary, `target/<profile>/{deps,examples}/NAME`, as `target/tmp`.
pub fn target_tmp() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        if let Some(dir) = std::env::var_os("CARGO_TARGET_TMPDIR") {
            return PathBuf::from(dir);
        }
        let exe = std::env::current_exe().expect("the running binary's path");
        let target = exe
            .ancestors()
            .nth(3)
            .expect("the binary is under target/<profile>/deps")
            .to_path_buf();
        let dir = target.join("tmp");
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
        dir
    })
    .clone()
}
