//! Warm and cold unwinding of the real dumps (`tests/dumper.c`), ours against framehop
//! 0.16: time per sample. `cargo bench -p hotspot-unwind --bench unwind`.
//!
//! warm: one unwinder reused, so its rule cache holds the sample's addresses (the steady
//! state of a profiler sampling hot code); cold: a new unwinder per sample (every rule
//! compiled from the CFI; the modules themselves are built beforehand).

#![allow(clippy::unwrap_used, missing_docs)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::hint::black_box;

use common::oracle::Oracle;
use common::{Build, Process, SCENARIOS, dumps};
use criterion::{Criterion, criterion_group, criterion_main};
use hotspot_unwind::Unwinder;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("unwind");
    for build in Build::ALL {
        for name in SCENARIOS {
            let dump = &dumps(build)[name];
            let id = format!("{build:?}/{name}");
            let mut process = Process::new(dump);
            let mut unwinder = Unwinder::new();
            let mut out = Vec::with_capacity(256);
            let copy = dump.copy();
            group.bench_function(format!("ours-warm/{id}"), |b| {
                b.iter(|| {
                    black_box(unwinder.unwind(dump.regs, &copy, &mut process, &mut out));
                })
            });
            group.bench_function(format!("ours-cold/{id}"), |b| {
                b.iter(|| {
                    let mut fresh = Unwinder::new();
                    black_box(fresh.unwind(dump.regs, &copy, &mut process, &mut out));
                })
            });
            let mut oracle = Oracle::new(dump);
            let mut theirs = Vec::with_capacity(256);
            group.bench_function(format!("framehop-warm/{id}"), |b| {
                b.iter(|| black_box(oracle.unwind(dump, &mut theirs)))
            });
            group.bench_function(format!("framehop-cold/{id}"), |b| {
                b.iter(|| {
                    oracle.cache = framehop::x86_64::CacheX86_64::new();
                    black_box(oracle.unwind(dump, &mut theirs))
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
