//! The leaf frames of a capture's samples as the mapping tests look at them, and the
//! check on short-lived programs: shared by `tests/mapping_e2e.rs` (this machine's kernel)
//! and `tests/kernel_matrix.rs` (what `tools/kernel-matrix` recorded in each VM).

use std::path::Path;

use hotspot_format::ModuleKind;
use hotspot_replay::Capture;

/// One sample's leaf frame as the tests look at it.
#[derive(Debug)]
pub struct Leaf {
    /// Name of the process the sample's thread belongs to.
    pub process: String,
    pub module: String,
    pub kind: ModuleKind,
    /// Function name, if the frame has one.
    pub function: Option<String>,
}

pub fn leaves(c: &Capture) -> Vec<Leaf> {
    c.samples
        .iter()
        .filter_map(|s| {
            let frame = *c.stacks.get(&s.stack)?.first()?;
            let f = c.frames.get(&frame)?;
            let m = c.modules.get(&f.module)?;
            let pid = c.threads.get(&s.tid).map_or(0, |t| t.pid);
            let process = c
                .processes
                .get(&pid)
                .map(|p| p.name.clone())
                .unwrap_or_default();
            let function = c
                .symbols
                .get(&frame)
                .and_then(|sym| c.string(sym.function))
                .map(str::to_string);
            Some(Leaf {
                process,
                module: m.path.clone(),
                kind: m.kind,
                function,
            })
        })
        .collect()
}

/// No module of the capture is JIT: every sample here is ELF code.
pub fn assert_no_jit(c: &Capture) {
    let jit: Vec<_> = c
        .modules
        .values()
        .filter(|m| m.kind == ModuleKind::Jit || m.path.starts_with("[jit:"))
        .map(|m| m.path.clone())
        .collect();
    assert!(jit.is_empty(), "ELF code put under JIT modules: {jit:?}");
}

pub fn user(l: &Leaf) -> bool {
    !l.kind.is_kernel()
}

/// A recording of `sh -c 'for i in $(seq 100); do BUSY 0.02; done'` at 999 Hz: the
/// samples of 100 processes of 20 ms each, gone before the recording ends, are named by
/// the mappings the kernel's events reported (`busy` is the fixture's path).
pub fn short_programs_are_named(c: &Capture, busy: &Path) {
    assert_no_jit(c);
    let all = leaves(c);
    let of_busy: Vec<&Leaf> = all
        .iter()
        .filter(|l| l.process == "busy" && user(l))
        .collect();
    // 100 runs of ~20 ms at 999 Hz: about 2,000.
    assert!(
        of_busy.len() >= 500,
        "{} user samples of busy in {} samples",
        of_busy.len(),
        all.len()
    );
    let named = of_busy.iter().filter(|l| l.function.is_some()).count();
    let own = of_busy
        .iter()
        .filter(|l| {
            Path::new(&l.module) == busy
                && l.function
                    .as_deref()
                    .is_some_and(|f| f.starts_with("busy_"))
        })
        .count();
    let share = |n: usize| n as f64 / of_busy.len() as f64;
    assert!(
        share(named) >= 0.95,
        "{named} of {} user samples of busy named",
        of_busy.len()
    );
    // The rest is start-up: ld.so, libc's initialisation.
    assert!(
        share(own) >= 0.80,
        "{own} of {} user samples of busy in its own functions",
        of_busy.len()
    );
}
