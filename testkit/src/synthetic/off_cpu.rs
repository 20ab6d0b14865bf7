//! A synthetic capture with off-CPU data (format 1.3): the synthetic stream's CPU samples,
//! and per thread waits in S, D and R on two blocking stacks (a pipe read and a disk
//! write, each under the kernel's `schedule`) and on the ordinary stacks, the exact thread
//! times, lost off-CPU records. Written twice from the same records, with and without the
//! off-CPU ones (kinds 16 to 19), so a test can check that CPU outputs ignore them.

use hotspot_format::{
    Frame, FrameAddr, LostOffCpu, OffCpu, OffCpuSample, Record, Sample, SourceLoc, Stack, Symbol,
    ThreadState, ThreadTimes, Writer,
};

use crate::synthetic::{self, Rng};

#[derive(Debug, Clone)]
pub struct Config {
    pub base: synthetic::Config,
    /// Off-CPU samples per thread.
    pub waits: usize,
    /// Each off-CPU sample stands for 1..=this many periods.
    pub max_periods: u32,
    /// The `LostOffCpu` count written at the end (0: no record).
    pub lost_off_cpu: u64,
    /// Also write a `ThreadTimes` for a tid no other record names.
    pub unknown_tid_times: bool,
    /// The period the `OffCpu` record states; `None`: 1e9 / the frequency.
    pub period_ns: Option<u64>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            base: synthetic::Config {
                seed: 0x0ff_c0de,
                seconds: 1.0,
                stacks: 12,
                ..synthetic::Config::default()
            },
            waits: 200,
            max_periods: 40,
            lost_off_cpu: 3,
            unknown_tid_times: false,
            period_ns: None,
        }
    }
}

/// A tid that only a `ThreadTimes` record names (with [`Config::unknown_tid_times`]).
pub const UNKNOWN_TID: u32 = 999_999;
/// The user function each blocking stack waits in: a pipe read, a disk write.
pub const WAIT_FUNCTIONS: [&str; 2] = ["fx_read_pipe", "fx_write_disk"];
/// The kernel function on top of each blocking stack.
pub const KERNEL_WAIT: &str = "schedule";

/// The capture both ways, and what went into it.
#[derive(Debug, Clone)]
pub struct Built {
    /// With the off-CPU records.
    pub bytes: Vec<u8>,
    /// The same capture without them.
    pub cpu_only: Vec<u8>,
    pub samples: Vec<Sample>,
    pub off_cpu: Vec<OffCpuSample>,
    pub times: Vec<ThreadTimes>,
    /// The period of the `OffCpu` record.
    pub period_ns: u64,
    /// The ids of the two blocking stacks ([`WAIT_FUNCTIONS`] order).
    pub wait_stacks: [u32; 2],
}

/// Builds the capture of `cfg`. Deterministic.
pub fn build(cfg: &Config) -> Built {
    let base = &cfg.base;
    let period_ns = cfg.period_ns.unwrap_or(1_000_000_000 / base.hz);
    let samples = synthetic::samples(base);
    let wait_stacks = [base.stacks as u32, base.stacks as u32 + 1];
    let mut rng = Rng(base.seed ^ 0x0ff);
    let t0 = base.start_mono_ns;
    let span = samples.last().map_or(1, |s| s.time_ns - t0).max(1);
    let mut off_cpu = Vec::new();
    for &tid in &synthetic::TIDS {
        for _ in 0..cfg.waits {
            let state = match rng.below(20) {
                0..12 => ThreadState::Sleeping,
                12..17 => ThreadState::Uninterruptible,
                _ => ThreadState::Runnable,
            };
            let stack = match rng.below(3) {
                0 => wait_stacks[0],
                1 => wait_stacks[1],
                _ => rng.below(base.stacks as u64) as u32,
            };
            off_cpu.push(OffCpuSample {
                sample: Sample {
                    time_ns: t0 + rng.below(span),
                    tid,
                    cpu: rng.below(2) as u32,
                    stack,
                },
                periods: 1 + rng.below(u64::from(cfg.max_periods.max(1))) as u32,
                state,
            });
        }
    }
    off_cpu.sort_by_key(|s| s.sample.time_ns);
    let mut times: Vec<ThreadTimes> = synthetic::TIDS
        .iter()
        .map(|&tid| {
            let on = samples.iter().filter(|s| s.tid == tid).count() as u64;
            let mut t = ThreadTimes {
                tid,
                pid: synthetic::PID,
                first_ns: t0,
                on_cpu_ns: on.saturating_mul(period_ns),
                ..ThreadTimes::default()
            };
            for s in off_cpu.iter().filter(|s| s.sample.tid == tid) {
                let ns = u64::from(s.periods).saturating_mul(period_ns);
                let slot = match s.state {
                    ThreadState::Sleeping => &mut t.sleeping_ns,
                    ThreadState::Uninterruptible => &mut t.uninterruptible_ns,
                    ThreadState::Runnable => &mut t.runnable_ns,
                };
                *slot = slot.saturating_add(ns);
            }
            t.last_ns = t0.saturating_add(t.wall_ns());
            t
        })
        .collect();
    if cfg.unknown_tid_times {
        times.push(ThreadTimes {
            tid: UNKNOWN_TID,
            pid: UNKNOWN_TID,
            first_ns: t0,
            last_ns: t0 + 5_000_000,
            on_cpu_ns: 1_000_000,
            sleeping_ns: 4_000_000,
            exited: true,
            ..ThreadTimes::default()
        });
    }
    let write = |with: bool| write(cfg, period_ns, &samples, &off_cpu, &times, with);
    Built {
        bytes: write(true),
        cpu_only: write(false),
        samples: samples.clone(),
        off_cpu: off_cpu.clone(),
        times: times.clone(),
        period_ns,
        wait_stacks,
    }
}

