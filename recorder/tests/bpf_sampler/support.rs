//! What the BPF sampler's tests share: a C workload with frame pointers (built once),
//! the sampler's options and set-up, collecting its events, and one test at a time.

use super::*;

/// Kernel text and data on x86-64 live in the upper half of the address space.
pub(crate) const KERNEL_SPACE_START: u64 = 0xffff_8000_0000_0000;

/// A workload with frame pointers, so user stacks are deep and have known shapes.
pub(crate) const BUSY_C: &str = r#"
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
pub(crate) fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(crate) fn scratch_dir() -> PathBuf {
    std::env::temp_dir().join(format!("hotspot-bpf-test-{}", std::process::id()))
}

pub(crate) fn busy_binary() -> Result<&'static Path> {
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

pub(crate) fn busy(args: &[&str]) -> Result<Child> {
    Command::new(busy_binary()?)
        .args(args)
        .spawn()
        .context("spawning the test workload")
}

/// Loads and starts, failing the test with the loader's own message when BPF is unavailable.
pub(crate) fn sampler(opts: SamplerOptions) -> Result<BpfSampler> {
    let mut sampler = BpfSampler::load(&opts)
        .map_err(|e| anyhow::anyhow!("BPF is unavailable, cannot run the BPF tests: {e}"))?;
    sampler
        .start()
        .map_err(|e| anyhow::anyhow!("BPF is unavailable, cannot attach: {e}"))?;
    Ok(sampler)
}

pub(crate) fn opts() -> SamplerOptions {
    SamplerOptions {
        freq_hz: 499,
        ..SamplerOptions::default()
    }
}

/// Polls for `duration`, collecting everything.
pub(crate) fn collect(sampler: &mut BpfSampler, duration: Duration) -> Result<Vec<Event>> {
    let mut events = Vec::new();
    let end = Instant::now() + duration;
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        sampler.poll(left.min(Duration::from_millis(100)), &mut events)?;
    }
    Ok(events)
}

/// Polls until `done` holds for an event, or fails after `limit`.
pub(crate) fn collect_until(
    sampler: &mut BpfSampler,
    limit: Duration,
    done: impl Fn(&Event) -> bool,
) -> Result<Vec<Event>> {
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

pub(crate) fn samples(events: &[Event]) -> Vec<&StackSample> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Sample(s) => Some(s),
            _ => None,
        })
        .collect()
}

pub(crate) fn comm(name: &str) -> [u8; 16] {
    let mut c = [0u8; 16];
    c[..name.len()].copy_from_slice(name.as_bytes());
    c
}

pub(crate) fn finish(mut child: Child) -> Result<()> {
    let _ = child.kill();
    child.wait()?;
    Ok(())
}

/// Frame-pointer mode: the kernel's walk only, as before stacks were copied.
pub(crate) fn fp_opts() -> SamplerOptions {
    SamplerOptions {
        stack_cap: 0,
        ..opts()
    }
}

/// Lets a freshly spawned target get past its start-up (the dynamic loader faulting in
/// its stack and libraries), whose samples legitimately end their copies early.
pub(crate) fn settle() {
    std::thread::sleep(Duration::from_millis(200));
}

/// Field `n` (1-based, as in proc(5)) of `/proc/PID/stat`.
pub(crate) fn stat_field(pid: u32, n: usize) -> Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The command name (field 2) may hold spaces; the fields after it do not.
    let after = stat.rsplit_once(')').context("bad stat")?.1;
    let field = after.split_whitespace().nth(n - 3).context("short stat")?;
    Ok(field.parse()?)
}

/// User + system CPU time of a process so far, in clock ticks.
pub(crate) fn cpu_ticks(pid: u32) -> Result<u64> {
    Ok(stat_field(pid, 14)? + stat_field(pid, 15)?)
}
