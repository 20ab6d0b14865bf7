//! The live machine as the recording core sees it ([`Host`]): processes and mappings
//! from `/proc`, mapped files through `/proc/PID/map_files`, a target's code bytes with
//! `process_vm_readv`, kernel names through BPF or `/proc/kallsyms`, kernel build-ids
//! from `/sys`. The roots are parameters, so tests can stand a directory in for `/proc`.

use std::fs::File;
use std::path::{Path, PathBuf};

use hotspot_symbols::{ModuleFile, build_id};

use super::kernel_names::{BpfKernelSymbols, KernelSymbols};
use super::{machine, proc_maps};
use crate::event::Mapping;
use crate::host::{Host, KernelName, ProcessInfo};

/// `/proc`, `/sys` and the kernel's names.
#[derive(Debug)]
pub struct ProcHost {
    proc_root: PathBuf,
    sys_root: PathBuf,
    kernel: KernelSymbols,
    /// Where marks are dropped for this recording (`crate::live::marks`).
    marks: Option<PathBuf>,
}

impl ProcHost {
    /// The machine under these roots (`/proc`, `/sys` on a live one); kernel frames are
    /// named from `proc_root/kallsyms`, read at the first kernel frame.
    pub fn new(proc_root: impl Into<PathBuf>, sys_root: impl Into<PathBuf>) -> Self {
        let proc_root = proc_root.into();
        ProcHost {
            kernel: KernelSymbols::from_file(proc_root.join("kallsyms")),
            proc_root,
            sys_root: sys_root.into(),
            marks: None,
        }
    }

    /// The running machine.
    pub fn live() -> Self {
        Self::new("/proc", "/sys")
    }

    /// Takes marks dropped into `dir` (`hotspot mark`) for the recording.
    pub fn take_marks_from(&mut self, dir: PathBuf) {
        self.marks = Some(dir);
    }

    /// Names kernel frames through the kernel itself (see [`BpfKernelSymbols`]) instead
    /// of `/proc/kallsyms`.
    pub fn use_bpf_kernel_symbols(&mut self, bpf: BpfKernelSymbols) {
        self.kernel.use_bpf(bpf);
    }

    /// Reads `/proc/kallsyms` now (it is otherwise read at the first kernel frame): for
    /// when kernel frames will be named from it and privileges are about to be dropped.
    pub fn read_kallsyms_now(&mut self) {
        self.kernel.read_now();
    }
}

impl Host for ProcHost {
    fn take_marks(&mut self) -> Vec<hotspot_format::Mark> {
        self.marks
            .as_deref()
            .map(crate::live::marks::take)
            .unwrap_or_default()
    }

    fn now_ns(&self) -> u64 {
        machine::monotonic_ns()
    }

    fn wall_ns(&self) -> u64 {
        machine::wall_ns()
    }

    fn process(&mut self, pid: u32) -> ProcessInfo {
        read_process(&self.proc_root, pid)
    }

    fn mappings(&mut self, pid: u32) -> Option<Vec<Mapping>> {
        proc_maps::read_maps(&self.proc_root, pid)
    }

    fn open_mapping(&mut self, pid: u32, m: &Mapping) -> Option<ModuleFile> {
        let mapped = self
            .proc_root
            .join(pid.to_string())
            .join("map_files")
            .join(format!("{:x}-{:x}", m.start, m.end));
        ModuleFile::open_mapping(&mapped, Path::new(&m.path), m.inode)
    }

    fn read_mapped_file(&mut self, pid: u32, m: &Mapping, max_len: u64) -> Option<Vec<u8>> {
        use std::os::unix::fs::MetadataExt;
        let mapped = self
            .proc_root
            .join(pid.to_string())
            .join("map_files")
            .join(format!("{:x}-{:x}", m.start, m.end));
        // The file mapped, else the path if it still holds the same inode.
        let file = File::open(&mapped).ok().or_else(|| {
            let f = File::open(&m.path).ok()?;
            let md = f.metadata().ok()?;
            (m.inode == 0 || md.ino() == m.inode).then_some(f)
        })?;
        let len = file.metadata().ok()?.len();
        if len > max_len {
            return None;
        }
        super::elf_bytes::read_without_debug(&file, len)
    }

    fn still_at_path(&mut self, m: &Mapping) -> bool {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(&m.path).is_ok_and(|md| m.inode == 0 || md.ino() == m.inode)
    }

    fn read_memory(&mut self, pid: u32, addr: u64, buf: &mut [u8]) -> usize {
        read_target_memory(pid, addr, buf)
    }

    fn vdso_image(&mut self) -> Option<Vec<u8>> {
        own_vdso_image(&self.proc_root)
    }

    fn kernel_name(&mut self, addr: u64) -> Option<KernelName> {
        self.kernel.resolve(addr)
    }

