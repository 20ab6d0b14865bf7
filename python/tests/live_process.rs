//! The whole path from outside a running interpreter, as the recorder will take it but
//! through `/proc/PID/mem` (a child of the test, so no root needed): under every installed
//! interpreter, `scripts/live.py` blocks four threads (a sleep under Latin-1, UCS-2 and
//! UCS-4 names, a pipe read in a function called from C, an Event wait, the main thread's
//! sleep) and tells what it sees of itself. From the ELF file, the process's mappings and
//! its glibc alone, the test must find for every thread, holding the GIL or not: the
//! thread state through the pthread key (both ways glibc keeps key values), the same
//! state the thread reported; the thread's frames by the walk description, code object
//! for code object; each code object's qualified name, file and first line; each frame's
//! line from its `instr`; entry frames where calls came from C.

#![allow(clippy::unwrap_used)]

mod common;

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use hotspot_python::walk::ENTRY_EVERY_FRAME;
use hotspot_python::{
    CodeCache, Detection, Interpreter, MemoryReader, ReadError, TsdLayout, WalkEnd, detect,
};

/// The target's memory through `/proc/PID/mem`.
struct ProcMem(File);

impl MemoryReader for ProcMem {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        let err = ReadError {
            addr,
            len: buf.len(),
        };
        match self.0.read_at(buf, addr) {
            Ok(n) if n == buf.len() => Ok(()),
            _ => Err(err),
        }
    }
}

#[derive(serde::Deserialize, Debug)]
struct Frame {
    code: u64,
    qualname: String,
    filename: String,
    first: u32,
    line: u32,
    from_c: Option<bool>,
}

#[derive(serde::Deserialize, Debug)]
struct Thread {
    name: String,
    fs_base: u64,
    tstate: u64,
    ident: u64,
    stack: Vec<Frame>,
}

/// Kills the child however the test ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The load bias of `elf` in process `pid`: where its offset-0 mapping starts, less the
/// page of its first loaded segment's address.
fn load_bias(pid: u32, elf: &Path) -> (u64, String) {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    let canon = std::fs::canonicalize(elf).unwrap();
    let mut libc = None;
    let mut start = None;
    for line in maps.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(range), Some(offset), Some(path)) = (f.first(), f.get(2), f.get(5)) else {
            continue;
        };
        if path.ends_with("/libc.so.6") {
            libc = Some(path.to_string());
        }
        if Path::new(path) == canon && u64::from_str_radix(offset, 16).unwrap() == 0 {
            let s = u64::from_str_radix(range.split('-').next().unwrap(), 16).unwrap();
            start.get_or_insert(s);
        }
    }
    let data = std::fs::read(elf).unwrap();
    let file = object::File::parse(&*data).unwrap();
    use object::{Object, ObjectSegment};
    let first = file.segments().map(|s| s.address()).min().unwrap() & !0xfff;
    (
        start.expect("the ELF is mapped") - first,
        libc.expect("glibc is mapped"),
    )
}

