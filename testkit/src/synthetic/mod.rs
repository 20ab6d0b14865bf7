//! A deterministic synthetic profiling stream (shared by the format's size-goal test, its
//! throughput benchmark and the fixture generator): what a 2-thread program on 2 CPUs sampled at 499 Hz looks like.
//!
//! Model (see `fixtures/captures/README.md` and `SPEC.md`, "Size goal"):
//! - each CPU's timer fires on an exact grid of period 1e9/499 ns (how the kernel's hrtimer
//!   for a `cpu-clock` perf event is forwarded), the grids of the two CPUs offset by a
//!   fixed phase; every sample time is its grid point plus independent normal jitter
//!   (σ = `jitter_ns`, 2000 ns by default), rounded to the nanosecond;
//! - thread `i` runs on CPU `i`; with probability 1/5000 per tick the two threads swap CPUs;
//! - each thread draws its stack from a Zipf(s = `zipf_s`) distribution over `stacks`
//!   distinct stacks (its own random permutation of them); stack ids are assigned in order
//!   of first appearance, as a recorder interning stacks does.

pub mod fixture;
pub mod off_cpu;

pub use crate::rng::Rng;

use hotspot_format::{
    Frame, FrameAddr, Module, ModuleKind, Process, Record, Sample, SessionHeader, Stack, Symbol,
    Thread,
};

#[derive(Debug, Clone)]
pub struct Config {
    pub seed: u64,
    pub seconds: f64,
    pub hz: u64,
    pub stacks: usize,
    pub zipf_s: f64,
    pub jitter_ns: f64,
    pub start_mono_ns: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            seed: 0x5eed_1234,
            seconds: 60.0,
            hz: 499,
            stacks: 300,
            zipf_s: 1.0,
            jitter_ns: 2000.0,
            start_mono_ns: 1_000_000_000_000,
        }
    }
}

pub const PID: u32 = 4242;
pub const TIDS: [u32; 2] = [4242, 4243];

/// The definitions (session aside) a recorder would have written: one process, two threads,
/// three modules, the frames, the stacks, the symbols. String records are produced by the
/// `intern` callback so that a `Writer` can assign the ids.
pub fn definitions(cfg: &Config, intern: &mut dyn FnMut(&str) -> u32) -> Vec<Record> {
    let mut rng = Rng(cfg.seed ^ 0xdef5);
    let mut out = vec![Record::Process(Process {
        pid: PID,
        ppid: 1,
        name: "synthetic".into(),
        cmdline: vec!["synthetic".into(), "--work".into()],
        exe: "/usr/bin/synthetic".into(),
        start_ns: cfg.start_mono_ns,
    })];
    for (i, &tid) in TIDS.iter().enumerate() {
        out.push(Record::Thread(Thread {
            tid,
            pid: PID,
            name: format!("worker-{i}"),
            time_ns: cfg.start_mono_ns,
        }));
    }
    let modules = [
        (ModuleKind::Elf, "/usr/bin/synthetic"),
        (ModuleKind::Elf, "/usr/lib/x86_64-linux-gnu/libc.so.6"),
        (ModuleKind::Kernel, "[kernel.kallsyms]"),
    ];
    for (id, (kind, path)) in modules.iter().enumerate() {
        out.push(Record::Module(Module {
            id: id as u32,
            kind: *kind,
            path: (*path).into(),
            build_id: (0..20).map(|b| (b * 7 + id * 13) as u8).collect(),
        }));
    }
    let frames = cfg.stacks * 2;
    for id in 0..frames as u32 {
        let module = id % 3;
        let addr = if module == 2 {
            FrameAddr::KernelSymbol {
                symbol: intern(&format!("kfunc_{}", id % 40)),
                offset: rng.below(0x400),
            }
        } else {
            FrameAddr::FileOffset(0x1000 + rng.below(0x10_0000))
        };
        out.push(Record::Frame(Frame { id, module, addr }));
        let function = intern(&format!("fn_{id}"));
        let file = intern(&format!("src/file_{}.rs", id % 17));
        out.push(Record::Symbol(Symbol {
            frame: id,
            function,
            loc: hotspot_format::SourceLoc {
                file: Some(file),
                line: 1 + (id * 31) % 900,
            },
            inlined: Vec::new(),
        }));
    }
    for id in 0..cfg.stacks as u32 {
        let depth = 4 + rng.below(16) as usize;
        let frames = (0..depth)
            .map(|_| rng.below(frames as u64) as u32)
            .collect();
        out.push(Record::Stack(Stack { id, frames }));
    }
    out
}

