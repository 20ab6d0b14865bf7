//! Real-kernel tests of the BPF sampler: they load and attach `ebpf/hotspot.bpf.o`, so they need
//! root (or CAP_BPF + CAP_PERFMON) and FAIL, never skip, when BPF is unavailable.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use hotspot_recorder::bpf::raw::{HEADER_SIZE, USER_REGS_SIZE};
use hotspot_recorder::bpf::{
    BpfError, BpfSampler, EventSource, RawEvent, RawSample, SamplerOptions, StackEnd, UserRegs,
    ring_bytes_for,
};

/// Kernel text and data on x86-64 live in the upper half of the address space.
const KERNEL_SPACE_START: u64 = 0xffff_8000_0000_0000;

/// A workload with frame pointers, so user stacks are deep and have known shapes.
const BUSY_C: &str = r#"
#include <alloca.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double deadline;
static volatile unsigned long sink;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}
__attribute__((noinline)) static void leaf(void) { for (int i = 0; i < 100000; i++) sink += i; }
__attribute__((noinline)) static void middle(void) { leaf(); }
__attribute__((noinline)) static void spin(void) { while (now() < deadline) middle(); }
static void *thread_main(void *arg) {
    (void)arg;
    /* The thread pointer (glibc's struct pthread), for tests to check copies against. */
    if (getenv("BUSY_PRINT_TCB")) {
        printf("%lx\n", (unsigned long)pthread_self());
        fflush(stdout);
    }
    spin();
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    double seconds = atof(argv[2]);
    if (!strcmp(argv[1], "spin")) {
        deadline = now() + seconds;
        spin();
    } else if (!strcmp(argv[1], "padded")) {
        /* 16 KiB of main's own frame: a stack deeper than a small cap, whose
         * return addresses into this file (spin's, main's calls) still lie
         * within its first few hundred bytes. */
        /* alloca, not an array: an array would enlarge main's frame in every
         * mode. Volatile stores: a memset of dead memory is optimised away. */
        volatile char *pad = alloca(16384);
        for (unsigned i = 0; i < 16384; i += 512) pad[i] = 1;
        deadline = now() + seconds;
        spin();
        pad[0] = 0;
    } else if (!strcmp(argv[1], "hole")) {
        /* The same, never written but at its ends: its inner pages were never
         * faulted in, a hole in the stack no copy can read. */
        volatile char *hole = alloca(16384);
        hole[0] = hole[16383] = 1;
        deadline = now() + seconds;
        spin();
        hole[1] = 0;
    } else if (!strcmp(argv[1], "threads")) {
        pthread_t t[3];
        deadline = now() + seconds;
        for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, thread_main, NULL);
        for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    } else if (!strcmp(argv[1], "fork") && argc == 4) {
        usleep(300000); /* let the test make us a target first */
        pid_t child = fork();
        if (child == 0) {
            FILE *f = fopen(argv[3], "w");
            if (!f) _exit(3);
            fprintf(f, "%d\n", getpid());
            fclose(f);
            deadline = now() + seconds;
            spin();
            _exit(0);
        }
        waitpid(child, NULL, 0);
    } else {
        return 2;
    }
    return 0;
}
"#;

/// Tests share two CPUs: running them one at a time keeps their timing meaningful.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn scratch_dir() -> PathBuf {
    std::env::temp_dir().join(format!("hotspot-bpf-test-{}", std::process::id()))
}

fn busy_binary() -> Result<&'static Path> {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    if let Some(bin) = BIN.get() {
        return Ok(bin);
    }
    let dir = scratch_dir();
    std::fs::create_dir_all(&dir)?;
    let source = dir.join("busy.c");
    let bin = dir.join("busy");
    std::fs::write(&source, BUSY_C)?;
    let status = Command::new("cc")
        .args(["-O1", "-g", "-fno-omit-frame-pointer", "-pthread", "-o"])
        .arg(&bin)
        .arg(&source)
        .status()
        .context("running cc to build the test workload")?;
    ensure!(status.success(), "cc failed to build the test workload");
    Ok(BIN.get_or_init(|| bin))
}

fn busy(args: &[&str]) -> Result<Child> {
    Command::new(busy_binary()?)
        .args(args)
        .spawn()
        .context("spawning the test workload")
}

