//! Starting `record -- CMD`: the child is forked stopped at a gate and only execs CMD
//! once its pid is in the BPF filter, so its first instruction is covered.
//!
//! std's `Command::spawn` waits for the exec to happen, which would deadlock with a gate
//! in `pre_exec`; hence a plain fork/exec here.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::RecorderError;

/// How [`GatedChild::end`] ended a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// It exited by itself (before any signal from us).
    Exited,
    /// It exited on SIGTERM.
    Terminated,
    /// It ignored SIGTERM and was killed.
    Killed,
}

/// A child waiting at the gate (until [`GatedChild::release`]).
#[derive(Debug)]
pub struct GatedChild {
    pid: libc::pid_t,
    cmd: String,
    gate: Option<OwnedFd>,
    exec_status: Option<OwnedFd>,
    reaped: Option<i32>,
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pipe2 just returned these two fds, owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

impl GatedChild {
    /// Forks a child that will exec `argv` once released.
    pub fn spawn(argv: &[String]) -> Result<Self, RecorderError> {
        let Some(prog) = argv.first() else {
            return Err(RecorderError::Other(
                "no command given after -- (usage: hotspot record -o FILE -- CMD ARGS…)".into(),
            ));
        };
        let spawn_err = |source| RecorderError::Spawn {
            cmd: prog.clone(),
            source,
        };
        if !prog.contains('/') && which(prog).is_none() {
            return Err(spawn_err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "command not found in PATH",
            )));
        }
        let cargs: Vec<CString> = argv
            .iter()
            .map(|a| CString::new(a.as_bytes()))
            .collect::<Result<_, _>>()
            .map_err(|_| {
                spawn_err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "argument contains a NUL byte",
                ))
            })?;
        let mut ptrs: Vec<*const libc::c_char> = cargs.iter().map(|c| c.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        let (gate_r, gate_w) = pipe().map_err(spawn_err)?;
        let (st_r, st_w) = pipe().map_err(spawn_err)?;
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: after fork the child only calls async-signal-safe functions (prctl,
        // getppid, read, execvp, write, _exit) on memory prepared before the fork.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(spawn_err(std::io::Error::last_os_error()));
        }
        if pid == 0 {
            // SAFETY: see above; every pointer refers to memory allocated before fork.
            unsafe {
                // If the recorder dies before opening the gate, do not run unprofiled.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if libc::getppid() != parent {
                    libc::_exit(126);
                }
                let mut b = 0u8;
                loop {
                    let n = libc::read(gate_r.as_raw_fd(), (&raw mut b).cast(), 1);
                    if n == 1 {
                        break;
                    }
                    if n == 0 || *libc::__errno_location() != libc::EINTR {
                        libc::_exit(126);
                    }
                }
                libc::prctl(libc::PR_SET_PDEATHSIG, 0);
                libc::execvp(ptrs[0], ptrs.as_ptr());
                let err = *libc::__errno_location();
                libc::write(st_w.as_raw_fd(), (&raw const err).cast(), size_of::<i32>());
                libc::_exit(127);
            }
        }
        drop(gate_r);
        drop(st_w);
        Ok(GatedChild {
            pid,
            cmd: prog.clone(),
            gate: Some(gate_w),
            exec_status: Some(st_r),
            reaped: None,
        })
    }

    /// [`GatedChild::spawn`] with the child's stdin on `/dev/null` and its stdout and
    /// stderr in the file `out` (created or truncated): for when the terminal is not the
    /// command's (a live view owns it). Our own descriptors are put back afterwards.
    pub fn spawn_with_output(argv: &[String], out: &Path) -> Result<Self, RecorderError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| RecorderError::Io { path, source }
        };
        let log = std::fs::File::create(out).map_err(io(out))?;
        let null = std::fs::File::open("/dev/null").map_err(io(Path::new("/dev/null")))?;
        let mut saved = [-1; 3];
        for (fd, slot) in saved.iter_mut().enumerate() {
            // SAFETY: dup of a standard descriptor; the copy is closed below.
            *slot = unsafe { libc::dup(fd as libc::c_int) };
        }
        // SAFETY: dup2 onto the standard descriptors from files that stay open meanwhile.
        unsafe {
            libc::dup2(null.as_raw_fd(), 0);
            libc::dup2(log.as_raw_fd(), 1);
            libc::dup2(log.as_raw_fd(), 2);
        }
        let child = Self::spawn(argv);
        for (fd, &copy) in saved.iter().enumerate() {
            if copy >= 0 {
                // SAFETY: restoring from the copies made above, then closing them.
                unsafe {
                    libc::dup2(copy, fd as libc::c_int);
                    libc::close(copy);
                }
            }
        }
        child
    }

    pub fn pid(&self) -> u32 {
        self.pid as u32
    }

    /// Opens the gate and waits until the child has exec'd its command (or failed to).
    pub fn release(&mut self) -> Result<(), RecorderError> {
        let cmd = self.cmd.clone();
        let spawn_err = |source| RecorderError::Spawn {
            cmd: cmd.clone(),
            source,
        };
        if let Some(gate) = self.gate.take() {
            let one = 1u8;
            // SAFETY: writing one byte from a valid local to an fd we own.
            if unsafe { libc::write(gate.as_raw_fd(), (&raw const one).cast(), 1) } != 1 {
                return Err(spawn_err(std::io::Error::last_os_error()));
            }
        }
        if let Some(st) = self.exec_status.take() {
            let mut err = 0i32;
            // SAFETY: reading into a valid local; EOF (0) means the exec succeeded
            // (the CLOEXEC pipe closed).
            let n = unsafe { libc::read(st.as_raw_fd(), (&raw mut err).cast(), size_of::<i32>()) };
            if n == size_of::<i32>() as isize {
                self.wait();
                return Err(spawn_err(std::io::Error::from_raw_os_error(err)));
            }
        }
        Ok(())
    }

    /// The exit status if the child has exited (reaping it), without blocking.
    pub fn try_wait(&mut self) -> Option<i32> {
        if self.reaped.is_none() {
            let mut status = 0;
            // SAFETY: waitpid on our own child with a valid status pointer.
            if unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) } == self.pid {
                self.reaped = Some(status);
            }
        }
        self.reaped
    }

    /// Waits for the child to exit and returns its wait status.
    pub fn wait(&mut self) -> i32 {
        while self.reaped.is_none() {
            let mut status = 0;
            // SAFETY: as in try_wait, blocking.
            let r = unsafe { libc::waitpid(self.pid, &mut status, 0) };
            if r == self.pid {
                self.reaped = Some(status);
            } else if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                self.reaped = Some(-1);
            }
        }
        self.reaped.unwrap_or(-1)
    }

    /// Ends the child with the recording: gives it `settle` to exit by itself (a Ctrl-C
    /// from the terminal reached it too), then SIGTERM, then SIGKILL after `grace`; waits
    /// for it and says how it ended. The processes it started (a shell's commands) get
    /// the same signals, so that none is left running once the command is gone.
    pub fn end(&mut self, settle: Duration, grace: Duration) -> Ending {
        if self.wait_for(settle) {
            return Ending::Exited;
        }
        // Found before any signal: once the command dies its children are re-parented.
        let tree = descendants(self.pid);
        signal_all(self.pid, &tree, libc::SIGTERM);
        let ended = self.wait_for(grace);
        let left: Vec<libc::pid_t> = tree.into_iter().filter(|&p| alive(p)).collect();
        if ended && left.is_empty() {
            return Ending::Terminated;
        }
        signal_all(self.pid, &left, libc::SIGKILL);
        self.wait();
        Ending::Killed
    }

    /// Polls for the child's exit for up to `limit`; true once it is reaped.
    fn wait_for(&mut self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            if self.try_wait().is_some() {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The exit code (128+signal for a killed child), once reaped.
    pub fn exit_code(&self) -> Option<i32> {
        let s = self.reaped?;
        Some(if libc::WIFEXITED(s) {
            libc::WEXITSTATUS(s)
        } else if libc::WIFSIGNALED(s) {
            128 + libc::WTERMSIG(s)
        } else {
            -1
        })
    }
}

/// Sends `sig` to `pid` (our child, unless reaped) and to `others` (its descendants).
fn signal_all(pid: libc::pid_t, others: &[libc::pid_t], sig: libc::c_int) {
    for &p in std::iter::once(&pid).chain(others) {
        // SAFETY: kill(2) with a valid signal; a pid that is gone is an error we ignore.
        unsafe { libc::kill(p, sig) };
    }
}

/// True while `pid` exists and is not a zombie.
fn alive(pid: libc::pid_t) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let rest = &s[s.rfind(')')? + 1..];
            rest.split_ascii_whitespace()
                .next()
                .map(|state| state != "Z")
        })
        .unwrap_or(false)
}

