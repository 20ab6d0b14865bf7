//! Dropping privileges once the BPF programs are loaded and attached: the recorder keeps
//! only the capabilities it still uses and can never gain any back.
//!
//! After attach the recorder reads its targets' `/proc/PID/maps` (a ptrace-mode read:
//! CAP_SYS_PTRACE for processes of other users or with more capabilities), opens mapped
//! files through `/proc/PID/map_files/` (CAP_CHECKPOINT_RESTORE, CAP_SYS_ADMIN before
//! Linux 5.9) and by path (CAP_DAC_READ_SEARCH for files and directories root may not
//! read by mode), may read `/proc/kallsyms` when kernel frames cannot be named through BPF
//! (addresses show as zeros without CAP_SYSLOG), and reads BPF maps and runs its symbol
//! program through descriptors it already holds (no capability since Linux 6.5; CAP_BPF
//! before, when unprivileged BPF is disabled: probed, not guessed). Everything else goes: the effective, permitted, inheritable and ambient sets
//! are cut to that, the bounding set is emptied and `no_new_privs` is set, so not even an
//! exec could bring anything back.
//!
//! Capabilities belong to threads, not processes: every thread of the recorder (the
//! symbol worker, a live view's terminal thread) must drop its own. The thread calling
//! [`drop_after_attach`] makes each of the others do so from a signal handler (as glibc
//! does for setuid), then drops its own. A command started with `record -- CMD` is a
//! separate process forked before this and keeps what it had.

use std::io;
use std::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub const CAP_DAC_READ_SEARCH: u32 = 2;
pub const CAP_SETPCAP: u32 = 8;
pub const CAP_SYS_PTRACE: u32 = 19;
pub const CAP_SYS_ADMIN: u32 = 21;
pub const CAP_SYSLOG: u32 = 34;
pub const CAP_PERFMON: u32 = 38;
pub const CAP_BPF: u32 = 39;
pub const CAP_CHECKPOINT_RESTORE: u32 = 40;

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// How long to wait for the other threads to drop theirs.
const THREAD_TIMEOUT: Duration = Duration::from_secs(2);

/// What [`drop_after_attach`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dropped {
    /// Permitted capabilities before, as a bit mask.
    pub before: u64,
    /// Capabilities kept (effective and permitted), as a bit mask.
    pub kept: u64,
    /// The threads that dropped theirs, this one included.
    pub threads: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum PrivilegeError {
    #[error("dropping privileges: {what} failed")]
    Syscall {
        what: &'static str,
        #[source]
        source: io::Error,
    },
    #[error("dropping privileges: {0} of the recorder's threads did not drop theirs in time")]
    Threads(usize),
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// A thread's capability sets as 64-bit masks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Caps {
    pub effective: u64,
    pub permitted: u64,
    pub inheritable: u64,
}

/// The calling thread's capability sets.
pub(crate) fn capget() -> io::Result<Caps> {
    let mut header = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: capget(2) with a v3 header writes two CapData entries, which `data` holds.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_capget,
            &mut header as *mut CapHeader,
            data.as_mut_ptr(),
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let join = |lo: u32, hi: u32| u64::from(lo) | (u64::from(hi) << 32);
    Ok(Caps {
        effective: join(data[0].effective, data[1].effective),
        permitted: join(data[0].permitted, data[1].permitted),
        inheritable: join(data[0].inheritable, data[1].inheritable),
    })
}

/// capset(2) for the calling thread; returns 0 or an errno. Async-signal-safe.
fn capset(c: Caps) -> i32 {
    let mut header = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [
        CapData {
            effective: c.effective as u32,
            permitted: c.permitted as u32,
            inheritable: c.inheritable as u32,
        },
        CapData {
            effective: (c.effective >> 32) as u32,
            permitted: (c.permitted >> 32) as u32,
            inheritable: (c.inheritable >> 32) as u32,
        },
    ];
    // SAFETY: capset(2) with a v3 header reads two CapData entries from `data`.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_capset,
            &mut header as *mut CapHeader,
            data.as_ptr(),
        )
    };
    if rc == 0 { 0 } else { errno() }
}