/// Loads and starts, failing the test with the loader's own message when BPF is unavailable.
fn sampler(opts: SamplerOptions) -> Result<BpfSampler> {
    let mut sampler = BpfSampler::load(&opts)
        .map_err(|e| anyhow::anyhow!("BPF is unavailable, cannot run the BPF tests: {e}"))?;
    sampler
        .start()
        .map_err(|e| anyhow::anyhow!("BPF is unavailable, cannot attach: {e}"))?;
    Ok(sampler)
}

fn opts() -> SamplerOptions {
    SamplerOptions {
        freq_hz: 499,
        ..SamplerOptions::default()
    }
}

/// Polls for `duration`, collecting everything.
fn collect(sampler: &mut BpfSampler, duration: Duration) -> Result<Vec<RawEvent>> {
    let mut events = Vec::new();
    let end = Instant::now() + duration;
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        sampler.poll(left.min(Duration::from_millis(100)), &mut events)?;
    }
    Ok(events)
}

/// Polls until `done` holds for an event, or fails after `limit`.
fn collect_until(
    sampler: &mut BpfSampler,
    limit: Duration,
    done: impl Fn(&RawEvent) -> bool,
) -> Result<Vec<RawEvent>> {
    let mut events = Vec::new();
    let end = Instant::now() + limit;
    loop {
        let Some(left) = end.checked_duration_since(Instant::now()) else {
            bail!(
                "no awaited event within {limit:?}; got {} events",
                events.len()
            );
        };
        let seen = events.len();
        sampler.poll(left.min(Duration::from_millis(100)), &mut events)?;
        if events[seen..].iter().any(&done) {
            return Ok(events);
        }
    }
}

fn samples(events: &[RawEvent]) -> Vec<&RawSample> {
    events
        .iter()
        .filter_map(|e| match e {
            RawEvent::Sample(s) => Some(s),
            _ => None,
        })
        .collect()
}

fn comm(name: &str) -> [u8; 16] {
    let mut c = [0u8; 16];
    c[..name.len()].copy_from_slice(name.as_bytes());
    c
}

fn finish(mut child: Child) -> Result<()> {
    let _ = child.kill();
    child.wait()?;
    Ok(())
}

/// Frame-pointer mode: the kernel's walk only, as before stacks were copied.
fn fp_opts() -> SamplerOptions {
    SamplerOptions {
        stack_cap: 0,
        ..opts()
    }
}

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
    let table = hotspot_recorder::kallsyms::Kallsyms::read(Path::new("/proc/kallsyms"))?;
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

fn run_fork_target(follow_children: bool) -> Result<(u32, u32, Vec<RawEvent>, BpfSampler)> {
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
        events.iter().any(|e| matches!(e, RawEvent::Fork { parent: p, child: c, .. } if *p == parent && *c == child)),
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
            .any(|e| matches!(e, RawEvent::Exit { pid, .. } if *pid == child))
    );
    Ok(())
}

#[test]
fn does_not_follow_children_unless_asked() -> Result<()> {
    let _serial = serial();
    let (parent, child, events, sampler) = run_fork_target(false)?;
    ensure!(
        !events.iter().any(|e| matches!(e, RawEvent::Fork { .. })),
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
                .any(|e| matches!(e, RawEvent::Fork { child, .. } if child == tid)),
            "thread {tid} reported as a forked child"
        );
    }
    ensure!(targets.contains(&pid));
    // exec keeps the pid and renames the process.
    ensure!(
        events.iter().any(|e| matches!(e, RawEvent::Exec { pid: p, comm: c, .. } if *p == pid && *c == comm("busy"))),
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
        |e| matches!(e, RawEvent::Exit { pid: p, .. } if *p == pid),
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

// ---- Stack mode: user registers and the copied user stack ----

/// One line of `/proc/PID/maps`.
#[derive(Debug, Clone)]
struct Mapping {
    start: u64,
    end: u64,
    perms: String,
    path: String,
}

impl Mapping {
    fn contains(&self, addr: u64) -> bool {
        self.start <= addr && addr < self.end
    }
}

fn maps(pid: u32) -> Result<Vec<Mapping>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/maps"))?;
    text.lines()
        .map(|line| {
            let mut fields = line.split_whitespace();
            let range = fields.next().context("no range")?;
            let perms = fields.next().context("no perms")?.to_owned();
            let path = fields.nth(3).unwrap_or("").to_owned();
            let (start, end) = range.split_once('-').context("bad range")?;
            Ok(Mapping {
                start: u64::from_str_radix(start, 16)?,
                end: u64::from_str_radix(end, 16)?,
                perms,
                path,
            })
        })
        .collect()
}

