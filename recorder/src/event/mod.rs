//! What the recording core is fed: the recorder's own events, in time order, whichever
//! source produced them (the live BPF sampler decodes its ring records into these, the
//! tests script them, an importer would read them from a file). No kernel layout here.

mod mapping;
mod thread_times;

pub use mapping::{Mapping, MappingKind};
pub use thread_times::{OpenThreadTimes, times_since};

use hotspot_format::ThreadState;

/// A thread or command name as the kernel keeps it: up to 16 bytes, NUL padded, not
/// always UTF-8.
pub type Comm = [u8; 16];

/// One thing that happened to the traced processes, at a `CLOCK_MONOTONIC` time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A timer tick that interrupted a traced thread.
    Sample(StackSample),
    /// `--off-cpu`: a traced thread came back on the CPU after enough blocked time to
    /// make an off-CPU sample due.
    OffCpu(BlockedSample),
    /// `--off-cpu`: a traced thread's exact times, at its exit (`times.last_ns`).
    ThreadTimes {
        /// The thread.
        tid: u32,
        /// As the kernel kept them (see [`OpenThreadTimes::closed_at`]).
        times: OpenThreadTimes,
    },
    /// A traced process created a process that is now traced too.
    Fork {
        /// When the fork happened (`CLOCK_MONOTONIC` ns).
        time_ns: u64,
        /// The parent's tgid.
        parent: u32,
        /// The child's tgid.
        child: u32,
    },
    /// A traced process replaced its program with `execve`.
    Exec {
        /// When the exec happened (`CLOCK_MONOTONIC` ns).
        time_ns: u64,
        /// The process's tgid (unchanged by exec).
        pid: u32,
        /// The new program's command name.
        comm: Comm,
    },
    /// The last thread of a traced process exited.
    Exit {
        /// When the process exited (`CLOCK_MONOTONIC` ns).
        time_ns: u64,
        /// The process's tgid.
        pid: u32,
    },
    /// A process mapped executable memory (any process on the machine, traced or not:
    /// the core keeps the traced ones').
    Mmap {
        /// When (`CLOCK_MONOTONIC` ns).
        time_ns: u64,
        /// The process's tgid.
        pid: u32,
        mapping: Mapping,
    },
    /// A process passed the point of no return of an exec: its old mappings are gone and
    /// the mappings that follow are the new image's (any process on the machine; the
    /// traced ones also get an [`Event::Exec`] once the new image is mapped).
    NewImage {
        /// When (`CLOCK_MONOTONIC` ns): before the new image's mappings.
        time_ns: u64,
        /// The process's tgid.
        pid: u32,
    },
}

impl Event {
    /// When it happened (`CLOCK_MONOTONIC` ns): the order events are handled in.
    pub fn time_ns(&self) -> u64 {
        match self {
            Event::Sample(s) => s.time_ns,
            Event::OffCpu(o) => o.sample.time_ns,
            Event::ThreadTimes { times, .. } => times.last_ns,
            Event::Fork { time_ns, .. }
            | Event::Exec { time_ns, .. }
            | Event::Exit { time_ns, .. }
            | Event::Mmap { time_ns, .. }
            | Event::NewImage { time_ns, .. } => *time_ns,
        }
    }
}

