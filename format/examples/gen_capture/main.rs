//! Writes a large, realistic, deterministic capture through the format crate, for the
//! benchmarks (`tools/bench/run`: opening a big capture, time to first frame, re-fold).
//!
//! ```sh
//! cargo run --release -p hotspot-format --example gen_capture -- -o big.hsp \
//!     [--samples 5000000] [--stacks 2000] [--threads 8] [--cpus 8] [--hz 4999] \
//!     [--seed 1] [--zipf 1.1]
//! ```
//!
//! What it models (the same seed always gives the same bytes):
//! - one process (`renderd`, pid 31337) with `--threads` threads in roles: a main thread
//!   (event loop, layout, rendering), a compositor, workers (codecs, compression, hashing,
//!   JSON), an I/O thread (mostly in syscalls) and a GC thread; each thread has its own
//!   CPU demand, and threads are scheduled on `--cpus` CPUs with ~4 ms time slices, so
//!   CPUs are sometimes idle (no sample) and threads migrate;
//! - modules: the executable, libc, libstdc++, libm, libz, libcrypto, the vDSO, the kernel
//!   and a kernel module, each with a build-id; about 1,500 functions with C++-style
//!   demangled names, source files and lines, some frames with inlined functions; kernel
//!   frames as symbol + offset (syscall paths, page faults, timer interrupts);
//! - a catalogue of `--stacks` distinct stacks (4 to ~40 frames), built by random walks
//!   down a layered call graph from each role's entry points; each thread draws its stacks
//!   from a Zipf(`--zipf`) distribution over its role's stacks, re-ranked in each of four
//!   phases (the profile shifts over time, as a real program's does);
//! - timestamps: each CPU's timer fires on an exact grid of period 1e9/`--hz` ns (grids of
//!   different CPUs offset by a fixed phase) plus normal jitter of σ = 2 µs, CLOCK_MONOTONIC
//!   nanoseconds from an uptime of ~5000 s;
//! - definitions (modules, frames, symbols, strings, stacks) are written when a stack is
//!   first sampled, and a block is flushed every second of recorded time, as
//!   `hotspot record` does.
//!
//! Prints one JSON line with what it wrote.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufWriter, Write};

use hotspot_format::{
    Frame, FrameAddr, InlinedFn, Module, ModuleKind, Process, Record, Sample, SessionHeader,
    SourceLoc, Stack, Symbol, Thread, Writer,
};
use hotspot_testkit::Rng;

mod emit;
mod stacks;
mod world;

use emit::*;
use stacks::*;
use world::*;

fn hash2(a: u64, b: u64) -> u64 {
    Rng(a.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ b).next_u64()
}

#[derive(Debug, Clone)]
struct Config {
    out: String,
    samples: u64,
    stacks: usize,
    threads: usize,
    cpus: usize,
    hz: u64,
    seed: u64,
    zipf: f64,
}

