//! Shared helpers for hotspot's end-to-end tests: building the C fixtures in `fixtures/`
//! (programs with known profiles, see `fixtures/README.md`) and inspecting the binaries.
//!
//! Use from an integration test with `mod common;`; running the binary (`hotspot()`,
//! `run_ok`, one recording at a time) is in `hotspot_testkit::e2e`.
//!
//! Builds are cached under `$CARGO_TARGET_TMPDIR/fixtures/<name>-<variant>-<hash>/`, where
//! the hash covers the fixture source, every `fixtures/*.h` and the flags, so an edit
//! rebuilds. Each build directory holds the binary as plain `<name>` (so the process comm
//! is the fixture name, e.g. `split7030`). A directory is built under a temporary name and
//! renamed into place, so concurrent test threads and test processes never see a half-built
//! fixture; within one process each variant is built at most once.
//!
//! Needs `gcc` and binutils (`objcopy`, `readelf`) on `PATH`.
//!
//! # Stripped binary with a separate debug file
//!
//! [`stripped_fixture`] does, on a normally built fixture `a`:
//!
//! ```text
//! objcopy --only-keep-debug a a.debug
//! objcopy --strip-all --add-gnu-debuglink=a.debug a
//! ```
//!
//! `--strip-all` drops `.symtab` and all `.debug_*` sections but keeps the allocated
//! `.note.gnu.build-id` note, so `readelf -n` shows the same `Build ID` for the original,
//! the stripped binary and `a.debug` (checked by `tests/fixtures_build.rs`). `nm a` then
//! says "no symbols"; `a.debug` has the full symbol table and DWARF. The debug file sits
//! next to the binary (where a `.gnu_debuglink` lookup finds it) and also, as a copy, in a
//! build-id tree `debugroot/.build-id/<xx>/<rest>.debug` (see
//! [`stripped_fixture_debug_root`]). To test "no debug info available", copy the stripped
//! binary to a directory of its own.

#![allow(dead_code)]

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// The flags every fixture is built with. `-pthread` is harmless where unused.
pub const FIXTURE_CFLAGS: &[&str] = &[
    "-O2",
    "-g",
    "-fno-omit-frame-pointer",
    "-fno-optimize-sibling-calls",
    "-Wall",
    "-Wextra",
    "-pthread",
    "-Wl,--build-id=sha1",
];

/// Every fixture in `fixtures/` (without `.c`).
pub const ALL_FIXTURES: &[&str] = &[
    "split7030",
    "phased",
    "threads",
    "recurse",
    "forker",
    "syscalls",
    "early",
    "busy",
    "inlined",
    "memwork",
    "jit",
    "throughput",
    "execer",
    "churn",
    "renamer",
    "frameless",
    "sighandler",
    "dlopener",
    "embedder",
    "unlinker",
    "offcpu",
    "contend",
    "pingpong",
    "deploy",
    "vlib",
];

/// The flags of a plain optimised build, as distributions and release builds compile:
/// no frame pointers (gcc's default at -O2), sibling calls allowed.
pub const PLAIN_CFLAGS: &[&str] = &[
    "-O2",
    "-g",
    "-Wall",
    "-Wextra",
    "-pthread",
    "-Wl,--build-id=sha1",
];

/// `fixtures/` in the workspace.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// Where built fixtures are cached.
pub fn fixture_cache_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("fixtures")
}

/// Builds `fixtures/<name>.c` with [`FIXTURE_CFLAGS`] (once; cached) and returns the
/// binary's path. Panics with gcc's stderr if it does not compile.
pub fn fixture(name: &str) -> PathBuf {
    fixture_with(name, &[], "default")
}

/// [`fixture`] as a string, for argument lists.
pub fn fixture_arg(name: &str) -> String {
    fixture(name).to_string_lossy().into_owned()
}