/// Every process below `root`, from /proc's parent links (children before
/// grandchildren).
fn descendants(root: libc::pid_t) -> Vec<libc::pid_t> {
    let mut parent_of = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Some(pid) = e
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<libc::pid_t>().ok())
            else {
                continue;
            };
            let ppid = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    let rest = &s[s.rfind(')')? + 1..];
                    rest.split_ascii_whitespace()
                        .nth(1)?
                        .parse::<libc::pid_t>()
                        .ok()
                });
            if let Some(ppid) = ppid {
                parent_of.push((pid, ppid));
            }
        }
    }
    let mut out = Vec::new();
    let mut frontier = vec![root];
    // Bounded by the number of processes: each is added at most once.
    while let Some(p) = frontier.pop() {
        for &(child, ppid) in &parent_of {
            if ppid == p && !out.contains(&child) && child != root {
                out.push(child);
                frontier.push(child);
            }
        }
    }
    out
}

fn which(prog: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(prog))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_waits_for_the_gate_then_runs() {
        let mut g =
            GatedChild::spawn(&["sh".to_string(), "-c".into(), "exit 3".into()]).expect("spawn");
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(g.try_wait().is_none(), "must wait at the gate");
        g.release().expect("release");
        g.wait();
        assert_eq!(g.exit_code(), Some(3));
    }

    #[test]
    fn ending_escalates_from_sigterm_to_sigkill() {
        let short = Duration::from_millis(50);
        let mut g = GatedChild::spawn(&["sleep".to_string(), "30".into()]).expect("spawn");
        g.release().expect("release");
        assert_eq!(g.end(short, Duration::from_secs(5)), Ending::Terminated);
        assert_eq!(g.exit_code(), Some(128 + libc::SIGTERM));
        let mut g = GatedChild::spawn(&[
            "sh".to_string(),
            "-c".into(),
            "trap '' TERM; while :; do sleep 1; done".into(),
        ])
        .expect("spawn");
        g.release().expect("release");
        // Let the shell install its trap and start its child before it is signalled.
        std::thread::sleep(Duration::from_millis(200));
        let tree = descendants(g.pid() as libc::pid_t);
        assert!(!tree.is_empty(), "the shell's sleep");
        assert_eq!(g.end(short, short), Ending::Killed);
        assert_eq!(g.exit_code(), Some(128 + libc::SIGKILL));
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            tree.iter().all(|&p| !alive(p)),
            "the shell's children were ended too: {tree:?}"
        );
        let mut g = GatedChild::spawn(&["true".to_string()]).expect("spawn");
        g.release().expect("release");
        assert_eq!(g.end(Duration::from_secs(5), short), Ending::Exited);
        assert_eq!(g.exit_code(), Some(0));
    }

    #[test]
    fn missing_command_is_a_clear_error() {
        let err =
            GatedChild::spawn(&["definitely-not-a-command-xyz".to_string()]).expect_err("fails");
        assert!(
            err.to_string().contains("definitely-not-a-command-xyz"),
            "{err}"
        );
        let mut g = GatedChild::spawn(&["/nonexistent/prog".to_string()]).expect("forks");
        let err = g.release().expect_err("exec fails");
        assert!(err.to_string().contains("/nonexistent/prog"), "{err}");
    }
}
