//! The recording machine's clocks, and the facts about it its capture's session header
//! holds.

use std::path::Path;

use hotspot_format::SessionHeader;

/// CLOCK_MONOTONIC in ns: the clock BPF's `bpf_ktime_get_ns` uses.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// Wall-clock time in ns since the Unix epoch.
pub fn wall_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    if rc != 0 {
        return 0;
    }
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// The session header for a recording starting now.
pub fn header(
    proc_root: &Path,
    freq_hz: u32,
    targets: &[u32],
    all: bool,
    command_line: Vec<String>,
) -> SessionHeader {
    let read = |p: &str| {
        std::fs::read_to_string(proc_root.join(p))
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1);
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    SessionHeader {
        host: read("sys/kernel/hostname"),
        kernel_release: read("sys/kernel/osrelease"),
        arch: std::env::consts::ARCH.to_string(),
        cpus: online_cpus(proc_root).unwrap_or(cpus),
        page_size: u32::try_from(page).unwrap_or(4096),
        freq_hz,
        targets: targets.to_vec(),
        all_processes: all,
        command_line,
        start_wall_ns: wall_ns(),
        start_mono_ns: monotonic_ns(),
        recorder_version: env!("CARGO_PKG_VERSION").to_string(),
    }
}

fn online_cpus(_proc_root: &Path) -> Option<u32> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").ok()?;
    let mut n = 0u32;
    for part in text.trim().split(',') {
        match part.split_once('-') {
            Some((a, b)) => n += b.parse::<u32>().ok()?.checked_sub(a.parse::<u32>().ok()?)? + 1,
            None => {
                part.parse::<u32>().ok()?;
                n += 1
            }
        }
    }
    Some(n)
}
