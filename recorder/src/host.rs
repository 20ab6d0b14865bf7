//! What the recording core may ask of the machine its events come from, beyond the events
//! themselves: the processes and mappings that existed before the first event, the files
//! they map, a few bytes of a target's code, kernel names, the clock. The live recorder
//! answers from `/proc`, `/sys` and the kernel ([`crate::live::ProcHost`]); an importer
//! would answer from what its file holds. The core asks nothing else of the machine.

use hotspot_symbols::ModuleFile;

use crate::event::Mapping;

/// What is known of one process.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessInfo {
    /// Its name (`None`: unknown; the sampled thread name stands in).
    pub name: Option<String>,
    pub cmdline: Vec<String>,
    /// Path of its executable (empty: unknown).
    pub exe: String,
    /// Its parent's pid (0: unknown).
    pub ppid: u32,
}

/// The kernel symbol an address falls in, and how far into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelName {
    pub name: String,
    pub offset: u64,
    /// Kernel module name, `None` for the kernel image.
    pub module: Option<String>,
}

/// The machine's answers. Every method is asked off the hot path (a process or mapping
/// seen for the first time, an address no mapping explains, a kernel address not named
/// yet) and may fail by answering "unknown".
pub trait Host: std::fmt::Debug {
    /// `CLOCK_MONOTONIC` ns now: the events' clock.
    fn now_ns(&self) -> u64;
    /// Wall-clock ns since the Unix epoch now.
    fn wall_ns(&self) -> u64;
    /// What the machine says of process `pid` now (unknown fields left empty).
    fn process(&mut self, pid: u32) -> ProcessInfo;
    /// `pid`'s executable mappings now, sorted by start; `None` when the process is gone.
    fn mappings(&mut self, pid: u32) -> Option<Vec<Mapping>>;
    /// Opens the file `pid` maps at `m`, even if its path was since replaced or deleted
    /// where the machine still has it.
    fn open_mapping(&mut self, pid: u32, m: &Mapping) -> Option<ModuleFile>;
    /// The bytes of the file `pid` maps at `m` (as [`Host::open_mapping`] finds it), if it
    /// is at most `max_len` bytes long: what an interpreter is recognised from. Its DWARF
    /// may be left as zeros (`live::elf_bytes`): nothing recognised from it reads that.
    fn read_mapped_file(&mut self, pid: u32, m: &Mapping, max_len: u64) -> Option<Vec<u8>> {
        let _ = (pid, m, max_len);
        None
    }
    /// Whether the path of file mapping `m` still holds the file mapped (same inode):
    /// false once it was deleted or replaced.
    fn still_at_path(&mut self, m: &Mapping) -> bool;
    /// Reads up to `buf.len()` bytes of `pid`'s memory at `addr` (code without
    /// call-frame information, to recognise a trampoline); returns how many were read.
    fn read_memory(&mut self, pid: u32, addr: u64, buf: &mut [u8]) -> usize;
    /// The vDSO image the kernel maps into every process.
    fn vdso_image(&mut self) -> Option<Vec<u8>>;
    /// The kernel symbol holding `addr`.
    fn kernel_name(&mut self, addr: u64) -> Option<KernelName>;
    /// Whether kernel address `addr` is in the machinery that takes off-CPU samples (the
    /// sampler's own frames at the leaf of their stacks) rather than in the kernel path
    /// a thread blocked in.
    fn in_sampler(&mut self, addr: u64) -> bool;
    /// Kernel frames needed names and the machine gave none (no privilege to see them).
    fn kernel_names_missing(&self) -> bool;
    /// Marks dropped for this recording since the last call (`hotspot mark`), oldest
    /// first; none by default.
    fn take_marks(&mut self) -> Vec<hotspot_format::Mark> {
        Vec::new()
    }
    /// The build-id of the kernel image (`None`) or of a kernel module.
    fn kernel_build_id(&mut self, module: Option<&str>) -> Vec<u8>;
    /// Whether process `pid` still exists.
    fn alive(&mut self, pid: u32) -> bool;
}

/// A host that knows what a test tells it, and a clock that ticks once per reading.
#[cfg(test)]
#[derive(Debug, Default)]
pub struct FakeHost {
    pub clock: std::cell::Cell<u64>,
    pub processes: std::collections::HashMap<u32, ProcessInfo>,
    pub mappings: std::collections::HashMap<u32, Vec<Mapping>>,
    /// How many times each pid's mappings were asked for.
    pub mapping_reads: std::collections::HashMap<u32, usize>,
}

#[cfg(test)]
impl Host for FakeHost {
    fn now_ns(&self) -> u64 {
        self.clock.set(self.clock.get() + 1);
        self.clock.get()
    }
    fn wall_ns(&self) -> u64 {
        self.now_ns()
    }
    fn process(&mut self, pid: u32) -> ProcessInfo {
        self.processes.get(&pid).cloned().unwrap_or_default()
    }
    fn mappings(&mut self, pid: u32) -> Option<Vec<Mapping>> {
        *self.mapping_reads.entry(pid).or_default() += 1;
        self.mappings.get(&pid).cloned()
    }
    fn open_mapping(&mut self, _: u32, _: &Mapping) -> Option<ModuleFile> {
        None
    }
    fn still_at_path(&mut self, _: &Mapping) -> bool {
        true
    }
    fn read_memory(&mut self, _: u32, _: u64, _: &mut [u8]) -> usize {
        0
    }
    fn vdso_image(&mut self) -> Option<Vec<u8>> {
        None
    }
    fn kernel_name(&mut self, _: u64) -> Option<KernelName> {
        None
    }
    fn in_sampler(&mut self, _: u64) -> bool {
        false
    }
    fn kernel_names_missing(&self) -> bool {
        false
    }
    fn kernel_build_id(&mut self, _: Option<&str>) -> Vec<u8> {
        Vec::new()
    }
    fn alive(&mut self, pid: u32) -> bool {
        self.processes.contains_key(&pid)
    }
}
