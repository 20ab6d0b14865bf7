//! hotspot's symbolisation, one library for both places frames are named: the recorder
//! (names resolved on the recording machine while it records) and `--symbols DIR` (names
//! resolved again on replay from files the user points at). Both go through the same
//! rules, so a frame gets the same name either way:
//!
//! - [`build_id`]: reading GNU build-ids and the plausibility check every id passes
//!   before it is trusted to pick a file;
//! - [`segments`]: the one rule from a file offset (what a capture stores) to an ELF
//!   virtual address (what symbol and line tables use);
//! - [`debug_file`]: where a module's separate debug file is (by build-id under a debug
//!   directory, by `.gnu_debuglink`), and [`symbol_dirs::SymbolDirs`], the index of the
//!   files under `--symbols` directories;
//! - [`module_file`]: the module cache, each ELF file opened once for its build-id,
//!   debug link, segments, debug file and call-frame tables (the latter for the
//!   unwinder), under a memory budget;
//! - [`symbolizer`]: naming a module's frames, by blazesym's DWARF reader, or for
//!   compressed debug files (distribution debug packages) by symbol table plus
//!   [`debug_lines`], the fast path; and the placeholder names of unnamed code;
//! - [`qualified`]: a function's whole name from its symbol where DWARF has only its
//!   last part (line tables only);
//! - [`perf_map`]: JIT symbol maps.
//!
//! It takes paths, files and offsets: no BPF and no process tracking. The recorder turns
//! a process's mappings into [`ModuleFile`]s; replay turns a capture's modules into them.

pub mod build_id;
pub mod debug_file;
pub mod debug_lines;
pub mod error;
pub mod module_file;
pub mod perf_map;
pub mod qualified;
pub mod segments;
pub mod symbol_dirs;
pub mod symbolizer;

pub use error::SymbolsError;
pub use module_file::{FileKey, ModuleFile, ModuleFiles};
pub use symbol_dirs::SymbolDirs;
pub use symbolizer::{Loc, Named, Plan, Symbolizer};
