//! Real-kernel tests of the BPF sampler: they load and attach `ebpf/hotspot.bpf.o`, so they need
//! root (or CAP_BPF + CAP_PERFMON) and FAIL, never skip, when BPF is unavailable.

//!
//! The workload and the sampler's set-up are in `support.rs`; the tests of stack mode
//! (user registers and the copied user stack) in `stacks.rs`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use hotspot_recorder::bpf::abi::{HEADER_SIZE, USER_REGS_SIZE};
use hotspot_recorder::bpf::{BpfError, BpfSampler, SamplerOptions, ring_bytes_for};
use hotspot_recorder::event::{Event, StackEnd, StackSample, UserRegs};
use hotspot_recorder::source::EventSource;

mod off_cpu;
mod stacks;
mod support;

use support::*;

#[test]
fn samples_a_busy_target_with_user_stacks() -> Result<()> {
    let _serial = serial();
    let mut sampler = sampler(fp_opts())?;
    ensure!(
        !sampler.copies_stacks(),
        "stack_cap 0 loaded the copying program"
    );
    let child = busy(&["spin", "5"])?;
    let pid = child.id();
    sampler.add_target(pid)?;
    let events = collect(&mut sampler, Duration::from_secs(1))?;
    finish(child)?;

    let samples = samples(&events);
    // ~499 on one CPU in a second; allow for a slow start and a loaded machine.
    ensure!(
        samples.len() >= 100,
        "only {} samples in 1 s at 499 Hz",
        samples.len()
    );
    for s in &samples {
        ensure!(s.pid == pid, "sample of pid {} (target {pid})", s.pid);
        ensure!(s.pid != std::process::id(), "the test process was sampled");
        ensure!(
            s.tid == pid,
            "single-threaded target sampled as tid {}",
            s.tid
        );
        ensure!(
            s.comm == comm("busy"),
            "comm {:?}",
            String::from_utf8_lossy(&s.comm)
        );
        ensure!(!s.user.is_empty(), "empty user stack: {s:?}");
        ensure!(
            s.user.iter().all(|&a| a < KERNEL_SPACE_START),
            "kernel address in user stack"
        );
        // Frame-pointer mode copies nothing: today's record and cost.
        ensure!(
            s.regs.is_none() && s.stack.is_empty() && s.stack_end == StackEnd::Cap,
            "registers or stack in frame-pointer mode: {:?} {} bytes {:?}",
            s.regs,
            s.stack.len(),
            s.stack_end
        );
    }
    // Frame pointers: main → spin → middle → leaf (plus libc start) in most ticks.
    let deep = samples.iter().filter(|s| s.user.len() >= 4).count();
    ensure!(
        deep * 2 > samples.len(),
        "only {deep}/{} samples have ≥4 user frames",
        samples.len()
    );
    // Timestamps are CLOCK_MONOTONIC and increase within one CPU's stream.
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    let now_ns = now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64;
    ensure!(
        samples
            .iter()
            .all(|s| s.time_ns <= now_ns && s.time_ns + 5_000_000_000 > now_ns)
    );
    ensure!(sampler.malformed_records() == 0);
    Ok(())
}

#[test]
fn syscall_heavy_target_has_kernel_stacks() -> Result<()> {
    let _serial = serial();
    let mut sampler = sampler(fp_opts())?;
    let child = Command::new("dd")
        .args(["if=/dev/zero", "of=/dev/null", "bs=1", "count=100000000"])
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let pid = child.id();
    sampler.add_target(pid)?;
    let events = collect(&mut sampler, Duration::from_secs(1))?;
    finish(child)?;

    let samples = samples(&events);
    ensure!(samples.len() >= 100, "only {} samples", samples.len());
    ensure!(samples.iter().all(|s| s.pid == pid && s.comm == comm("dd")));
    let in_kernel: Vec<_> = samples.iter().filter(|s| !s.kernel.is_empty()).collect();
    ensure!(
        in_kernel.len() * 5 > samples.len(),
        "only {}/{} samples with a kernel stack",
        in_kernel.len(),
        samples.len()
    );
    for s in &in_kernel {
        ensure!(
            s.kernel.iter().all(|&a| a >= KERNEL_SPACE_START),
            "non-kernel address in kernel stack: {:x?}",
            s.kernel
        );
        // Even inside a syscall the user side is known: the PC of the syscall instruction.
        ensure!(!s.user.is_empty(), "no user stack under a kernel stack");
    }
    Ok(())
}