fn errno() -> i32 {
    // SAFETY: reading the calling thread's errno.
    unsafe { *libc::__errno_location() }
}

/// The highest capability number this kernel knows.
fn last_cap() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(CAP_BPF)
}

fn bit(cap: u32) -> u64 {
    1u64 << cap
}

/// The capabilities the recorder needs after attach on a kernel whose highest
/// capability is `last_cap`, not counting CAP_BPF (see [`drop_after_attach`]).
pub fn needed(last_cap: u32) -> u64 {
    let map_files = if last_cap >= CAP_CHECKPOINT_RESTORE {
        CAP_CHECKPOINT_RESTORE
    } else {
        CAP_SYS_ADMIN
    };
    bit(CAP_SYS_PTRACE) | bit(CAP_DAC_READ_SEARCH) | bit(map_files) | bit(CAP_SYSLOG)
}

/// What the calling thread drops to: kept in `KEEP`, the highest capability in `LAST`.
static KEEP: AtomicU64 = AtomicU64::new(0);
static LAST: AtomicU64 = AtomicU64::new(0);
/// Threads that ran [`drop_own`] from the signal handler.
static ACKS: AtomicUsize = AtomicUsize::new(0);
/// The first errno a thread met (0: none).
static FAILED: AtomicI32 = AtomicI32::new(0);

/// Drops the calling thread's privileges to `keep`: no_new_privs, an empty bounding set,
/// no ambient or inheritable capabilities. Only system calls: async-signal-safe. Returns
/// 0 or the errno of the step that failed.
fn drop_own(keep: u64, last: u32) -> i32 {
    // SAFETY: prctl with integer arguments only.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return errno();
        }
        // Emptying the bounding set needs CAP_SETPCAP; without it there is nothing to
        // gain by exec anyway (no_new_privs is set).
        for cap in 0..=last {
            if libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) != 0
                && errno() != libc::EPERM
                && errno() != libc::EINVAL
            {
                return errno();
            }
        }
        // Kernels without ambient capabilities (before 4.3) say EINVAL: nothing to clear.
        let _ = libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        );
    }
    capset(Caps {
        effective: keep,
        permitted: keep,
        inheritable: 0,
    })
}

extern "C" fn on_signal(_: libc::c_int) {
    let saved = errno();
    let rc = drop_own(
        KEEP.load(Ordering::SeqCst),
        LAST.load(Ordering::SeqCst) as u32,
    );
    if rc != 0 {
        let _ = FAILED.compare_exchange(0, rc, Ordering::SeqCst, Ordering::SeqCst);
    }
    ACKS.fetch_add(1, Ordering::SeqCst);
    // SAFETY: restoring the interrupted code's errno.
    unsafe { *libc::__errno_location() = saved };
}

