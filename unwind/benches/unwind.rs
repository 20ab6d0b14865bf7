//! Unwinding real stacks, ours against framehop 0.16: time per sample.
//! `cargo bench -p hotspot-unwind --bench unwind`.
//!
//! - `python3` / `rustc`: samples of Debian's python3 and of rustc taken by
//!   `tests/sampler.c` (LD_PRELOAD, every 2 ms of CPU), unwound in turn, one sample per
//!   iteration: the time is the mean per sample over that mix.
//! - `dumper`: the scenario dumps of `tests/dumper.c`, each on its own.
//! - warm: one unwinder reused (its rule cache holds the mix's addresses: a profiler's
//!   steady state); cold: the rules forgotten before each sample (`forget_rules`), so
//!   every one is compiled from the CFI (the modules are built beforehand); framehop's
//!   cold: a new cache per sample, made outside the timing.
//! - `from_elf`: building a module (the one-off cost per ELF file).

#![allow(clippy::unwrap_used, missing_docs)]

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use hotspot_testkit::unwind::oracle::Oracle;
use hotspot_testkit::unwind::{Build, Dump, PYTHON_WORK, Process, SCENARIOS, dumps, samples};
use hotspot_unwind::{ModuleUnwind, Unwinder};

/// The samples, and per distinct set of mappings (a process, as the recorder has one
/// address space per process) an address space and a framehop unwinder.
struct Mix {
    dumps: Vec<&'static Dump>,
    processes: Vec<Process>,
    oracles: Vec<Oracle>,
    process_of: Vec<usize>,
}

impl Mix {
    fn new(dumps: Vec<&'static Dump>) -> Mix {
        let mut processes = Vec::new();
        let mut keys: Vec<Vec<(u64, String)>> = Vec::new();
        let mut oracles = Vec::new();
        let mut process_of = Vec::new();
        for d in &dumps {
            let key: Vec<(u64, String)> =
                d.maps.iter().map(|m| (m.start, m.path.clone())).collect();
            let i = match keys.iter().position(|k| *k == key) {
                Some(i) => i,
                None => {
                    keys.push(key);
                    oracles.push(Oracle::new(d));
                    processes.push(Process::new(d));
                    keys.len() - 1
                }
            };
            process_of.push(i);
        }
        println!(
            "{} samples, {} distinct sets of mappings",
            dumps.len(),
            keys.len()
        );
        Mix {
            dumps,
            processes,
            oracles,
            process_of,
        }
    }

    fn bench(&mut self, c: &mut Criterion, name: &str) {
        let n = self.dumps.len();
        let mut group = c.benchmark_group(name);
        let mut out = Vec::with_capacity(1024);
        let mut unwinder = Unwinder::new();
        let mut i = 0;
        group.bench_function("ours-warm", |b| {
            b.iter(|| {
                i = (i + 1) % n;
                let d = self.dumps[i];
                black_box(unwinder.unwind(
                    d.regs,
                    &d.copy(),
                    &mut self.processes[self.process_of[i]],
                    &mut out,
                ))
            })
        });
        group.bench_function("ours-cold", |b| {
            b.iter(|| {
                i = (i + 1) % n;
                let d = self.dumps[i];
                unwinder.forget_rules();
                black_box(unwinder.unwind(
                    d.regs,
                    &d.copy(),
                    &mut self.processes[self.process_of[i]],
                    &mut out,
                ))
            })
        });
        let mut theirs = Vec::with_capacity(1024);
        group.bench_function("framehop-warm", |b| {
            b.iter(|| {
                i = (i + 1) % n;
                let d = self.dumps[i];
                black_box(self.oracles[self.process_of[i]].unwind(d, &mut theirs))
            })
        });
        group.bench_function("framehop-cold", |b| {
            b.iter_batched(
                || {
                    i = (i + 1) % n;
                    (i, framehop::x86_64::CacheX86_64::new())
                },
                |(i, fresh)| {
                    let d = self.dumps[i];
                    let oracle = &mut self.oracles[self.process_of[i]];
                    let old = std::mem::replace(&mut oracle.cache, fresh);
                    black_box(oracle.unwind(d, &mut theirs));
                    old
                },
                BatchSize::SmallInput,
            )
        });
        group.finish();
        let frames: usize = (0..n)
            .map(|i| {
                let d = self.dumps[i];
                Unwinder::new().unwind(
                    d.regs,
                    &d.copy(),
                    &mut self.processes[self.process_of[i]],
                    &mut out,
                );
                out.len()
            })
            .sum();
        println!(
            "{name}: {n} samples, {:.1} frames per sample",
            frames as f64 / n as f64
        );
    }
}

fn real_programs(c: &mut Criterion) {
    let python = samples("python3", &["/usr/bin/python3", "-c", PYTHON_WORK], 300);
    Mix::new(python.iter().collect()).bench(c, "python3");
    let sysroot = std::process::Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .unwrap();
    let rustc = format!(
        "{}/bin/rustc",
        String::from_utf8(sysroot.stdout).unwrap().trim()
    );
    let src = format!("{}/unwind-bench-crate.rs", env!("CARGO_TARGET_TMPDIR"));
    let mut code = String::from("use std::collections::HashMap;\n");
    for i in 0..80 {
        code += &format!(
            "pub fn f{i}(x: &[u64]) -> HashMap<u64, Vec<String>> {{ let mut m = HashMap::new(); \
             for (j, v) in x.iter().enumerate() {{ m.entry(*v % 7).or_insert_with(Vec::new)\
             .push(format!(\"{{}}-{{}}\", j, v)); }} m }}\n"
        );
    }
    std::fs::write(&src, code).unwrap();
    let obj = format!("{}/unwind-bench-crate.o", env!("CARGO_TARGET_TMPDIR"));
    let program = [
        rustc.as_str(),
        "--crate-type",
        "lib",
        "--emit=obj",
        "-O",
        "-o",
        &obj,
        &src,
    ];
    let rustc = samples("rustc", &program, 300);
    Mix::new(rustc.iter().collect()).bench(c, "rustc");
}

fn dumper(c: &mut Criterion) {
    for build in Build::ALL {
        for name in SCENARIOS {
            Mix::new(vec![&dumps(build)[name]]).bench(c, &format!("dumper-{build:?}-{name}"));
        }
    }
}

fn from_elf(c: &mut Criterion) {
    let sysroot = std::process::Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .unwrap();
    let sysroot = String::from_utf8(sysroot.stdout)
        .unwrap()
        .trim()
        .to_string();
    let mut files = vec![
        "/lib/x86_64-linux-gnu/libc.so.6".to_string(),
        "/usr/bin/python3.11".to_string(),
    ];
    for entry in std::fs::read_dir(format!("{sysroot}/lib")).unwrap() {
        let path = entry.unwrap().path().display().to_string();
        if path.contains("librustc_driver") || path.contains("libLLVM") {
            files.push(path);
        }
    }
    let mut group = c.benchmark_group("from_elf");
    group.sample_size(20);
    for path in files {
        let data = std::fs::read(&path).unwrap();
        let name = path.rsplit('/').next().unwrap().to_string();
        let module = ModuleUnwind::from_elf(&data).unwrap();
        println!("{name}: {} heap bytes", module.heap_bytes());
        group.bench_function(name, |b| {
            b.iter(|| black_box(ModuleUnwind::from_elf(&data)))
        });
    }
    group.finish();
}

criterion_group!(benches, real_programs, dumper, from_elf);
criterion_main!(benches);
