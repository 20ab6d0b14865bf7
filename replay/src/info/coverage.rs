//! `info`'s symbol coverage: how many samples' leaf frames have a name, overall and per
//! module, and what would name a module that has none.

use std::collections::BTreeMap;

use hotspot_format::{Module, ModuleId, ModuleKind};
use serde::Serialize;

use super::Facts;
use crate::capture::short_module;
use crate::names::{self, UNKNOWN};
use crate::sanitize::display;

/// Symbol coverage of one module.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModuleCoverage {
    pub module: String,
    pub path: String,
    pub kind: &'static str,
    pub build_id: String,
    /// Samples whose leaf frame is in this module.
    pub samples: u64,
    /// Of those, samples whose leaf frame has a function name.
    pub named: u64,
    /// Distinct frames in this module, and how many of them have a name.
    pub frames: u64,
    pub named_frames: u64,
    /// What to do when the module has no names at all.
    pub hint: Option<String>,
}

/// Share of samples whose leaf frame has a name, overall and per module.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Coverage {
    pub samples: u64,
    pub named: u64,
    /// Busiest first.
    pub modules: Vec<ModuleCoverage>,
}

fn kind_label(k: ModuleKind) -> &'static str {
    match k {
        ModuleKind::Elf => "elf",
        ModuleKind::Kernel => "kernel",
        ModuleKind::KernelModule => "kernel-module",
        ModuleKind::Vdso => "vdso",
        ModuleKind::Jit => "jit",
    }
}

/// What would give a module without any symbols its names.
pub fn hint(m: &Module) -> String {
    let name = short_module(&m.path);
    match m.kind {
        ModuleKind::Kernel | ModuleKind::KernelModule => {
            "kernel symbols were hidden when recording: record as root, or set \
             kernel.kptr_restrict=0"
                .to_string()
        }
        ModuleKind::Jit => "anonymous executable memory (JIT code) without a perf map: the \
             runtime must write /tmp/perf-PID.map (e.g. node --perf-basic-prof)"
            .to_string(),
        ModuleKind::Vdso => "the vDSO has no symbols to give".to_string(),
        ModuleKind::Elf if m.path == "[unknown]" => "addresses in no mapping the recorder \
             knew of: a corrupt frame pointer, or mapping events the kernel dropped"
            .to_string(),
        ModuleKind::Elf if m.path.ends_with(" (deleted)") => "the file was deleted or \
             replaced after it was mapped and before hotspot could read it: keep it until \
             the recording ends"
            .to_string(),
        ModuleKind::Elf => {
            let glibc = [
                "libc.so",
                "libm.so",
                "ld-linux",
                "libpthread",
                "libdl.so",
                "librt.so",
            ];
            if glibc.iter().any(|g| name.starts_with(g)) {
                "install libc6-dbg (Debian/Ubuntu) before recording".to_string()
            } else if ["/usr/", "/lib", "/bin/", "/sbin/"]
                .iter()
                .any(|p| m.path.starts_with(p))
            {
                format!(
                    "a distribution file: install the debug symbols of the package that owns \
                     it (dpkg -S {}; Debian: its -dbgsym package) before recording",
                    display(&m.path)
                )
            } else {
                "stripped: build with -g and keep the symbols, or keep its .debug file next to \
                 it or under /usr/lib/debug/.build-id"
                    .to_string()
            }
        }
    }
}

/// A real name: neither `??` nor a `MODULE+0xADDR` placeholder.
fn is_named(function: &str) -> bool {
    function != UNKNOWN && !hotspot_format::placeholder::is_placeholder(function)
}

/// Symbol coverage of the samples' leaf frames.
pub fn coverage(f: &Facts) -> Coverage {
    let c = f.capture;
    let mut per_module: BTreeMap<ModuleId, (u64, u64)> = BTreeMap::new();
    let mut named_total = 0;
    let mut scratch = Vec::new();
    for (stack, &n) in f.counts.stack_samples.iter() {
        let Some(&leaf) = c.stacks.get(stack).and_then(|fs| fs.first()) else {
            continue;
        };
        let Some(frame) = c.frames.get(&leaf) else {
            continue;
        };
        scratch.clear();
        names::expand(c, leaf, &mut scratch);
        let named = scratch.first().is_some_and(|n| is_named(&n.function));
        let e = per_module.entry(frame.module).or_default();
        e.0 += n;
        if named {
            e.1 += n;
            named_total += n;
        }
    }
    let mut frames: BTreeMap<ModuleId, (u64, u64)> = BTreeMap::new();
    for (id, frame) in &c.frames {
        scratch.clear();
        names::expand(c, *id, &mut scratch);
        let e = frames.entry(frame.module).or_default();
        e.0 += 1;
        if scratch.first().is_some_and(|n| is_named(&n.function)) {
            e.1 += 1;
        }
    }
    let markers = c.unwinding.and_then(|u| u.markers);
    let mut modules: Vec<ModuleCoverage> = c
        .modules
        .values()
        .filter(|m| frames.contains_key(&m.id) && Some(m.id) != markers)
        .map(|m| {
            let (samples, named) = per_module.get(&m.id).copied().unwrap_or_default();
            let (nframes, named_frames) = frames.get(&m.id).copied().unwrap_or_default();
            ModuleCoverage {
                module: display(&match m.kind {
                    ModuleKind::Kernel => "[kernel]".to_string(),
                    _ => short_module(&m.path),
                }),
                path: display(&m.path),
                kind: kind_label(m.kind),
                build_id: m.build_id.iter().map(|b| format!("{b:02x}")).collect(),
                samples,
                named,
                frames: nframes,
                named_frames,
                hint: (named_frames == 0 && m.kind != ModuleKind::Vdso).then(|| hint(m)),
            }
        })
        .collect();
    modules.sort_by(|a, b| {
        b.samples
            .cmp(&a.samples)
            .then_with(|| a.module.cmp(&b.module))
            .then_with(|| a.path.cmp(&b.path))
    });
    Coverage {
        samples: f.counts.samples,
        named: named_total,
        modules,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glibc_without_symbols_suggests_libc6_dbg() {
        let m = Module {
            id: 1,
            kind: ModuleKind::Elf,
            path: "/usr/lib/x86_64-linux-gnu/libc.so.6".into(),
            build_id: vec![1, 2],
        };
        assert!(hint(&m).contains("libc6-dbg"));
        let m = Module {
            path: "/usr/lib/x86_64-linux-gnu/libz.so.1".into(),
            ..m
        };
        assert!(hint(&m).contains("dbgsym"));
        let m = Module {
            path: "/opt/app/server".into(),
            ..m
        };
        assert!(hint(&m).contains("-g"));
    }
}