fn write(
    cfg: &Config,
    period_ns: u64,
    samples: &[Sample],
    off_cpu: &[OffCpuSample],
    times: &[ThreadTimes],
    with_off_cpu: bool,
) -> Vec<u8> {
    let base = &cfg.base;
    let mut w = Writer::new(Vec::new(), synthetic::session(base)).expect("writer");
    let defs = synthetic::definitions(base, &mut |s| w.intern(s));
    for d in defs {
        w.push(d).expect("valid record");
    }
    // The blocking stacks: frames after the synthetic ones, leaf (the kernel) first.
    let first = (base.stacks * 2) as u32;
    let kernel = w.intern(KERNEL_WAIT);
    w.push(Record::Frame(Frame {
        id: first,
        module: 2,
        addr: FrameAddr::KernelSymbol {
            symbol: kernel,
            offset: 0x10,
        },
    }))
    .expect("valid record");
    for (i, name) in WAIT_FUNCTIONS.iter().enumerate() {
        let id = first + 1 + i as u32;
        w.push(Record::Frame(Frame {
            id,
            module: 0,
            addr: FrameAddr::FileOffset(0x9000 + 0x100 * i as u64),
        }))
        .expect("valid record");
        let function = w.intern(name);
        w.push(Record::Symbol(Symbol {
            frame: id,
            function,
            loc: SourceLoc {
                file: None,
                line: 0,
            },
            inlined: Vec::new(),
        }))
        .expect("valid record");
        w.push(Record::Stack(Stack {
            id: base.stacks as u32 + i as u32,
            frames: vec![first, id, 0],
        }))
        .expect("valid record");
    }
    if with_off_cpu {
        w.push(Record::OffCpu(OffCpu { period_ns }))
            .expect("valid record");
    }
    // Four blocks, each with the off-CPU samples of its time range.
    let mut rest = off_cpu;
    let chunks: Vec<&[Sample]> = samples.chunks(samples.len().div_ceil(4).max(1)).collect();
    for (i, chunk) in chunks.iter().enumerate() {
        for &s in *chunk {
            w.push_sample(s).expect("valid record");
        }
        let end = chunk.last().map_or(u64::MAX, |s| s.time_ns);
        let upto = if i + 1 == chunks.len() {
            rest.len()
        } else {
            rest.partition_point(|s| s.sample.time_ns <= end)
        };
        if with_off_cpu {
            for &s in &rest[..upto] {
                w.push_off_cpu_sample(s).expect("valid record");
            }
        }
        rest = &rest[upto..];
        w.flush_block().expect("valid record");
    }
    if with_off_cpu {
        for &t in times {
            w.push(Record::ThreadTimes(t)).expect("valid record");
        }
        if cfg.lost_off_cpu > 0 {
            w.push(Record::LostOffCpu(LostOffCpu {
                time_ns: samples.last().map_or(0, |s| s.time_ns),
                count: cfg.lost_off_cpu,
            }))
            .expect("valid record");
        }
    }
    let end = samples.last().map_or(base.start_mono_ns, |s| s.time_ns) + 1;
    w.finish(1_700_000_001_000_000_000, end, 0)
        .expect("finish the capture")
}
