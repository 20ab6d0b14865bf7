//! Goal check of the sample encoding: bytes per sample at steady state on the synthetic stream.

// Tests and tools: a failed unwrap is a test failure with a backtrace.
#![allow(clippy::unwrap_used)]

mod common;

use common::synthetic::{self, Config};
use hotspot_format::Writer;

/// Bytes a sample costs once every definition is written: what blocks of pure samples add to
/// the file, framing included.
fn steady_state_bytes_per_sample(cfg: &Config) -> (f64, usize) {
    let warmup = Config {
        seconds: 10.0,
        ..cfg.clone()
    };
    let mut measured = cfg.clone();
    measured.start_mono_ns += 10_000_000_000;
    let mut w = Writer::new(Vec::new(), synthetic::session(cfg)).unwrap();
    let defs = synthetic::definitions(cfg, &mut |s| w.intern(s));
    for d in defs {
        w.push(d).unwrap();
    }
    w.flush_block().unwrap();
    // The block after the definitions repeats them; samples from then on are steady state.
    for s in synthetic::samples(&warmup) {
        w.push_sample(s).unwrap();
    }
    w.flush_block().unwrap();
    let before = w.bytes_written();
    let samples = synthetic::samples(&measured);
    for &s in &samples {
        w.push_sample(s).unwrap();
    }
    w.flush_block().unwrap();
    let bytes = w.bytes_written() - before;
    (bytes as f64 / samples.len() as f64, samples.len())
}

/// The figure the goal is about: σ = 2 µs jitter, as the design suggested. The 2 bytes/sample
/// target is below the information content of this stream (see SPEC.md §11), so this checks
/// that the encoding stays close to that bound instead, and guards against regressions.
#[test]
fn steady_state_cost_at_2us_jitter() {
    let cfg = Config::default();
    assert_eq!(cfg.jitter_ns, 2000.0);
    let (bps, n) = steady_state_bytes_per_sample(&cfg);
    let bound = synthetic::entropy_bits_per_sample(&cfg) / 8.0;
    println!("σ=2000 ns: {bps:.3} bytes/sample over {n} samples (entropy bound {bound:.3})");
    assert!(bps <= 2.85, "{bps:.3} bytes/sample");
    assert!(
        bps <= bound * 1.15,
        "{bps:.3} bytes/sample vs bound {bound:.3}"
    );
}

/// Where the stream's information content allows it, the 2 bytes/sample goal is met.
#[test]
fn two_bytes_per_sample_when_the_jitter_allows() {
    for jitter in [100.0, 20.0] {
        let cfg = Config {
            jitter_ns: jitter,
            ..Config::default()
        };
        let (bps, n) = steady_state_bytes_per_sample(&cfg);
        let bound = synthetic::entropy_bits_per_sample(&cfg) / 8.0;
        println!(
            "σ={jitter} ns: {bps:.3} bytes/sample over {n} samples (entropy bound {bound:.3})"
        );
        if jitter <= 20.0 {
            assert!(bps <= 2.0, "{bps:.3} bytes/sample at σ={jitter} ns");
        }
    }
}

/// For information: the cost when a recorder flushes a block every second (as for a live
/// view), so each block holds ~1000 samples and pays its own framing and entropy tables.
#[test]
fn cost_with_one_block_per_second() {
    let cfg = Config::default();
    let mut w = Writer::new(Vec::new(), synthetic::session(&cfg)).unwrap();
    for d in synthetic::definitions(&cfg, &mut |s| w.intern(s)) {
        w.push(d).unwrap();
    }
    w.flush_block().unwrap();
    w.flush_block().unwrap();
    let samples = synthetic::samples(&cfg);
    let mut before = 0;
    for (i, chunk) in samples.chunks(998).enumerate() {
        if i == 1 {
            before = w.bytes_written();
        }
        for &s in chunk {
            w.push_sample(s).unwrap();
        }
        w.flush_block().unwrap();
    }
    let n = samples.len() - 998;
    let bps = (w.bytes_written() - before) as f64 / n as f64;
    println!("σ=2000 ns, one block per second: {bps:.3} bytes/sample over {n} samples");
    assert!(bps < 3.5, "{bps:.3}");
}