#[test]
fn kernel_names_from_bpf_match_kallsyms() -> Result<()> {
    let _serial = serial();
    let mut sampler = sampler(opts())?;
    let bpf = sampler
        .take_kernel_symbols()
        .context("this kernel cannot name addresses through hs_ksym")?;
    ensure!(sampler.take_kernel_symbols().is_none(), "taken twice");
    let child = Command::new("dd")
        .args(["if=/dev/zero", "of=/dev/null", "bs=1", "count=100000000"])
        .stderr(std::process::Stdio::null())
        .spawn()?;
    sampler.add_target(child.id())?;
    let events = collect(&mut sampler, Duration::from_secs(1))?;
    finish(child)?;

    let mut addrs: Vec<u64> = samples(&events)
        .iter()
        .flat_map(|s| s.kernel.iter().copied())
        .collect();
    addrs.sort_unstable();
    addrs.dedup();
    ensure!(addrs.len() >= 5, "only {} kernel addresses", addrs.len());
    let table = hotspot_recorder::live::kernel_names::Kallsyms::read(Path::new("/proc/kallsyms"))?;
    ensure!(
        !table.is_empty(),
        "/proc/kallsyms shows no addresses to root"
    );
    let mut names = Vec::new();
    for &addr in &addrs {
        let named = bpf
            .resolve(addr)?
            .with_context(|| format!("no name for sampled address {addr:#x}"))?;
        let (sym, offset) = table
            .resolve(addr)
            .with_context(|| format!("kallsyms has no symbol at {addr:#x}"))?;
        // Aliases share an address, and either name is right: the symbol's start is what
        // must agree.
        ensure!(
            addr - named.offset == sym.addr && named.offset == offset,
            "{addr:#x}: BPF says {}+{:#x}, kallsyms {}+{offset:#x}",
            named.name,
            named.offset,
            sym.name
        );
        names.push(named.name);
    }
    ensure!(
        names.iter().any(|n| n.contains("write")),
        "no write-path function among {names:?}"
    );
    Ok(())
}

fn run_fork_target(follow_children: bool) -> Result<(u32, u32, Vec<Event>, BpfSampler)> {
    let mut sampler = sampler(SamplerOptions {
        follow_children,
        ..opts()
    })?;
    let pid_file = scratch_dir().join(format!("child-{follow_children}"));
    let _ = std::fs::remove_file(&pid_file);
    let parent = busy(&["fork", "0.8", pid_file.to_str().context("temp path")?])?;
    let parent_pid = parent.id();
    sampler.add_target(parent_pid)?;
    let events = collect(&mut sampler, Duration::from_millis(1500))?;
    finish(parent)?;
    let child_pid: u32 = std::fs::read_to_string(&pid_file)
        .context("the forked child did not write its pid")?
        .trim()
        .parse()?;
    Ok((parent_pid, child_pid, events, sampler))
}

#[test]
fn follows_forked_children() -> Result<()> {
    let _serial = serial();
    // The fork and exit programs read task fields at offsets relocated against the BTF
    // subset: this test and the exit and thread tests check those offsets.
    ensure!(
        sampler(opts())?.relocated_with_btf_subset(),
        "loaded through the full-BTF fallback"
    );
    let (parent, child, events, _sampler) = run_fork_target(true)?;
    ensure!(
        events.iter().any(
            |e| matches!(e, Event::Fork { parent: p, child: c, .. } if *p == parent && *c == child)
        ),
        "no Fork {{ parent: {parent}, child: {child} }} event"
    );
    let from_child = samples(&events).iter().filter(|s| s.pid == child).count();
    ensure!(
        from_child >= 100,
        "only {from_child} samples from the followed child"
    );
    ensure!(
        samples(&events)
            .iter()
            .all(|s| s.pid == parent || s.pid == child),
        "samples from an unrelated process"
    );
    // The child exited within the window: its exit was seen and it left the target set.
    ensure!(
        events
            .iter()
            .any(|e| matches!(e, Event::Exit { pid, .. } if *pid == child))
    );
    Ok(())
}