fn mapping_of(maps: &[Mapping], addr: u64) -> Option<&Mapping> {
    maps.iter().find(|m| m.contains(addr))
}

fn stack_mapping(maps: &[Mapping]) -> Result<&Mapping> {
    maps.iter()
        .find(|m| m.path == "[stack]")
        .context("no [stack] mapping")
}

/// Lets a freshly spawned target get past its start-up (the dynamic loader faulting in
/// its stack and libraries), whose samples legitimately end their copies early.
fn settle() {
    std::thread::sleep(Duration::from_millis(200));
}

/// Checks the copy ended by `want`, allowing a copy ended by a fault at a page
/// boundary (a stack page that is not resident, e.g. being migrated) in at most 1% of
/// the samples.
fn check_ends(samples: &[&RawSample], want: StackEnd) -> Result<()> {
    let mut faults = 0;
    for s in samples {
        if s.stack_end == want {
            continue;
        }
        let regs = regs_of(s)?;
        ensure!(
            s.stack_end == StackEnd::Fault && (regs.sp + s.stack.len() as u64).is_multiple_of(4096),
            "copy {:#x}+{} ended by {:?}, not {want:?}",
            regs.sp,
            s.stack.len(),
            s.stack_end
        );
        faults += 1;
    }
    ensure!(
        faults * 100 <= samples.len(),
        "{faults} of {} copies ended by a fault",
        samples.len()
    );
    Ok(())
}

/// Field `n` (1-based, as in proc(5)) of `/proc/PID/stat`.
fn stat_field(pid: u32, n: usize) -> Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The command name (field 2) may hold spaces; the fields after it do not.
    let after = stat.rsplit_once(')').context("bad stat")?.1;
    let field = after.split_whitespace().nth(n - 3).context("short stat")?;
    Ok(field.parse()?)
}

/// User + system CPU time of a process so far, in clock ticks.
fn cpu_ticks(pid: u32) -> Result<u64> {
    Ok(stat_field(pid, 14)? + stat_field(pid, 15)?)
}

/// Where the main thread's frames end: just above its initial stack pointer
/// (`startstack`, where argc is), below the arguments, environment and auxiliary vector.
fn main_stack_top(pid: u32) -> Result<u64> {
    Ok(stat_field(pid, 28)? + 8)
}

fn regs_of(s: &RawSample) -> Result<UserRegs> {
    s.regs
        .with_context(|| format!("sample without user registers: {s:?}"))
}

/// The 8-byte words of a copied stack, by offset.
fn words(stack: &[u8]) -> impl Iterator<Item = (usize, u64)> + '_ {
    stack.chunks_exact(8).enumerate().map(|(i, w)| {
        let mut word = [0u8; 8];
        word.copy_from_slice(w);
        (i * 8, u64::from_ne_bytes(word))
    })
}

/// Builds `fixtures/NAME.c` the way tests/common builds fixtures.
fn fixture_binary(name: &str) -> Result<PathBuf> {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
    let dir = scratch_dir();
    std::fs::create_dir_all(&dir)?;
    let bin = dir.join(name);
    let status = Command::new("gcc")
        .args([
            "-O2",
            "-g",
            "-fno-omit-frame-pointer",
            "-fno-optimize-sibling-calls",
            "-pthread",
            "-I",
        ])
        .arg(&fixtures)
        .arg("-o")
        .arg(&bin)
        .arg(fixtures.join(format!("{name}.c")))
        .status()
        .context("running gcc to build a fixture")?;
    ensure!(status.success(), "gcc failed to build fixture {name}");
    Ok(bin)
}