fn check(py: &common::Python) {
    let data = std::fs::read(&py.elf).unwrap();
    let Detection::Supported(interp) = detect(&data, Some(&py.elf.to_string_lossy())).unwrap()
    else {
        panic!("{}: not supported", py.label);
    };
    let interp: Interpreter = *interp;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/live.py");
    let mut child = Killed(
        Command::new(&py.exe)
            .arg(script)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    let pid = child.0.id();
    // The script's lines, read on a thread so that a hung script fails the test in time.
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.0.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut threads: Vec<Thread> = Vec::new();
    let mut runtime_seen = None;
    while let Ok(line) = rx.recv_timeout(std::time::Duration::from_secs(30)) {
        let line = line.unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        match v["kind"].as_str() {
            Some("thread") => threads.push(serde_json::from_value(v).unwrap()),
            Some("ready") => {
                runtime_seen = v["runtime"].as_u64();
                break;
            }
            _ => panic!("{}: {line}", py.label),
        }
    }
    let runtime_seen =
        runtime_seen.unwrap_or_else(|| panic!("{}: the script died or hung", py.label));
    assert_eq!(threads.len(), 4, "{}", py.label);

    let (bias, libc) = load_bias(pid, &py.elf);
    let runtime = interp.runtime.address + bias;
    assert_eq!(runtime, runtime_seen, "{}: _PyRuntime rebased", py.label);
    let tsd = TsdLayout::from_elf(&std::fs::read(&libc).unwrap()).unwrap();
    assert!(
        tsd.first_block.is_some(),
        "{}: glibc's first key block",
        py.label
    );
    let mem = ProcMem(File::open(format!("/proc/{pid}/mem")).unwrap());
    let walk = interp.walk();
    let mut cache = CodeCache::new(interp.layout, interp.type_addresses(bias));

    for t in &threads {
        let ctx = format!("{} thread {}", py.label, t.name);
        // The thread state, through the key, either way glibc keeps it.
        assert_eq!(
            t.ident, t.fs_base,
            "{ctx}: pthread_self() is the thread pointer"
        );
        let state = walk.thread_state(&mem, &tsd, runtime, t.fs_base).unwrap();
        assert_eq!(state, Some(t.tstate), "{ctx}: first-block way");
        let state2 = walk
            .thread_state(&mem, &tsd.without_first_block(), runtime, t.fs_base)
            .unwrap();
        assert_eq!(state2, Some(t.tstate), "{ctx}: two-level way");
        assert!(
            walk.state_is_threads(&mem, t.tstate, t.fs_base).unwrap(),
            "{ctx}: thread_id"
        );
        assert!(
            !walk
                .state_is_threads(&mem, t.tstate, t.fs_base + 4096)
                .unwrap(),
            "{ctx}: another thread's FS base fails the check"
        );

        // The frames.
        let top = walk.current_frame(&mem, t.tstate).unwrap();
        let w = walk.walk(&mem, top, 128);
        assert_eq!(w.end, WalkEnd::Bottom, "{ctx}");
        let codes: Vec<u64> = w.frames.iter().map(|f| f.code).collect();
        let expected: Vec<u64> = t.stack.iter().map(|f| f.code).collect();
        assert_eq!(codes, expected, "{ctx}: code objects, newest first");
        let capped = walk.walk(&mem, top, 2);
        assert_eq!(
            (capped.frames.len(), capped.end),
            (2, WalkEnd::Cap),
            "{ctx}"
        );

        for (f, want) in w.frames.iter().zip(&t.stack) {
            let code = cache
                .get(&mem, f.code)
                .unwrap_or_else(|e| panic!("{ctx}: {e}"));
            let fctx = format!("{ctx}: {}", want.qualname);
            assert_eq!(code.qualname, want.qualname, "{fctx}");
            assert_eq!(code.filename, want.filename, "{fctx}");
            assert_eq!(code.first_line, want.first, "{fctx}");
            assert_eq!(
                code.line_at(f.instr),
                Some(want.line),
                "{fctx}: line of instr {:#x}",
                f.instr
            );
            if walk.entry_mode == ENTRY_EVERY_FRAME {
                assert!(f.entry, "{fctx}: every frame is an entry before 3.11");
            } else if let Some(from_c) = want.from_c {
                assert_eq!(f.entry, from_c, "{fctx}: entry frame");
            }
        }
        println!(
            "{ctx}: state {:#x} through key and TLS, {} frames (* entry): {}",
            t.tstate,
            w.frames.len(),
            t.stack
                .iter()
                .zip(&w.frames)
                .map(|(f, r)| format!(
                    "{}:{}{}",
                    f.qualname,
                    f.line,
                    if r.entry { "*" } else { "" }
                ))
                .collect::<Vec<_>>()
                .join(" < ")
        );
    }
    // Every code object again: answered from the cache, each after its stamp matched.
    let decodes = cache.decodes;
    for t in &threads {
        for f in &t.stack {
            cache.get(&mem, f.code).unwrap();
        }
    }
    assert_eq!(
        cache.decodes, decodes,
        "{}: nothing decoded twice",
        py.label
    );
}

#[test]
fn a_live_interpreter_read_from_outside() {
    for py in common::supported() {
        check(&py);
    }
}