fn gettid() -> libc::pid_t {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

fn other_threads(seen: &[libc::pid_t]) -> Vec<libc::pid_t> {
    let me = gettid();
    std::fs::read_dir("/proc/self/task")
        .map(|dir| {
            dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .filter(|&t| t != me && !seen.contains(&t))
                .collect()
        })
        .unwrap_or_default()
}

/// Drops every capability but those the recorder needs after attach, in every thread.
///
/// `bpf_maps_work` must perform a BPF map operation through an existing descriptor and
/// say whether it succeeded: it is called once with CAP_BPF lowered from the effective set
/// (still permitted) to learn whether this kernel needs it kept.
///
/// Call it once, from one thread, with no other thread of the process dropping or
/// raising capabilities meanwhile.
pub fn drop_after_attach(
    mut bpf_maps_work: impl FnMut() -> bool,
) -> Result<Dropped, PrivilegeError> {
    let sys = |what| move |source| PrivilegeError::Syscall { what, source };
    let before = capget().map_err(sys("capget"))?;
    let last = last_cap();
    let mut keep = needed(last) & before.permitted;
    // Probe: are map operations through held descriptors allowed without CAP_BPF (and
    // CAP_SYS_ADMIN, which implies it)?
    let bpf = if last >= CAP_BPF {
        bit(CAP_BPF)
    } else {
        bit(CAP_SYS_ADMIN)
    };
    let probing = Caps {
        effective: before.effective & !(bit(CAP_BPF) | bit(CAP_SYS_ADMIN)),
        ..before
    };
    if before.effective & bpf != 0 {
        let rc = capset(probing);
        if rc != 0 {
            return Err(sys("capset")(io::Error::from_raw_os_error(rc)));
        }
        let works = bpf_maps_work();
        let rc = capset(before);
        if rc != 0 {
            return Err(sys("capset")(io::Error::from_raw_os_error(rc)));
        }
        if !works {
            keep |= bpf & before.permitted;
        }
    }

    KEEP.store(keep, Ordering::SeqCst);
    LAST.store(u64::from(last), Ordering::SeqCst);
    ACKS.store(0, Ordering::SeqCst);
    FAILED.store(0, Ordering::SeqCst);
    let sig = libc::SIGRTMIN() + 6;
    let handler: extern "C" fn(libc::c_int) = on_signal;
    // SAFETY: installing a handler that only makes system calls and touches atomics.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        if libc::sigaction(sig, &sa, &mut old) != 0 {
            return Err(sys("sigaction")(io::Error::last_os_error()));
        }
    }
    let result = signal_other_threads(sig);
    // SAFETY: putting back the disposition saved above.
    unsafe { libc::sigaction(sig, &old, std::ptr::null_mut()) };
    let others = result?;
    let rc = drop_own(keep, last);
    if rc != 0 {
        return Err(sys("dropping this thread's capabilities")(
            io::Error::from_raw_os_error(rc),
        ));
    }
    match FAILED.load(Ordering::SeqCst) {
        0 => Ok(Dropped {
            before: before.permitted,
            kept: keep,
            threads: others + 1,
        }),
        rc => Err(sys("dropping another thread's capabilities")(
            io::Error::from_raw_os_error(rc),
        )),
    }
}

/// Makes every other thread run the handler; returns how many did. Threads started
/// meanwhile copied the capabilities of a thread that may not have dropped yet, so the
/// list is read again until it has nobody new.
fn signal_other_threads(sig: libc::c_int) -> Result<usize, PrivilegeError> {
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    let mut done: Vec<libc::pid_t> = Vec::new();
    let mut sent = 0usize;
    loop {
        let new = other_threads(&done);
        if new.is_empty() {
            return Ok(sent);
        }
        for tid in new {
            done.push(tid);
            // SAFETY: tgkill to a thread of our own process with a handled signal.
            let rc = unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, sig) };
            // ESRCH: the thread exited meanwhile, nothing to drop.
            if rc == 0 {
                sent += 1;
            } else if errno() != libc::ESRCH {
                return Err(PrivilegeError::Syscall {
                    what: "tgkill",
                    source: io::Error::last_os_error(),
                });
            }
        }
        let deadline = Instant::now() + THREAD_TIMEOUT;
        while ACKS.load(Ordering::SeqCst) < sent {
            if Instant::now() >= deadline {
                return Err(PrivilegeError::Threads(sent - ACKS.load(Ordering::SeqCst)));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_what_reading_targets_needs() {
        let new = needed(40);
        assert_eq!(
            new,
            bit(CAP_SYS_PTRACE)
                | bit(CAP_DAC_READ_SEARCH)
                | bit(CAP_CHECKPOINT_RESTORE)
                | bit(CAP_SYSLOG)
        );
        assert_eq!(new & bit(CAP_SYS_ADMIN), 0);
        // Before CAP_CHECKPOINT_RESTORE (5.9), map_files needs CAP_SYS_ADMIN.
        assert_ne!(needed(39) & bit(CAP_SYS_ADMIN), 0);
    }

    #[test]
    fn reads_our_own_caps() {
        let c = capget().expect("capget");
        assert_eq!(
            c.effective & !c.permitted,
            0,
            "effective is within permitted"
        );
    }
}
