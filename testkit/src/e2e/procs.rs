//! Ending only what a test started: a command spawned as the leader of a new process group
//! takes every process it starts (hotspot's target and the target's children) into that
//! group, and the test ends the group by its id. Nothing is found by name, so a test can
//! never end a process of another test, of another user, or of the machine.
//!
//! Linux does not hand out a pid while a process group of that id still has a member, so
//! the group id stays ours after its leader exits, as long as anything we started lives.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

/// A process group the test created; every member left is sent SIGKILL when it is dropped
/// (also when the test panics).
#[derive(Debug)]
pub struct ProcessGroup {
    pgid: u32,
}

impl ProcessGroup {
    /// Spawns `cmd` as the leader of a new process group.
    pub fn spawn(cmd: &mut Command) -> (Child, ProcessGroup) {
        let child = cmd
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        let pgid = child.id();
        (child, ProcessGroup { pgid })
    }

    /// The group's id (its leader's pid).
    pub fn id(&self) -> u32 {
        self.pgid
    }

    /// The pids of the processes still running in the group (zombies, which have ended
    /// and wait to be reaped, left out).
    pub fn members(&self) -> Vec<u32> {
        members_of(self.pgid)
            .into_iter()
            .filter(|&pid| !is_zombie(pid))
            .collect()
    }

    /// The members still running after up to `timeout`: a process sent SIGKILL a moment
    /// ago is still in the group (not yet a zombie) until its exit finishes, so "gone"
    /// needs a moment to become true; one never signalled stays.
    pub fn members_after(&self, timeout: std::time::Duration) -> Vec<u32> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = self.members();
            if left.is_empty() || std::time::Instant::now() >= deadline {
                return left;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// Sends `sig` to every member of the group.
    pub fn signal(&self, sig: libc::c_int) {
        // SAFETY: kill(2) with a negative pid signals the process group we created; it
        // has no memory effects. ESRCH (the group is empty) is fine.
        unsafe { libc::kill(-(self.pgid as libc::pid_t), sig) };
    }

    /// Sends SIGKILL to every member, then waits (up to 5 s) until the group is empty or
    /// holds only zombies.
    pub fn kill(&self) {
        self.signal(libc::SIGKILL);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while std::time::Instant::now() < deadline && !self.members().is_empty() {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if !self.members().is_empty() {
            self.kill();
        }
    }
}

/// Field `n` (1-based, as in proc(5)) of `/proc/PID/stat`, after the command name.
fn stat_field(pid: u32, n: usize) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The name (field 2) is in parentheses and may hold spaces or parentheses itself.
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split(' ').nth(n.checked_sub(3)?).map(str::to_owned)
}

fn is_zombie(pid: u32) -> bool {
    stat_field(pid, 3).is_none_or(|state| state == "Z" || state == "X")
}

/// Every process whose process group is `pgid`.
pub fn members_of(pgid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| stat_field(pid, 5).and_then(|g| g.parse().ok()) == Some(pgid))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_ends_its_members_and_nothing_else() {
        // A shell that ignores SIGTERM and starts a child: both are in the group.
        let (mut leader, group) =
            ProcessGroup::spawn(Command::new("sh").args(["-c", "trap '' TERM; sleep 60 & wait"]));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while group.members().len() < 2 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let members = group.members();
        assert_eq!(members.len(), 2, "{members:?}");
        assert!(members.contains(&leader.id()));
        assert!(
            !members.contains(&std::process::id()),
            "the test is not in it"
        );
        group.kill();
        let _ = leader.wait();
        assert!(group.members().is_empty(), "{:?}", group.members());
    }
}
