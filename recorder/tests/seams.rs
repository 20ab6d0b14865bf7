//! The recording core knows nothing of BPF or of `/proc`: no line of code in it (the
//! converter, its events, its source and host traits, the loop, the symbol worker) names
//! the kernel seam, the live side, aya, libc or a path under /proc or /sys. What it needs
//! of the machine it asks its `Host`; what happened, its `EventSource` tells it. A perf.data
//! importer then needs a source (and a host), nothing in here.

use std::path::{Path, PathBuf};

/// The core's files, relative to `recorder/src`: every file under these.
const CORE: &[&str] = &[
    "convert",
    "event",
    "host.rs",
    "recording.rs",
    "source.rs",
    "symbol_worker.rs",
];

/// What no line of code in the core may contain.
const FORBIDDEN: &[&str] = &[
    "/proc",
    "/sys/",
    "crate::bpf",
    "crate::live",
    "aya::",
    "libc::",
    "BpfError",
    "process_vm_readv",
];

fn files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .expect("read dir")
            .map(|e| e.expect("dir entry").path())
            .collect();
        entries.sort();
        for e in entries {
            files(&e, out);
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        out.push(path.to_path_buf());
    }
}

/// `(file, line number, line)` of every code line naming something forbidden.
fn violations(root: &Path) -> Vec<(PathBuf, usize, String)> {
    let mut found = Vec::new();
    for part in CORE {
        let mut paths = Vec::new();
        files(&root.join(part), &mut paths);
        assert!(
            !paths.is_empty(),
            "{part}: no such file under {}",
            root.display()
        );
        for path in paths {
            let text = std::fs::read_to_string(&path).expect("read source");
            for (i, line) in text.lines().enumerate() {
                if line.trim_start().starts_with("//") {
                    continue;
                }
                if FORBIDDEN.iter().any(|f| line.contains(f)) {
                    found.push((path.clone(), i + 1, line.trim().to_string()));
                }
            }
        }
    }
    found
}

#[test]
fn the_core_names_neither_bpf_nor_proc() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = violations(&root);
    assert!(
        found.is_empty(),
        "the recording core reaches past its seams:\n{}",
        found
            .iter()
            .map(|(p, n, l)| format!("{}:{n}: {l}", p.display()))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn the_check_finds_what_it_looks_for() {
    let dir = tempfile::tempdir().expect("tempdir");
    for part in CORE {
        let path = dir.path().join(part);
        if part.ends_with(".rs") {
            std::fs::write(&path, "// reads /proc in a comment: fine\n").expect("write");
        } else {
            std::fs::create_dir(&path).expect("dir");
            std::fs::write(path.join("mod.rs"), "fn f() {}\n").expect("write");
        }
    }
    assert!(violations(dir.path()).is_empty());
    std::fs::write(
        dir.path().join("convert/mod.rs"),
        "use crate::bpf::BpfError;\nfn f() { std::fs::read(\"/proc/self/maps\"); }\n",
    )
    .expect("write");
    let lines: Vec<usize> = violations(dir.path()).iter().map(|v| v.1).collect();
    assert_eq!(lines, [1, 2]);
}