pub fn session(cfg: &Config) -> SessionHeader {
    SessionHeader {
        host: "synthetic-host".into(),
        kernel_release: "6.1.0-synthetic".into(),
        arch: "x86_64".into(),
        cpus: 2,
        page_size: 4096,
        freq_hz: cfg.hz as u32,
        targets: vec![PID],
        all_processes: false,
        command_line: vec![
            "hotspot".into(),
            "record".into(),
            "-p".into(),
            PID.to_string(),
        ],
        start_wall_ns: 1_700_000_000_000_000_000,
        start_mono_ns: cfg.start_mono_ns,
        recorder_version: "0.1.0".into(),
    }
}

/// Zipf probabilities over `n` ranks.
pub fn zipf_pmf(n: usize, s: f64) -> Vec<f64> {
    let w: Vec<f64> = (1..=n).map(|k| 1.0 / (k as f64).powf(s)).collect();
    let total: f64 = w.iter().sum();
    w.into_iter().map(|x| x / total).collect()
}

/// The samples of `cfg.seconds` seconds, in time order.
pub fn samples(cfg: &Config) -> Vec<Sample> {
    let mut rng = Rng(cfg.seed);
    let period = 1_000_000_000 / cfg.hz;
    let ticks = (cfg.seconds * cfg.hz as f64) as u64;
    let pmf = zipf_pmf(cfg.stacks, cfg.zipf_s);
    let mut cdf = Vec::with_capacity(pmf.len());
    let mut acc = 0.0;
    for p in &pmf {
        acc += p;
        cdf.push(acc);
    }
    let perms: Vec<Vec<usize>> = (0..2)
        .map(|_| {
            let mut p: Vec<usize> = (0..cfg.stacks).collect();
            for i in (1..p.len()).rev() {
                p.swap(i, rng.below(i as u64 + 1) as usize);
            }
            p
        })
        .collect();
    let mut ids = vec![u32::MAX; cfg.stacks];
    let mut next_id = 0u32;
    let phase = [0u64, 733_119];
    let mut on_cpu = [0usize, 1];
    let mut out = Vec::with_capacity(ticks as usize * 2);
    for k in 0..ticks {
        if rng.below(5000) == 0 {
            on_cpu.swap(0, 1);
        }
        for cpu in 0..2 {
            let thread = on_cpu[cpu];
            let grid = cfg.start_mono_ns + phase[cpu] + k * period;
            let jitter = (rng.normal() * cfg.jitter_ns).round() as i64;
            let u = rng.unit();
            let rank = cdf.partition_point(|&c| c < u).min(cfg.stacks - 1);
            let key = perms[thread][rank];
            if ids[key] == u32::MAX {
                ids[key] = next_id;
                next_id += 1;
            }
            out.push(Sample {
                time_ns: grid.wrapping_add_signed(jitter),
                tid: TIDS[thread],
                cpu: cpu as u32,
                stack: ids[key],
            });
        }
    }
    out.sort_by_key(|s| s.time_ns);
    out
}

/// Shannon entropy in bits of a sample of the stream under the model: the stack draw plus
/// the jitter of the time (a normal of σ `jitter_ns` rounded to 1 ns); the lower bound no
/// lossless encoding of those two fields can beat on average.
pub fn entropy_bits_per_sample(cfg: &Config) -> f64 {
    let stack: f64 = zipf_pmf(cfg.stacks, cfg.zipf_s)
        .iter()
        .map(|p| -p * p.log2())
        .sum();
    let time =
        0.5 * (2.0 * std::f64::consts::PI * std::f64::consts::E * cfg.jitter_ns.powi(2)).log2();
    stack + time
}