    fn in_sampler(&mut self, addr: u64) -> bool {
        // A BPF program attached to a raw tracepoint runs under these.
        self.kernel.resolve(addr).is_some_and(|k| {
            k.name.starts_with("bpf_prog_")
                || k.name.starts_with("bpf_trace_run")
                || k.name.starts_with("__bpf_trace_")
        })
    }

    fn kernel_names_missing(&self) -> bool {
        self.kernel.missing()
    }

    fn kernel_build_id(&mut self, module: Option<&str>) -> Vec<u8> {
        let path = match module {
            None => self.sys_root.join("kernel/notes"),
            Some(m) => self
                .sys_root
                .join("module")
                .join(m)
                .join("notes/.note.gnu.build-id"),
        };
        std::fs::read(path)
            .ok()
            .and_then(|notes| build_id::of_notes(&notes))
            .unwrap_or_default()
    }

    fn alive(&mut self, pid: u32) -> bool {
        process_exists(pid)
    }
}

/// True while `pid` exists (zombies included, which are about to be reaped).
pub fn process_exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks for existence and permission.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// What /proc says about `pid`; fields of a process that is already gone stay empty.
fn read_process(proc_root: &Path, pid: u32) -> ProcessInfo {
    let dir = proc_root.join(pid.to_string());
    let name = std::fs::read_to_string(dir.join("comm"))
        .ok()
        .map(|s| s.trim_end_matches('\n').to_string());
    let cmdline = std::fs::read(dir.join("cmdline"))
        .map(|b| split_cmdline(&b))
        .unwrap_or_default();
    let exe = std::fs::read_link(dir.join("exe"))
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ppid = std::fs::read_to_string(dir.join("stat"))
        .ok()
        .and_then(|s| parse_ppid(&s))
        .unwrap_or(0);
    ProcessInfo {
        name,
        cmdline,
        exe,
        ppid,
    }
}

fn split_cmdline(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

/// `pid (comm) state ppid …`: comm may hold spaces and parentheses, so parse from the
/// last ')'.
fn parse_ppid(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_ascii_whitespace().nth(1)?.parse().ok()
}

/// Up to `buf.len()` bytes of `pid`'s memory at `addr` (as root, with
/// `process_vm_readv`: one call, no file descriptor kept); 0 when it cannot be read.
fn read_target_memory(pid: u32, addr: u64, buf: &mut [u8]) -> usize {
    let (Ok(pid), Ok(addr)) = (libc::pid_t::try_from(pid), usize::try_from(addr)) else {
        return 0;
    };
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: `local` describes `buf`, which outlives the call; `remote` is only read by
    // the kernel, in the target's address space, and a bad address is an error there.
    let n = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    usize::try_from(n).unwrap_or(0)
}

/// Our own vDSO's bytes: the kernel maps the same image into every process.
fn own_vdso_image(proc_root: &Path) -> Option<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let maps = std::fs::read_to_string(proc_root.join("self/maps")).ok()?;
    let line = maps.lines().find(|l| l.ends_with("[vdso]"))?;
    let (range, _) = line.split_once(' ')?;
    let (s, e) = range.split_once('-')?;
    let (s, e) = (
        u64::from_str_radix(s, 16).ok()?,
        u64::from_str_radix(e, 16).ok()?,
    );
    let mut mem = File::open(proc_root.join("self/mem")).ok()?;
    mem.seek(SeekFrom::Start(s)).ok()?;
    let mut buf = vec![0u8; usize::try_from(e.checked_sub(s)?).ok()?.min(1 << 20)];
    mem.read_exact(&mut buf).ok()?;
    Some(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ppid_survives_odd_comms() {
        assert_eq!(parse_ppid("42 (a) b) c) R 7 42 42 0"), Some(7));
        assert_eq!(parse_ppid("garbage"), None);
    }

    #[test]
    fn cmdline_splits_on_nul() {
        assert_eq!(split_cmdline(b"ls\0-l\0a b\0"), vec!["ls", "-l", "a b"]);
    }

    #[test]
    fn reads_our_own_process() {
        let me = std::process::id();
        let mut host = ProcHost::live();
        let info = host.process(me);
        assert_eq!(info.ppid, std::os::unix::process::parent_id());
        assert!(!info.exe.is_empty() && info.name.is_some());
        assert!(host.alive(me));
        assert!(host.mappings(me).is_some_and(|m| !m.is_empty()));
        assert!(host.vdso_image().is_some_and(|v| v.starts_with(b"\x7fELF")));
        // Our own code, read as a target's would be.
        let code = reads_our_own_process as *const () as u64;
        let mut buf = [0u8; 16];
        assert_eq!(host.read_memory(me, code, &mut buf), 16);
        // SAFETY: 16 bytes of this function's own code, which is mapped and readable.
        let direct = unsafe { std::slice::from_raw_parts(code as *const u8, 16) };
        assert_eq!(&buf[..], direct);
        let gone = ProcHost::new("/nonexistent-proc", "/nonexistent-sys").process(me);
        assert_eq!(gone, ProcessInfo::default());
    }
}