/// One stack sample of one thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackSample {
    /// When the tick fired (`CLOCK_MONOTONIC` ns).
    pub time_ns: u64,
    /// Thread-group id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// CPU the thread ran on.
    pub cpu: u32,
    /// Thread name at sample time.
    pub comm: Comm,
    /// A frame-pointer walk of the user stack, leaf first; the first is the user PC.
    /// Empty in kernel threads, and when `stack` reached the top of the stack
    /// (`stack_end` is [`StackEnd::MappingEnd`]): the copy then holds every frame.
    pub user: Vec<u64>,
    /// Kernel frames, leaf first. Empty when the tick interrupted user code.
    pub kernel: Vec<u64>,
    /// The user registers; `None` in frame-pointer mode and for a task with no user
    /// context (a kernel thread).
    pub regs: Option<UserRegs>,
    /// The user stack: the bytes at `regs.sp .. regs.sp + stack.len()`. Empty without
    /// `regs`.
    pub stack: Vec<u8>,
    /// Why `stack` ends where it does. Without `regs` it is [`StackEnd::Cap`] in
    /// frame-pointer mode (nothing is copied) and [`StackEnd::NoVma`] for a task with
    /// no user context.
    pub stack_end: StackEnd,
    /// The thread's Python frames, for a sample of a process the source walks as Python
    /// (see [`crate::source::EventSource::walk_python`]); `None` for any other.
    pub python: Option<PythonStack>,
}

/// The Python frames of one sample, as the walk found them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PythonStack {
    /// Newest first.
    pub frames: Vec<PythonFrame>,
    /// Why the walk stopped.
    pub end: PythonEnd,
}

/// One Python frame: its code object and where in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PythonFrame {
    /// The code object's address in the process.
    pub code: u64,
    /// The frame's position: `f_lasti` (3.8–3.10, a C `int`), or the instruction
    /// pointer less `code` (3.11+).
    pub instr: u32,
    /// The oldest frame of its eval-loop call: the merge ends a run of Python frames
    /// here.
    pub entry: bool,
}

/// Why a Python walk stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PythonEnd {
    /// At the thread's oldest frame, or the thread runs no Python now.
    Bottom,
    /// At the frame cap with frames left (or a loop in the chain).
    Cap,
    /// A frame could not be read: the frames before it are kept.
    Fault,
    /// The thread has no thread state (it never ran Python).
    NoState,
    /// The state found belongs to another thread.
    Foreign,
    /// The key, its slot or the thread state could not be read.
    StateFault,
}

/// An off-CPU sample: the stack a thread blocked in, taken as it came back on the CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockedSample {
    /// `time_ns` is when the thread was switched back in; `regs` are the ones it saved
    /// entering the kernel, `kernel` the path it blocked in.
    pub sample: StackSample,
    /// The periods of blocked time this sample stands for (at least 1).
    pub periods: u32,
    /// The thread's state when it left the CPU for this wait.
    pub state: ThreadState,
}

/// The user registers an unwinder starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserRegs {
    /// Instruction pointer: the leaf frame, exact (not a return address).
    pub ip: u64,
    /// Stack pointer: the address of the first byte of [`StackSample::stack`].
    pub sp: u64,
    /// Frame pointer (`rbp`).
    pub bp: u64,
    /// `rbx`: some CFI computes the CFA from it (ld.so's `_dl_runtime_resolve`).
    pub rbx: u64,
    /// `r11`: LLVM's inline stack probe computes the CFA from it. In a kernel-mode
    /// sample taken in a system call it holds the flags (`syscall` overwrites it).
    pub r11: u64,
}

/// Why a sample's stack copy stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StackEnd {
    /// At the top of the stack: the copy holds every frame. That is the end of the
    /// stack pointer's mapping, or below it where the mapping's top holds no frames:
    /// the main thread's copy ends at the word above its initial stack pointer (argc;
    /// above lie the arguments, environment and auxiliary vector), a thread's at its
    /// thread pointer (above and just below lie its control block and TLS).
    MappingEnd,
    /// At the stack cap (or the mapping's end was unknown); the stack goes on past the
    /// copy.
    Cap,
    /// At a page that could not be read without faulting it in (not resident).
    Fault,
    /// The stack pointer is in no mapping: nothing was copied.
    NoVma,
}

/// A thread name as text (lossy where it is not UTF-8).
pub fn comm_str(comm: &Comm) -> String {
    let end = comm.iter().position(|&b| b == 0).unwrap_or(comm.len());
    String::from_utf8_lossy(&comm[..end]).into_owned()
}