#[test]
fn does_not_follow_children_unless_asked() -> Result<()> {
    let _serial = serial();
    let (parent, child, events, sampler) = run_fork_target(false)?;
    ensure!(
        !events.iter().any(|e| matches!(e, Event::Fork { .. })),
        "Fork event without follow_children"
    );
    ensure!(
        samples(&events).iter().all(|s| s.pid == parent),
        "samples from pid {child} that was not followed"
    );
    ensure!(!sampler.targets()?.contains(&child));
    Ok(())
}

#[test]
fn threads_are_not_mistaken_for_children() -> Result<()> {
    let _serial = serial();
    let mut sampler = sampler(SamplerOptions {
        follow_children: true,
        ..opts()
    })?;
    // The threads are created after the target is added, so the fork program sees them.
    let child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "sleep 0.3; exec {} threads 0.7",
            busy_binary()?.display()
        ))
        .spawn()?;
    let pid = child.id();
    sampler.add_target(pid)?;
    let events = collect(&mut sampler, Duration::from_millis(600))?;
    let targets = sampler.targets()?;
    finish(child)?;

    let samples = samples(&events);
    let mut tids: Vec<u32> = samples
        .iter()
        .filter(|s| s.pid == pid)
        .map(|s| s.tid)
        .collect();
    tids.sort_unstable();
    tids.dedup();
    ensure!(
        tids.len() >= 3,
        "expected samples from the 3 worker threads, got tids {tids:?}"
    );
    // `sleep` is a forked child (followed, then exited); the threads must not appear at all.
    for tid in tids.iter().filter(|&&t| t != pid) {
        ensure!(
            !targets.contains(tid),
            "thread {tid} was added to targets as a process: {targets:?}"
        );
        ensure!(
            !events
                .iter()
                .any(|e| matches!(e, Event::Fork { child, .. } if child == tid)),
            "thread {tid} reported as a forked child"
        );
    }
    ensure!(targets.contains(&pid));
    // exec keeps the pid and renames the process.
    ensure!(
        events.iter().any(
            |e| matches!(e, Event::Exec { pid: p, comm: c, .. } if *p == pid && *c == comm("busy"))
        ),
        "no Exec event for pid {pid}"
    );
    Ok(())
}

#[test]
fn reports_the_exit_of_a_target() -> Result<()> {
    let _serial = serial();
    let mut sampler = sampler(opts())?;
    let mut child = busy(&["spin", "0.3"])?;
    let pid = child.id();
    sampler.add_target(pid)?;
    let events = collect_until(
        &mut sampler,
        Duration::from_secs(5),
        |e| matches!(e, Event::Exit { pid: p, .. } if *p == pid),
    )?;
    child.wait()?;
    ensure!(!samples(&events).is_empty());
    ensure!(
        !sampler.targets()?.contains(&pid),
        "exited pid still in targets"
    );
    // Removing an already removed target is not an error.
    sampler.remove_target(pid)?;
    Ok(())
}

#[test]
fn all_processes_mode_skips_the_recorder_itself() -> Result<()> {
    let _serial = serial();
    let mut sampler = sampler(SamplerOptions {
        all_processes: true,
        ..opts()
    })?;
    let child = busy(&["spin", "5"])?;
    let pid = child.id();
    // Keep this process busy too, so that skipping it is meaningful.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let spinner = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut x = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        })
    };
    let events = collect(&mut sampler, Duration::from_secs(1));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = spinner.join();
    finish(child)?;
    let events = events?;

    let samples = samples(&events);
    ensure!(
        samples.iter().filter(|s| s.pid == pid).count() >= 50,
        "untargeted child not sampled"
    );
    ensure!(
        samples.iter().all(|s| s.pid != std::process::id()),
        "the recorder sampled itself"
    );
    ensure!(
        samples.iter().all(|s| s.tid != 0),
        "the idle task was sampled"
    );
    Ok(())
}