#[test]
fn stack_mode_copies_the_registers_and_the_whole_live_stack() -> Result<()> {
    let _serial = serial();
    let mut sampler = sampler(opts())?;
    ensure!(
        sampler.copies_stacks(),
        "the default options copy no stacks"
    );
    // No environment: the stack above main is then small, well under the cap.
    let child = Command::new(busy_binary()?)
        .args(["spin", "5"])
        .env_clear()
        .spawn()?;
    let pid = child.id();
    settle();
    sampler.add_target(pid)?;
    let events = collect(&mut sampler, Duration::from_secs(1))?;
    let maps = maps(pid)?;
    let top = main_stack_top(pid)?;
    finish(child)?;

    let stack = stack_mapping(&maps)?;
    let samples = samples(&events);
    ensure!(samples.len() >= 100, "only {} samples", samples.len());
    for s in &samples {
        let regs = regs_of(s)?;
        ensure!(
            stack.contains(regs.sp),
            "sp {:#x} outside [stack] {:#x}-{:#x}",
            regs.sp,
            stack.start,
            stack.end
        );
        let code = mapping_of(&maps, regs.ip)
            .with_context(|| format!("ip {:#x} in no mapping", regs.ip))?;
        ensure!(
            code.perms.contains('x'),
            "ip {:#x} in non-executable {code:?}",
            regs.ip
        );
        ensure!(
            !s.stack.is_empty() && s.stack.len() <= 65536,
            "{} stack bytes",
            s.stack.len()
        );
        if s.stack_end != StackEnd::MappingEnd {
            continue; // checked below
        }
        // A shallow program's stack fits: the copy ends exactly at the top of its
        // frames, the word above the initial stack pointer.
        ensure!(
            regs.sp + s.stack.len() as u64 == top,
            "copy {:#x}+{} does not end at the frames' top {top:#x} (mapping end {:#x})",
            regs.sp,
            s.stack.len(),
            stack.end
        );
        // The copy holds every frame: the frame-pointer walk is not made.
        ensure!(s.user.is_empty(), "frame-pointer chain beside a whole copy");
        // The real stack: its last word is argc ("busy spin 5").
        ensure!(
            words(&s.stack).last().map(|(_, w)| w) == Some(3),
            "the copy does not end in argc"
        );
    }
    check_ends(&samples, StackEnd::MappingEnd)?;
    ensure!(sampler.malformed_records() == 0);
    Ok(())
}

#[test]
fn copied_bytes_hold_the_frame_records_of_the_kernels_walk() -> Result<()> {
    let _serial = serial();
    const CAP: u32 = 2048;
    let mut sampler = sampler(SamplerOptions {
        stack_cap: CAP,
        ..opts()
    })?;
    // A 16 KiB frame in main: the stack is larger than the cap, so the copy is capped and
    // the kernel walks the frame pointers too.
    let child = busy(&["padded", "5"])?;
    let pid = child.id();
    settle();
    sampler.add_target(pid)?;
    let events = collect(&mut sampler, Duration::from_secs(1))?;
    let maps = maps(pid)?;
    finish(child)?;

    let bin = busy_binary()?.to_str().context("path")?.to_owned();
    let text: Vec<&Mapping> = maps
        .iter()
        .filter(|m| m.path == bin && m.perms.contains('x'))
        .collect();
    ensure!(!text.is_empty(), "no executable mapping of {bin}");
    let samples = samples(&events);
    ensure!(samples.len() >= 100, "only {} samples", samples.len());
    let mut checked = 0;
    for s in &samples {
        let regs = regs_of(s)?;
        if s.stack_end != StackEnd::Cap {
            continue; // checked below
        }
        ensure!(s.stack.len() == CAP as usize, "{} bytes", s.stack.len());
        // The walk starts from the same registers the copy does.
        ensure!(
            s.user.first() == Some(&regs.ip),
            "chain {:x?} does not start at ip {:#x}",
            s.user,
            regs.ip
        );
        // Each return address the walk found in the fixture's code is a word of the
        // copy, at increasing offsets: the frame records themselves were copied.
        let mut from = 0;
        for &ret in &s.user[1..] {
            if !text.iter().any(|m| m.contains(ret)) {
                continue;
            }
            let at = words(&s.stack)
                .find(|&(off, w)| off >= from && w == ret)
                .map(|(off, _)| off)
                .with_context(|| {
                    format!(
                        "return address {ret:#x} of chain {:x?} not in the copy above offset {from}",
                        s.user
                    )
                })?;
            from = at + 8;
            checked += 1;
        }
    }
    check_ends(&samples, StackEnd::Cap)?;
    // spin → middle (→ leaf): at least one return address per sample.
    ensure!(
        checked >= samples.len(),
        "only {checked} return addresses checked in {} samples",
        samples.len()
    );
    Ok(())
}