fn parse_args() -> Result<Config, String> {
    let mut c = Config {
        out: String::new(),
        samples: 5_000_000,
        stacks: 2000,
        threads: 8,
        cpus: 8,
        hz: 4999,
        seed: 1,
        zipf: 1.1,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().ok_or_else(|| format!("{a} needs a value"));
        let num = |s: String| s.parse::<u64>().map_err(|e| format!("{s}: {e}"));
        match a.as_str() {
            "-o" | "--out" => c.out = val()?,
            "--samples" => c.samples = num(val()?)?,
            "--stacks" => c.stacks = num(val()?)? as usize,
            "--threads" => c.threads = num(val()?)? as usize,
            "--cpus" => c.cpus = num(val()?)? as usize,
            "--hz" => c.hz = num(val()?)?,
            "--seed" => c.seed = num(val()?)?,
            "--zipf" => {
                let s = val()?;
                c.zipf = s.parse().map_err(|e| format!("{s}: {e}"))?;
            }
            "-h" | "--help" => {
                return Err("usage: gen_capture -o FILE [--samples N] [--stacks K] \
                            [--threads T] [--cpus C] [--hz HZ] [--seed S] [--zipf S]"
                    .into());
            }
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    if c.out.is_empty() {
        return Err("-o FILE is required".into());
    }
    if c.threads < 2 || c.cpus < 1 || c.hz < 1 || c.stacks < 20 {
        return Err("need --threads ≥ 2, --cpus ≥ 1, --hz ≥ 1, --stacks ≥ 20".into());
    }
    Ok(c)
}

fn main() {
    let cfg = match parse_args() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("gen_capture: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&cfg) {
        eprintln!("gen_capture: {e}");
        std::process::exit(1);
    }
}

fn run(cfg: &Config) -> Result<(), Box<dyn std::error::Error>> {
    let mut rng = Rng(cfg.seed);
    let world = build_world(&mut rng);
    let build_ids: Vec<Vec<u8>> = (0..MODULES.len())
        .map(|m| (0..20).map(|b| hash2(m as u64 + 77, b) as u8).collect())
        .collect();

    // The stack catalogue, split between roles.
    let roles = roles(cfg.threads);
    let role_kinds = [
        Role::Main,
        Role::Compositor,
        Role::Worker,
        Role::Io,
        Role::Gc,
    ];
    let share = |r: Role| match r {
        Role::Main => 0.3,
        Role::Compositor => 0.15,
        Role::Worker => 0.35,
        Role::Io => 0.1,
        Role::Gc => 0.1,
    };
    let present: Vec<Role> = role_kinds
        .iter()
        .copied()
        .filter(|r| roles.contains(r))
        .collect();
    let total_share: f64 = present.iter().map(|&r| share(r)).sum();
    let mut catalogue: Vec<Vec<FrameKey>> = Vec::new();
    let mut seen: HashMap<Vec<FrameKey>, usize> = HashMap::new();
    let mut role_stacks: BTreeMap<u8, Vec<usize>> = BTreeMap::new();
    for (ri, &r) in present.iter().enumerate() {
        let want = if ri + 1 == present.len() {
            cfg.stacks - catalogue.len()
        } else {
            ((cfg.stacks as f64) * share(r) / total_share).round() as usize
        };
        let mut mine = Vec::new();
        let mut tries = 0;
        while mine.len() < want && tries < want * 200 {
            tries += 1;
            let s = walk(&world, r, &mut rng);
            if s.len() > 1024 || seen.contains_key(&s) {
                continue;
            }
            seen.insert(s.clone(), catalogue.len());
            mine.push(catalogue.len());
            catalogue.push(s);
        }
        role_stacks.insert(r as u8, mine);
    }

    // Per thread and phase: a ranking of its role's stacks (a shared base order, re-ranked
    // a little per thread and more per phase).
    const PHASES: usize = 4;
    let mut base_perm: BTreeMap<u8, Vec<usize>> = BTreeMap::new();
    for (&r, v) in &role_stacks {
        let mut p = v.clone();
        for i in (1..p.len()).rev() {
            p.swap(i, rng.index(i + 1));
        }
        base_perm.insert(r, p);
    }
    let rankings: Vec<Vec<Vec<usize>>> = roles
        .iter()
        .map(|&r| {
            (0..PHASES)
                .map(|_| {
                    let mut p = base_perm[&(r as u8)].clone();
                    let n = p.len();
                    for _ in 0..(n / 3).max(1) {
                        let (a, b) = (rng.index(n), rng.index(n));
                        p.swap(a, b);
                    }
                    p
                })
                .collect()
        })
        .collect();
    let cdfs: Vec<Vec<f64>> = roles
        .iter()
        .map(|&r| zipf_cdf(role_stacks[&(r as u8)].len().max(1), cfg.zipf))
        .collect();

    // Session and process.
    let pid = 31337u32;
    let start_mono = 5_012_345_678_901u64;
    let start_wall = 1_750_000_000_000_000_000u64;
    let session = SessionHeader {
        host: "bench-host".into(),
        kernel_release: "6.1.0-27-amd64".into(),
        arch: "x86_64".into(),
        cpus: cfg.cpus as u32,
        page_size: 4096,
        freq_hz: cfg.hz as u32,
        targets: vec![pid],
        all_processes: false,
        command_line: vec![
            "hotspot".into(),
            "record".into(),
            "-F".into(),
            cfg.hz.to_string(),
            "-o".into(),
            "renderd.hsp".into(),
            pid.to_string(),
        ],
        start_wall_ns: start_wall,
        start_mono_ns: start_mono,
        recorder_version: format!("gen_capture (seed {})", cfg.seed),
    };
    let file = std::fs::File::create(&cfg.out)?;
    let mut out = Writer::new(BufWriter::with_capacity(1 << 20, file), session)?;
    out.push(Record::Process(Process {
        pid,
        ppid: 1,
        name: "renderd".into(),
        cmdline: vec![
            "/opt/renderd/bin/renderd".into(),
            "--config".into(),
            "/etc/renderd.toml".into(),
        ],
        exe: MODULES[M_EXE].1.into(),
        start_ns: start_mono - 3_600_000_000_000,
    }))?;
    let tids: Vec<u32> = (0..roles.len() as u32).map(|i| pid + i).collect();
    let mut worker_no = 0;
    for (i, &r) in roles.iter().enumerate() {
        let name = thread_name(r, worker_no);
        if r == Role::Worker {
            worker_no += 1;
        }
        out.push(Record::Thread(Thread {
            tid: tids[i],
            pid,
            name,
            time_ns: start_mono - 3_600_000_000_000 + i as u64 * 1_000_000,
        }))?;
    }

    let mut em = Emitter {
        frame_ids: HashMap::new(),
        modules_written: [false; 9],
        stack_ids: vec![None; catalogue.len()],
        next_stack: 0,
    };

    // Scheduling: each CPU runs a thread (or idles); re-decided every ~4 ms.
    let period = 1_000_000_000 / cfg.hz;
    let reschedule_p = (1.0 / (cfg.hz as f64 * 0.004)).min(1.0);
    let cpu_phase: Vec<u64> = (0..cfg.cpus)
        .map(|c| (c as u64 * period * 7 / 11 + hash2(c as u64, 3) % 1000) % period)
        .collect();
    let mut on_cpu: Vec<Option<usize>> = vec![None; cfg.cpus];
    let mut tick: u64 = 0;
    let mut written: u64 = 0;
    let mut next_flush = start_mono + 1_000_000_000;
    let mut batch: Vec<Sample> = Vec::with_capacity(cfg.cpus);
    while written < cfg.samples {
        let phase = ((written * PHASES as u64) / cfg.samples) as usize;
        batch.clear();
        for cpu in 0..cfg.cpus {
            if tick == 0 || rng.chance(reschedule_p) {
                let cur = on_cpu[cpu].take();
                // Offer the CPU to a random thread not running elsewhere (up to 3 tries).
                let mut chosen = None;
                for _ in 0..3 {
                    let t = rng.index(roles.len());
                    if on_cpu.contains(&Some(t)) {
                        continue;
                    }
                    if rng.chance(demand(roles[t])) {
                        chosen = Some(t);
                        break;
                    }
                }
                on_cpu[cpu] = chosen.or(cur.filter(|_| rng.chance(0.5)));
            }
            let Some(t) = on_cpu[cpu] else { continue };
            let grid = start_mono + cpu_phase[cpu] + tick * period;
            let jitter = (rng.normal() * 2000.0).round() as i64;
            let u = rng.unit();
            let cdf = &cdfs[t];
            let rank = cdf.partition_point(|&c| c < u).min(cdf.len() - 1);
            let key = rankings[t][phase][rank];
            batch.push(Sample {
                time_ns: grid.wrapping_add_signed(jitter),
                tid: tids[t],
                cpu: cpu as u32,
                stack: key as u32, // catalogue index for now
            });
        }
        batch.sort_by_key(|s| s.time_ns);
        for s in batch.iter_mut() {
            if written >= cfg.samples {
                break;
            }
            let key = s.stack as usize;
            let id = match em.stack_ids[key] {
                Some(id) => id,
                None => {
                    let mut frames = Vec::with_capacity(catalogue[key].len());
                    for &fk in &catalogue[key] {
                        frames.push(em.frame(&world, fk, &mut out, &build_ids)?);
                    }
                    let id = em.next_stack;
                    em.next_stack += 1;
                    out.push(Record::Stack(Stack { id, frames }))?;
                    em.stack_ids[key] = Some(id);
                    id
                }
            };
            s.stack = id;
            if s.time_ns >= next_flush {
                out.flush_block()?;
                next_flush += 1_000_000_000;
            }
            out.push_sample(*s)?;
            written += 1;
        }
        tick += 1;
    }
    let end_mono = start_mono + tick * period;
    let end_wall = start_wall + tick * period;
    let mut file = out.finish(end_wall, end_mono, 0)?;
    file.flush()?;
    drop(file);
    let size = std::fs::metadata(&cfg.out)?.len();
    println!(
        "{{\"path\":\"{}\",\"samples\":{},\"distinct_stacks\":{},\"stack_catalogue\":{},\"frames\":{},\"threads\":{},\"cpus\":{},\"hz\":{},\"seconds\":{:.3},\"bytes\":{},\"bytes_per_sample\":{:.3},\"seed\":{}}}",
        cfg.out.replace('\\', "\\\\").replace('"', "\\\""),
        written,
        em.next_stack,
        catalogue.len(),
        em.frame_ids.len(),
        roles.len(),
        cfg.cpus,
        cfg.hz,
        (tick * period) as f64 / 1e9,
        size,
        size as f64 / written as f64,
        cfg.seed,
    );
    Ok(())
}