#[test]
fn lost_samples_are_counted() -> Result<()> {
    let _serial = serial();
    let mut normal = sampler(opts())?;
    let per_cpu = normal.lost_per_cpu()?;
    ensure!(!per_cpu.is_empty(), "no per-CPU lost counters");
    ensure!(
        per_cpu.iter().sum::<u64>() == 0,
        "lost samples with nothing to sample"
    );
    drop(normal);

    // One page of ring holds a few dozen samples; nobody drains it for a second.
    let mut tiny = sampler(SamplerOptions {
        ring_bytes: 4096,
        freq_hz: 999,
        ..fp_opts()
    })?;
    let child = busy(&["threads", "3"])?;
    tiny.add_target(child.id())?;
    std::thread::sleep(Duration::from_secs(1));
    let lost: u64 = tiny.lost_per_cpu()?.iter().sum();
    let kept = samples(&collect(&mut tiny, Duration::from_millis(10))?).len();
    finish(child)?;
    ensure!(kept > 0, "nothing reached the ring");
    ensure!(
        lost > 0,
        "a full 4 KiB ring lost nothing ({kept} samples kept)"
    );
    Ok(())
}

#[test]
fn failed_start_names_the_cpu_and_leaves_nothing_attached() -> Result<()> {
    let _serial = serial();
    let mut sampler = BpfSampler::load(&SamplerOptions {
        freq_hz: 50_000_000,
        ..opts()
    })
    .map_err(|e| anyhow::anyhow!("BPF is unavailable, cannot run the BPF tests: {e}"))?;
    let Err(error) = sampler.start() else {
        bail!("50 MHz sampling was accepted");
    };
    let message = error.to_string();
    ensure!(
        message.starts_with("cannot attach the sampling program to CPU "),
        "unexpected error: {message}"
    );
    ensure!(
        message.contains("perf_event_max_sample_rate"),
        "no hint in: {message}"
    );

    // The tracepoints attached before the CPU loop failed must be gone again.
    let mut child = busy(&["spin", "0.2"])?;
    sampler.add_target(child.id())?;
    let events = collect(&mut sampler, Duration::from_millis(600))?;
    child.wait()?;
    ensure!(events.is_empty(), "events after a failed start: {events:?}");
    Ok(())
}

#[test]
fn no_samples_lost_at_4999_hz_on_every_cpu() -> Result<()> {
    let _serial = serial();
    let cpus = std::thread::available_parallelism()?.get() as u64;
    let mut sampler = sampler(SamplerOptions {
        freq_hz: 4999,
        ring_bytes: ring_bytes_for(4999, cpus, 65536),
        ..opts()
    })?;
    // Three spinning threads keep every CPU of a 2-CPU machine busy.
    let child = busy(&["threads", "5"])?;
    let pid = child.id();
    settle();
    let before = cpu_ticks(pid)?;
    sampler.add_target(pid)?;
    let events = collect(&mut sampler, Duration::from_secs(3))?;
    sampler.remove_target(pid)?;
    let ticks = cpu_ticks(pid)? - before;
    let lost: u64 = sampler.lost_per_cpu()?.iter().sum();
    finish(child)?;
    let samples = samples(&events);
    // Ring bytes of a record (the kernel's 8-byte record header included).
    let ring_bytes: usize = samples
        .iter()
        .map(|s| {
            8 + HEADER_SIZE + USER_REGS_SIZE + 8 * (s.user.len() + s.kernel.len()) + s.stack.len()
        })
        .sum();
    ensure!(
        lost == 0,
        "{lost} samples lost, {} kept ({} ring bytes each)",
        samples.len(),
        ring_bytes / samples.len().max(1)
    );
    // A tick samples whatever runs on its CPU: the target gets one per 200 µs of the
    // CPU time it had (other work on the machine takes the rest).
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    let expected = ticks * 4999 / hz;
    ensure!(
        expected >= 4999 && samples.len() as u64 * 10 >= expected * 8,
        "{} samples for {ticks} ticks of CPU time (~{expected} expected)",
        samples.len()
    );
    ensure!(
        samples
            .iter()
            .all(|s| s.regs.is_some() && !s.stack.is_empty())
    );
    Ok(())
}