#[test]
fn a_small_cap_copies_exactly_the_cap() -> Result<()> {
    let _serial = serial();
    let mut sampler = sampler(SamplerOptions {
        stack_cap: 256,
        ..opts()
    })?;
    let child = busy(&["spin", "5"])?;
    settle();
    sampler.add_target(child.id())?;
    let events = collect(&mut sampler, Duration::from_millis(500))?;
    finish(child)?;
    let samples = samples(&events);
    ensure!(samples.len() >= 50, "only {} samples", samples.len());
    check_ends(&samples, StackEnd::Cap)?;
    for s in samples.iter().filter(|s| s.stack_end == StackEnd::Cap) {
        ensure!(
            s.stack.len() == 256,
            "{} bytes under a 256-byte cap",
            s.stack.len()
        );
    }
    Ok(())
}

#[test]
fn a_page_never_faulted_in_ends_the_copy_and_keeps_what_precedes_it() -> Result<()> {
    let _serial = serial();
    let mut sampler = sampler(opts())?;
    let child = busy(&["hole", "5"])?;
    let pid = child.id();
    settle();
    sampler.add_target(pid)?;
    let events = collect(&mut sampler, Duration::from_millis(500))?;
    let maps = maps(pid)?;
    finish(child)?;

    let bin = busy_binary()?.to_str().context("path")?.to_owned();
    let text: Vec<&Mapping> = maps
        .iter()
        .filter(|m| m.path == bin && m.perms.contains('x'))
        .collect();
    let samples = samples(&events);
    ensure!(samples.len() >= 50, "only {} samples", samples.len());
    for s in &samples {
        let regs = regs_of(s)?;
        ensure!(
            s.stack_end == StackEnd::Fault && !s.stack.is_empty(),
            "copy of {} bytes ended by {:?}",
            s.stack.len(),
            s.stack_end
        );
        // Page by page: everything up to the hole is kept, and the hole starts a page.
        let end = regs.sp + s.stack.len() as u64;
        ensure!(
            end.is_multiple_of(4096),
            "the copy ends mid-page at {end:#x}"
        );
        ensure!(
            s.stack.len() < 16384,
            "{} bytes copied across the hole",
            s.stack.len()
        );
        // The copy could not hold the whole stack: the frame-pointer walk is there to
        // go on past the hole, and spin's call into main is in the bytes kept.
        ensure!(
            s.user.first() == Some(&regs.ip),
            "no frame-pointer walk: {:x?}",
            s.user
        );
        let beyond: Vec<u64> = s.user[1..]
            .iter()
            .copied()
            .filter(|&a| text.iter().any(|m| m.contains(a)))
            .collect();
        ensure!(
            beyond
                .iter()
                .any(|&ret| words(&s.stack).any(|(_, w)| w == ret)),
            "none of the chain's return addresses {beyond:x?} is in the copy"
        );
    }
    Ok(())
}