/// `fixtures/<name>.c` built with [`PLAIN_CFLAGS`] only: no frame pointers except where
/// a function forces one (the leaves' `FX_FRAME()`), so only call-frame information can
/// unwind it. Cached like [`fixture`], in a directory of its own.
pub fn plain_fixture(name: &str) -> PathBuf {
    let key = BuildKey::new(name, "plain", PLAIN_CFLAGS, "compile");
    cached(&key, |tmp| {
        compile(name, PLAIN_CFLAGS, &tmp.join(name));
    })
    .join(name)
}

/// Like [`fixture`], with `extra_flags` appended after [`FIXTURE_CFLAGS`] (so they can
/// override them, e.g. `-fomit-frame-pointer` or `-O0`), cached separately under
/// `variant` (letters, digits, `-` and `_` only).
pub fn fixture_with(name: &str, extra_flags: &[&str], variant: &str) -> PathBuf {
    let flags: Vec<&str> = FIXTURE_CFLAGS.iter().chain(extra_flags).copied().collect();
    let key = BuildKey::new(name, variant, &flags, "compile");
    cached(&key, |tmp| {
        compile(name, &flags, &tmp.join(name));
    })
    .join(name)
}

/// [`fixture`] built normally, then split into a stripped binary (no `.symtab`, no
/// DWARF, `.gnu_debuglink` to the debug file, GNU build-id kept) and its separate debug
/// file `<name>.debug` in the same directory. Returns `(stripped binary, debug file)`.
pub fn stripped_fixture(name: &str) -> (PathBuf, PathBuf) {
    let dir = stripped_dir(name);
    (dir.join(name), dir.join(format!("{name}.debug")))
}

/// A directory laid out like `/usr/lib/debug`, holding the debug file of
/// [`stripped_fixture`]`(name)` as `.build-id/<first 2 hex>/<rest of hex>.debug`.
pub fn stripped_fixture_debug_root(name: &str) -> PathBuf {
    stripped_dir(name).join("debugroot")
}

fn stripped_dir(name: &str) -> PathBuf {
    let flags: Vec<&str> = FIXTURE_CFLAGS.to_vec();
    let key = BuildKey::new(name, "stripped", &flags, "strip-v1");
    cached(&key, |tmp| {
        let bin = tmp.join(name);
        let debug_name = format!("{name}.debug");
        let debug = tmp.join(&debug_name);
        fs::copy(fixture(name), &bin)
            .unwrap_or_else(|e| panic!("copying fixture {name} into {}: {e}", tmp.display()));
        run_tool(
            Command::new("objcopy")
                .arg("--only-keep-debug")
                .arg(&bin)
                .arg(&debug),
        );
        // Run in the directory so the debuglink records the bare file name.
        run_tool(
            Command::new("objcopy")
                .current_dir(tmp)
                .arg("--strip-all")
                .arg(format!("--add-gnu-debuglink={debug_name}"))
                .arg(name),
        );
        let id =
            build_id(&debug).unwrap_or_else(|| panic!("{} has no GNU build-id", debug.display()));
        let (head, rest) = id.split_at(2);
        let tree = tmp.join("debugroot").join(".build-id").join(head);
        fs::create_dir_all(&tree).unwrap_or_else(|e| panic!("creating {}: {e}", tree.display()));
        fs::copy(&debug, tree.join(format!("{rest}.debug")))
            .unwrap_or_else(|e| panic!("copying {} into {}: {e}", debug.display(), tree.display()));
    })
}

/// The GNU build-id of an ELF file as lowercase hex (from `readelf -n`), if it has one.
pub fn build_id(path: &Path) -> Option<String> {
    let out = run_tool(Command::new("readelf").arg("-n").arg(path));
    out.lines()
        .find_map(|l| l.trim().strip_prefix("Build ID:"))
        .map(|id| id.trim().to_ascii_lowercase())
}