#[test]
fn stack_caps_above_the_program_s_limit_are_refused() -> Result<()> {
    let _serial = serial();
    let error = BpfSampler::load(&SamplerOptions {
        stack_cap: 65537,
        ..opts()
    })
    .err()
    .context("a 65537-byte cap was accepted")?;
    ensure!(
        matches!(error, BpfError::InvalidOptions(_)),
        "unexpected error: {error}"
    );
    Ok(())
}

#[test]
fn bpf_run_time_is_counted_for_every_sample() -> Result<()> {
    let _serial = serial();
    // Statistics count while this descriptor is open (no global sysctl to restore).
    let _stats = aya::sys::enable_stats(aya::sys::Stats::RunTime)
        .map_err(|e| anyhow::anyhow!("cannot enable BPF statistics: {e}"))?;
    // The worst case for copies of up to 8 KiB: a 16 KiB stack capped at 8 KiB, so the
    // program copies the whole cap and walks the frame pointers too.
    let mut sampler = sampler(SamplerOptions {
        freq_hz: 4999,
        stack_cap: 8192,
        ring_bytes: ring_bytes_for(4999, 2, 8192),
        ..opts()
    })?;
    let child = busy(&["padded", "5"])?;
    settle();
    sampler.add_target(child.id())?;
    let events = collect(&mut sampler, Duration::from_secs(2))?;
    sampler.stop_sampling()?;
    let (run_time, runs) = sampler.sample_program_run_time()?;
    finish(child)?;
    let samples = samples(&events);
    ensure!(samples.len() >= 2000, "only {} samples", samples.len());
    ensure!(
        samples.iter().filter(|s| s.stack.len() == 8192).count() * 100 >= samples.len() * 99,
        "the copies are not 8 KiB"
    );
    // Every sample is a run of the program, so the kernel's statistics cover them all
    // (runs for other processes' ticks, ~90 ns each, come on top). What a run costs is
    // measured by the benchmark (tools/bench/run, scenario 7: BPF time per sample, beside
    // perf), not asserted here: a bound on time failed CI on a loaded machine (4.9 µs
    // against 3 µs) with nothing slower in the program.
    ensure!(
        runs >= samples.len() as u64 && run_time > Duration::ZERO,
        "{runs} runs ({run_time:?}) for {} samples",
        samples.len()
    );
    eprintln!(
        "{:?} of BPF time per 8 KiB sample ({runs} runs, {run_time:?})",
        run_time / samples.len() as u32
    );
    Ok(())
}

#[test]
fn the_verifier_accepts_the_sampling_programs_without_walking_every_path() -> Result<()> {
    let _serial = serial();
    // Verifying costs ~0.4 µs per instruction the verifier processes (157 ms for
    // 421,884, kernel 6.18, 2-CPU VM), and every recorder start pays it. The copying
    // program's page loop once made the verifier walk each page of each path through the
    // program, 421,884 instructions; it now takes 740 (hs_sample: 376). 10,000 is ~4 ms,
    // the start-up budget of a few milliseconds, and 13x what it needs today: room for
    // other kernels' verifiers and for edits, none for a loop or branches whose paths
    // multiply again. A count, not a time: it does not vary with the machine's load. (It
    // leaves out the ~1.1 ms the verifier spends on the one load of task->mm: see
    // frame_limits in ebpf/hotspot.bpf.c.)
    const MAX_VERIFIED_INSNS: u32 = 10_000;
    for (name, stack_cap) in [("hs_sample_stack", 65536), ("hs_sample", 0)] {
        let mut sampler = BpfSampler::load(&SamplerOptions {
            stack_cap,
            ..opts()
        })
        .map_err(|e| anyhow::anyhow!("BPF is unavailable, cannot run the BPF tests: {e}"))?;
        ensure!(sampler.copies_stacks() == (stack_cap > 0));
        let verified = sampler
            .sample_program_verified_insns()?
            .context("the kernel does not report verified_insns (5.16+)")?;
        ensure!(
            verified <= MAX_VERIFIED_INSNS,
            "{name}: the verifier processed {verified} instructions (at most {MAX_VERIFIED_INSNS} \
             expected): loading it now costs ~{} ms at every start",
            verified / 2500
        );
    }
    Ok(())
}