#[test]
fn thread_stacks_end_at_their_own_mapping() -> Result<()> {
    let _serial = serial();
    let mut sampler = sampler(opts())?;
    let mut child = Command::new(busy_binary()?)
        .args(["threads", "5"])
        .env("BUSY_PRINT_TCB", "1")
        .stdout(std::process::Stdio::piped())
        .spawn()?;
    let pid = child.id();
    let mut tcbs = Vec::new();
    let mut out = std::io::BufReader::new(child.stdout.take().context("stdout")?);
    for _ in 0..3 {
        let mut line = String::new();
        std::io::BufRead::read_line(&mut out, &mut line)?;
        tcbs.push(u64::from_str_radix(line.trim(), 16).context("thread pointer")?);
    }
    settle();
    sampler.add_target(pid)?;
    let events = collect(&mut sampler, Duration::from_secs(1))?;
    let maps = maps(pid)?;
    finish(child)?;

    let workers: Vec<_> = samples(&events)
        .into_iter()
        .filter(|s| s.tid != pid)
        .collect();
    ensure!(
        workers.len() >= 100,
        "only {} worker samples",
        workers.len()
    );
    for s in &workers {
        let regs = regs_of(s)?;
        let mapping = mapping_of(&maps, regs.sp)
            .with_context(|| format!("sp {:#x} in no mapping", regs.sp))?;
        // glibc's thread stacks are anonymous mappings of their own.
        ensure!(mapping.path.is_empty(), "thread stack in {mapping:?}");
        if s.stack_end != StackEnd::MappingEnd {
            continue; // checked below
        }
        // glibc puts the thread's control block (the thread pointer) and TLS at the
        // top of the mapping, above every frame: the copy ends at the thread pointer.
        let end = regs.sp + s.stack.len() as u64;
        ensure!(
            tcbs.contains(&end) && mapping.contains(end),
            "copy {:#x}+{} ends at none of the thread pointers {tcbs:x?} (mapping ends at {:#x})",
            regs.sp,
            s.stack.len(),
            mapping.end
        );
    }
    check_ends(&workers, StackEnd::MappingEnd)?;
    Ok(())
}

#[test]
fn kernel_mode_samples_carry_the_tasks_user_registers() -> Result<()> {
    let _serial = serial();
    let bin = fixture_binary("syscalls")?;
    let mut sampler = sampler(opts())?;
    let child = Command::new(&bin).arg("5").spawn()?;
    let pid = child.id();
    settle();
    sampler.add_target(pid)?;
    let events = collect(&mut sampler, Duration::from_secs(1))?;
    let maps = maps(pid)?;
    let top = main_stack_top(pid)?;
    finish(child)?;

    let stack = stack_mapping(&maps)?;
    let bin = bin.to_str().context("path")?.to_owned();
    let text: Vec<&Mapping> = maps
        .iter()
        .filter(|m| m.path == bin && m.perms.contains('x'))
        .collect();
    let samples = samples(&events);
    let in_kernel: Vec<&RawSample> = samples
        .iter()
        .copied()
        .filter(|s| !s.kernel.is_empty())
        .collect();
    ensure!(
        in_kernel.len() * 5 > samples.len() && samples.len() >= 100,
        "only {}/{} samples in the kernel",
        in_kernel.len(),
        samples.len()
    );
    for s in &in_kernel {
        // Saved on entry to the kernel: the user side is in glibc's write().
        let regs = regs_of(s)?;
        let code = mapping_of(&maps, regs.ip)
            .with_context(|| format!("ip {:#x} in no mapping", regs.ip))?;
        ensure!(
            code.path.contains("libc") && code.perms.contains('x'),
            "ip {:#x} in {code:?}, not libc's code",
            regs.ip
        );
        ensure!(stack.contains(regs.sp), "sp {:#x} outside [stack]", regs.sp);
        if s.stack_end != StackEnd::MappingEnd {
            continue; // checked below
        }
        ensure!(
            regs.sp + s.stack.len() as u64 == top,
            "copy {:#x}+{} does not end at the frames' top {top:#x}",
            regs.sp,
            s.stack.len()
        );
        // The stack above write() holds its callers' return addresses.
        ensure!(
            words(&s.stack[..s.stack.len().min(512)])
                .any(|(_, w)| text.iter().any(|m| m.contains(w))),
            "no return address into the fixture near sp"
        );
    }
    check_ends(&in_kernel, StackEnd::MappingEnd)?;
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
fn bpf_time_per_sample_stays_near_the_budget() -> Result<()> {
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
    // Every run is charged to the samples, so the runs for other processes' ticks
    // (~90 ns each) only make this an upper bound. The budget is 1.5 µs (measured
    // 1.2-1.5 µs on a 2-CPU VM); twice that means something got much slower.
    ensure!(
        runs >= samples.len() as u64,
        "{runs} runs for {} samples",
        samples.len()
    );
    let per_sample = run_time / samples.len() as u32;
    ensure!(
        per_sample <= Duration::from_nanos(3000),
        "{per_sample:?} of BPF time per 8 KiB sample ({runs} runs, {run_time:?})"
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