/// Runs a tool, panicking with its stderr unless it succeeds; returns its stdout.
pub fn run_tool(cmd: &mut Command) -> String {
    let shown = format!("{cmd:?}");
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {shown}: {e} (is it installed?)"));
    if !out.status.success() {
        panic!(
            "{shown} failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn compile(name: &str, flags: &[&str], out: &Path) {
    let src = fixtures_dir().join(format!("{name}.c"));
    let res = Command::new("gcc")
        .args(flags)
        .arg("-o")
        .arg(out)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("cannot run gcc to build fixture {name}: {e}"));
    if !res.status.success() {
        panic!(
            "gcc failed to build fixture {name} from {} with {flags:?} ({}):\n{}",
            src.display(),
            res.status,
            String::from_utf8_lossy(&res.stderr)
        );
    }
}

/// Identifies one cached build: what goes into its directory name.
struct BuildKey {
    name: String,
    variant: String,
    hash: u64,
}

impl BuildKey {
    fn new(name: &str, variant: &str, flags: &[&str], recipe: &str) -> Self {
        let safe = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        };
        assert!(safe(name), "bad fixture name {name:?}");
        assert!(safe(variant), "bad fixture variant {variant:?}");
        let dir = fixtures_dir();
        let src = dir.join(format!("{name}.c"));
        let mut h = Fnv64::new();
        h.write(recipe.as_bytes());
        h.write(&[0]);
        h.write(&fs::read(&src).unwrap_or_else(|e| panic!("no fixture {}: {e}", src.display())));
        let mut headers: Vec<PathBuf> = fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "h"))
            .collect();
        headers.sort();
        for header in headers {
            h.write(header.file_name().map_or(&[][..], |n| n.as_encoded_bytes()));
            h.write(&[0]);
            h.write(
                &fs::read(&header).unwrap_or_else(|e| panic!("reading {}: {e}", header.display())),
            );
        }
        for flag in flags {
            h.write(&[0]);
            h.write(flag.as_bytes());
        }
        BuildKey {
            name: name.to_owned(),
            variant: variant.to_owned(),
            hash: h.finish(),
        }
    }

    fn dir_name(&self) -> String {
        format!("{}-{}-{:016x}", self.name, self.variant, self.hash)
    }
}

/// Returns the cached build directory for `key`, running `build` into a fresh temporary
/// directory and renaming it into place if it does not exist yet.
fn cached(key: &BuildKey, build: impl FnOnce(&Path)) -> PathBuf {
    static CELLS: OnceLock<Mutex<HashMap<String, Arc<OnceLock<PathBuf>>>>> = OnceLock::new();
    let dir_name = key.dir_name();
    let cell = {
        let mut cells = CELLS
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        Arc::clone(cells.entry(dir_name.clone()).or_default())
    };
    cell.get_or_init(|| {
        let root = fixture_cache_dir();
        let dest = root.join(&dir_name);
        if dest.is_dir() {
            return dest;
        }
        fs::create_dir_all(&root).unwrap_or_else(|e| panic!("creating {}: {e}", root.display()));
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let tmp = root.join(format!(
            ".{dir_name}.tmp-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir(&tmp).unwrap_or_else(|e| panic!("creating {}: {e}", tmp.display()));
        let cleanup = RemoveOnDrop(tmp.clone());
        build(&tmp);
        // Renaming a directory onto an existing non-empty one fails: if another process
        // got there first, keep its build and drop ours.
        if fs::rename(&tmp, &dest).is_err() && !dest.is_dir() {
            panic!("cannot move {} to {}", tmp.display(), dest.display());
        }
        drop(cleanup);
        dest
    })
    .clone()
}

/// Removes a temporary build directory when dropped (after a successful rename there is
/// nothing left to remove).
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// FNV-1a, 64-bit: a hash that is stable across Rust versions, for cache names.
struct Fnv64(u64);

impl Fnv64 {
    fn new() -> Self {
        Fnv64(0xcbf2_9ce4_8422_2325)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}
