//! The record kinds a capture is made of: the logical data model, independent of framing.
//!
//! Every record is encoded as `kind (varint) · body length (varint) · postcard body`
//! inside a block (see `SPEC.md`). Ids (`StringId`, `ModuleId`, `FrameId`, `StackId`)
//! are assigned by the writer, dense from 0, and are only meaningful within one capture.

use serde::{Deserialize, Serialize};

/// Interned string id (see [`Record::String`]).
pub type StringId = u32;
/// Module id (see [`Module`]).
pub type ModuleId = u32;
/// Frame id (see [`Frame`]).
pub type FrameId = u32;
/// Stack id (see [`Stack`]).
pub type StackId = u32;

/// Written first in every capture (and repeated by the writer so a lost block cannot lose it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct SessionHeader {
    /// Host name of the recording machine.
    pub host: String,
    /// `uname -r` of the recording machine.
    pub kernel_release: String,
    /// Architecture, as `std::env::consts::ARCH` spells it (`x86_64`, `aarch64`).
    pub arch: String,
    /// Online CPUs when recording started.
    pub cpus: u32,
    /// Page size in bytes.
    pub page_size: u32,
    /// Sampling frequency in Hz.
    pub freq_hz: u32,
    /// Target pids given on the command line (empty for `--all`).
    pub targets: Vec<u32>,
    /// Whether every process on the machine was recorded.
    pub all_processes: bool,
    /// The recorder's own command line.
    pub command_line: Vec<String>,
    /// Start time, nanoseconds since the Unix epoch.
    pub start_wall_ns: u64,
    /// Start time on CLOCK_MONOTONIC, in ns: sample timestamps are on this clock.
    pub start_mono_ns: u64,
    /// Version of the hotspot that wrote the capture.
    pub recorder_version: String,
}

/// A process seen by the recorder. A later record with the same pid replaces an earlier
/// one (this is how `exec` is recorded).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Process {
    pub pid: u32,
    /// Parent pid, 0 when unknown.
    pub ppid: u32,
    pub name: String,
    pub cmdline: Vec<String>,
    pub exe: String,
    /// Monotonic ns when the recorder first saw it (or it started, when known).
    pub start_ns: u64,
}

/// A thread seen by the recorder. A later record with the same tid and another name is
/// a rename at `time_ns`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Thread {
    pub tid: u32,
    pub pid: u32,
    pub name: String,
    /// Monotonic ns at which this name was first seen.
    pub time_ns: u64,
}

/// What kind of object a module is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum ModuleKind {
    /// An ELF file mapped into a process (executable or shared library).
    #[default]
    Elf,
    /// The kernel image (`vmlinux`).
    Kernel,
    /// A loadable kernel module.
    KernelModule,
    /// The vDSO.
    Vdso,
    /// Anonymous executable memory: JIT code, or anything without a file.
    Jit,
}

impl ModuleKind {
    /// True for the kernel and kernel modules.
    pub fn is_kernel(self) -> bool {
        matches!(self, ModuleKind::Kernel | ModuleKind::KernelModule)
    }
}

/// A code object that frames point into.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Module {
    pub id: ModuleId,
    pub kind: ModuleKind,
    /// Path on the recording machine (`[kernel.kallsyms]`, `[vdso]`, module name for kernel modules).
    pub path: String,
    /// GNU build-id (normally 20 bytes), empty when the object has none.
    pub build_id: Vec<u8>,
}

/// Where a frame is, in machine-independent terms.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FrameAddr {
    /// User code: offset into the module's file (for JIT modules: the address itself,
    /// which is what `/tmp/perf-PID.map` names).
    FileOffset(u64),
    /// Kernel code: symbol name and offset from the symbol's start; never a raw address.
    KernelSymbol { symbol: StringId, offset: u64 },
}

/// One distinct code location.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frame {
    pub id: FrameId,
    pub module: ModuleId,
    pub addr: FrameAddr,
}

/// A distinct call stack: frame ids leaf first (kernel frames, if any, come before user
/// frames). A sample was taken in kernel mode iff its leaf frame is in a kernel module.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stack {
    pub id: StackId,
    pub frames: Vec<FrameId>,
}

/// One sample: the logical view of a row of a [`SampleBatch`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Sample {
    /// CLOCK_MONOTONIC ns.
    pub time_ns: u64,
    pub tid: u32,
    pub cpu: u32,
    pub stack: StackId,
}

/// Samples, stored column by column on disk (see `SPEC.md`, "Sample batches").
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SampleBatch {
    pub samples: Vec<Sample>,
}

/// A source location inside a symbol.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct SourceLoc {
    /// Source file path as the debug info has it; `None` when unknown.
    pub file: Option<StringId>,
    /// 1-based line, 0 when unknown.
    pub line: u32,
}

/// An inlined call inside a frame's function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct InlinedFn {
    pub function: StringId,
    /// Where the code at the frame's address is, inside this inlined function.
    pub loc: SourceLoc,
}

/// The symbol of one frame, resolved on the recording machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Symbol {
    pub frame: FrameId,
    /// Demangled function name.
    pub function: StringId,
    /// Source location of the address within `function` (its call site when `inlined` is
    /// not empty).
    pub loc: SourceLoc,
    /// Inlined functions at this address, outermost first.
    pub inlined: Vec<InlinedFn>,
}

/// Samples the kernel could not hand over (ring-buffer full), counted per CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Lost {
    /// Monotonic ns when the loss was noticed.
    pub time_ns: u64,
    pub cpu: u32,
    /// Samples lost since the previous `Lost` record for this CPU.
    pub count: u64,
}

/// Mapping events the kernel dropped (its rings were full; added in 1.2): frames of the
/// processes they were about may be unnamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct LostMappings {
    /// Monotonic ns when the loss was noticed.
    pub time_ns: u64,
    /// Events lost since the previous `LostMappings` record.
    pub count: u64,
}

/// A process exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ProcessExit {
    pub pid: u32,
    pub time_ns: u64,
}

/// One entry of the seek index: where a block is and what time range it covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct IndexEntry {
    /// Byte offset of the block's sync marker in the file.
    pub offset: u64,
    /// Block sequence number.
    pub seq: u64,
    /// Earliest and latest sample time in the block (0, 0 when it has no samples).
    pub first_ns: u64,
    pub last_ns: u64,
    pub samples: u32,
}

/// Seek index for the blocks written since the previous index (or, at finish, all blocks).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Index {
    /// True for the final index written by `finish`, which lists every block.
    pub complete: bool,
    pub entries: Vec<IndexEntry>,
}

/// Written once when the writer finishes cleanly; its absence means the capture was cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct End {
    pub samples: u64,
    pub lost: u64,
    pub blocks: u64,
    pub end_wall_ns: u64,
    pub end_mono_ns: u64,
}

/// How the recorder unwound user stacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum UnwindMethod {
    /// The kernel's frame-pointer walk: cheap, wrong wherever code has no frame pointers,
    /// and its stacks carry no marker saying where they stopped short.
    #[default]
    FramePointers,
    /// Call-frame information (`.eh_frame`, `.debug_frame`) over a copy of the user stack:
    /// a stack that could not be completed ends in a marker frame naming why.
    Cfi,
}

/// How user stacks were unwound (added in 1.1; a definition, written in the first block).
/// A capture without it was unwound by frame pointers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Unwinding {
    pub method: UnwindMethod,
    /// Most bytes of user stack copied per sample (0 with frame pointers).
    pub stack_cap: u32,
    /// The module whose frames are markers rather than code: each one ends a stack that
    /// stopped short, and its `Symbol` names why (`[truncated: stack larger than
    /// --stack-cap]`). `None` when no stack can stop short with a reason.
    pub markers: Option<ModuleId>,
}

/// Why a thread was off the CPU: its state when it was switched out (added in 1.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum ThreadState {
    /// `S`: an interruptible sleep (futex, nanosleep, poll, a socket or pipe read), and the
    /// rarer states that are not waits for the CPU or the disk (stopped, traced).
    #[default]
    Sleeping,
    /// `D`: an uninterruptible sleep (disk I/O, some page faults, `TASK_KILLABLE` waits).
    Uninterruptible,
    /// `R`: preempted while runnable: waiting for a CPU.
    Runnable,
}

impl ThreadState {
    /// Every state, in the order reports list them.
    pub const ALL: [ThreadState; 3] = [
        ThreadState::Sleeping,
        ThreadState::Uninterruptible,
        ThreadState::Runnable,
    ];

    /// The letter `ps` and `/proc/PID/stat` use.
    pub fn letter(self) -> char {
        match self {
            ThreadState::Sleeping => 'S',
            ThreadState::Uninterruptible => 'D',
            ThreadState::Runnable => 'R',
        }
    }

    /// The byte of the state column (SPEC.md §6.1).
    pub fn code(self) -> u8 {
        match self {
            ThreadState::Sleeping => 1,
            ThreadState::Uninterruptible => 2,
            ThreadState::Runnable => 3,
        }
    }

    /// The state of a state-column byte; `None` for a byte the format does not define.
    pub fn from_code(code: u8) -> Option<ThreadState> {
        match code {
            1 => Some(ThreadState::Sleeping),
            2 => Some(ThreadState::Uninterruptible),
            3 => Some(ThreadState::Runnable),
            _ => None,
        }
    }
}

/// One interval of blocked time, sampled: the logical view of a row of an
/// [`OffCpuBatch`] (added in 1.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OffCpuSample {
    /// `time_ns` is when the wait ended (the thread was switched back in); `stack` is the
    /// stack it blocked in; `cpu` the CPU it came back on.
    pub sample: Sample,
    /// The periods of blocked time this sample stands for (at least 1): the thread's
    /// blocked time crossed that many multiples of [`OffCpu::period_ns`] in this wait.
    pub periods: u32,
    /// The thread's state when it left the CPU.
    pub state: ThreadState,
}

/// Off-CPU samples, stored like [`SampleBatch`] plus a periods and a state column (see
/// `SPEC.md`, §6.1).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OffCpuBatch {
    pub samples: Vec<OffCpuSample>,
}

/// The capture recorded off-CPU time (added in 1.3; a definition, written in the first
/// block). A capture without it has no off-CPU data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct OffCpu {
    /// The time one off-CPU period stands for, in ns: `1e9 / freq_hz`, the same as one
    /// CPU sample.
    pub period_ns: u64,
}

/// Exact on-CPU and blocked time of one thread, measured in the kernel at every context
/// switch (added in 1.3). Written when the thread exits and, for the threads still alive,
/// when the recording ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ThreadTimes {
    pub tid: u32,
    pub pid: u32,
    /// Monotonic ns from which the thread was accounted: the session start, or the thread's
    /// start when it started later.
    pub first_ns: u64,
    /// Monotonic ns to which it was accounted: its exit, or the end of the recording.
    pub last_ns: u64,
    pub on_cpu_ns: u64,
    /// Off the CPU in state S, D and R (see [`ThreadState`]).
    pub sleeping_ns: u64,
    pub uninterruptible_ns: u64,
    pub runnable_ns: u64,
    /// True when `last_ns` is the thread's exit.
    pub exited: bool,
}

impl ThreadTimes {
    /// Off-CPU ns in `state`.
    pub fn off_cpu_ns(&self, state: ThreadState) -> u64 {
        match state {
            ThreadState::Sleeping => self.sleeping_ns,
            ThreadState::Uninterruptible => self.uninterruptible_ns,
            ThreadState::Runnable => self.runnable_ns,
        }
    }

    /// Off-CPU ns in every state.
    pub fn total_off_cpu_ns(&self) -> u64 {
        self.sleeping_ns
            .saturating_add(self.uninterruptible_ns)
            .saturating_add(self.runnable_ns)
    }

    /// On-CPU plus off-CPU ns.
    pub fn wall_ns(&self) -> u64 {
        self.on_cpu_ns.saturating_add(self.total_off_cpu_ns())
    }
}

/// Off-CPU samples and thread-time records the kernel could not hand over (its ring was
/// full), all CPUs together (added in 1.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct LostOffCpu {
    /// Monotonic ns when the loss was noticed.
    pub time_ns: u64,
    /// Records lost since the previous `LostOffCpu` record.
    pub count: u64,
}

/// A language whose interpreted frames the recorder put in a capture (added in 1.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum Language {
    /// CPython.
    #[default]
    Python,
}

/// What a module is to an interpreter (added in 1.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum InterpreterRole {
    /// Its frames are the interpreted program's functions, put by the recorder in place
    /// of the interpreter's frames that ran them: each `Symbol`'s function is the
    /// qualified name, its location the source file and line.
    #[default]
    Frames,
    /// Its code is the interpreter itself (the native frames between interpreted ones).
    Runtime,
}

/// A module an interpreter's frames are in, or that is an interpreter (added in 1.5; a
/// definition keyed by module).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct InterpreterModule {
    pub module: ModuleId,
    pub language: Language,
    pub role: InterpreterRole,
}

/// Whether the recorder walked a process's interpreted frames (added in 1.5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum InterpreterStatus {
    /// Its frames were walked and merged into its stacks.
    #[default]
    Walked,
    /// Not walked: its stacks are native only, for this reason.
    Unsupported { reason: String },
}

/// One process's interpreter, and how its interpreted frames fared (added in 1.5).
/// Written when the recorder recognises the interpreter, then with its counts when the
/// process exits or the recording ends; for one `(pid, start_ns)` the last in file order
/// holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct InterpreterProcess {
    pub pid: u32,
    /// The `Process` version (its `start_ns`) this is about.
    pub start_ns: u64,
    pub language: Language,
    /// The file the interpreter is in (an executable or a `libpython`).
    pub path: String,
    /// `3.11`, as far as the file tells it; empty when unknown.
    pub version: String,
    pub status: InterpreterStatus,
    /// Samples of the process taken while its frames were walked (CPU and off-CPU).
    pub samples: u64,
    /// Of those, stacks whose interpreted frames were merged in.
    pub merged: u64,
    /// Stacks whose interpreted frames did not match the interpreter's native frames:
    /// kept native, with a mark.
    pub mismatched: u64,
    /// Stacks of threads running no interpreted code at the time.
    pub without_frames: u64,
    /// Interpreted frames whose code could not be read (named as unresolved).
    pub unresolved_frames: u64,
    /// Stacks deeper than the recorder's frame cap (cut, with a marker).
    pub cut: u64,
}

/// A feature the recording went without because the running kernel could not load it
/// (added in 1.4; a definition, keyed by `feature`, written in the first block). The
/// recording went on with what could load; readers say what is missing and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct FeatureOff {
    /// Which feature ([`feature`]); a reader names a code it does not know by its number.
    pub feature: u32,
    /// What the recording did instead, in words (`frame-pointer stacks`); empty when the
    /// feature is simply absent.
    pub instead: String,
    /// Why, in one line: the kernel's refusal as the recorder read it.
    pub reason: String,
}

impl FeatureOff {
    /// What is off, what was done instead and why, in one line: what `hotspot record`
    /// prints when it happens and `hotspot info` shows of the capture.
    pub fn line(&self) -> String {
        let name = feature::name(self.feature)
            .map_or_else(|| format!("feature {}", self.feature), str::to_owned);
        let instead = if self.instead.is_empty() {
            String::new()
        } else {
            format!(", recorded with {} instead", self.instead)
        };
        format!("{name} is off{instead}: {}", self.reason)
    }
}

/// The feature codes of [`FeatureOff`]. Never renumber.
pub mod feature {
    /// Call-frame unwinding over a copy of the user stack (`--call-graph dwarf`): the BPF
    /// program copying stacks did not load, so stacks are frame-pointer walks.
    pub const CFI_UNWINDING: u32 = 1;
    /// Interpreted frames of Python processes (added in 1.5): the samplers with the
    /// Python walk in them did not load, so Python processes have native stacks only.
    pub const PYTHON_FRAMES: u32 = 2;
    /// Every code with its name as `SPEC.md` and `info --json` spell it.
    pub const ALL: &[(u32, &str)] = &[
        (CFI_UNWINDING, "cfi-unwinding"),
        (PYTHON_FRAMES, "python-frames"),
    ];

    /// The name of a feature code; `None` for a code this reader does not know.
    pub fn name(code: u32) -> Option<&'static str> {
        ALL.iter().find(|(c, _)| *c == code).map(|(_, n)| *n)
    }
}

/// A point in time marked while recording (`hotspot mark DIR TEXT`, or a signal; added in
/// 1.6): what happened then, in the words of whoever marked it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Mark {
    /// Monotonic ns of the mark, on the samples' clock.
    pub time_ns: u64,
    /// What was marked (hotspot writes at most [`crate::limits::MAX_MARK_BYTES`]; readers
    /// accept any string and sanitise it before display, like every name).
    pub text: String,
}

/// What was removed from the capture before it was written (added in 1.6; a definition,
/// written in block 0 after the `Session`). Absent: nothing was scrubbed. The rule each
/// field names is `crate::scrub`'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub struct Scrubbed {
    /// Command-line arguments beyond the program name (processes' and the recorder's own).
    pub arguments: bool,
    /// The host name.
    pub host: bool,
    /// User names in paths under home directories (`/home/NAME/` → `/home/USER/`).
    pub user_paths: bool,
}

/// Every record kind. The numeric kind on disk is given by [`Record::kind`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Session(SessionHeader),
    String { id: StringId, text: String },
    Process(Process),
    ProcessExit(ProcessExit),
    Thread(Thread),
    Module(Module),
    Frame(Frame),
    Stack(Stack),
    Samples(SampleBatch),
    Symbol(Symbol),
    Lost(Lost),
    Index(Index),
    End(End),
    Unwinding(Unwinding),
    LostMappings(LostMappings),
    OffCpuSamples(OffCpuBatch),
    OffCpu(OffCpu),
    ThreadTimes(ThreadTimes),
    LostOffCpu(LostOffCpu),
    FeatureOff(FeatureOff),
    InterpreterModule(InterpreterModule),
    InterpreterProcess(InterpreterProcess),
    Mark(Mark),
    Scrubbed(Scrubbed),
}

/// On-disk record kind numbers. Never renumber: add new kinds at the end.
pub mod kind {
    pub const SESSION: u32 = 1;
    pub const STRING: u32 = 2;
    pub const PROCESS: u32 = 3;
    pub const PROCESS_EXIT: u32 = 4;
    pub const THREAD: u32 = 5;
    pub const MODULE: u32 = 6;
    pub const FRAME: u32 = 7;
    pub const STACK: u32 = 8;
    pub const SAMPLES: u32 = 9;
    pub const SYMBOL: u32 = 10;
    pub const LOST: u32 = 11;
    pub const INDEX: u32 = 12;
    pub const END: u32 = 13;
    pub const UNWINDING: u32 = 14;
    pub const LOST_MAPPINGS: u32 = 15;
    pub const OFF_CPU_SAMPLES: u32 = 16;
    pub const OFF_CPU: u32 = 17;
    pub const THREAD_TIMES: u32 = 18;
    pub const LOST_OFF_CPU: u32 = 19;
    pub const FEATURE_OFF: u32 = 20;
    pub const INTERPRETER_MODULE: u32 = 21;
    pub const INTERPRETER_PROCESS: u32 = 22;
    pub const MARK: u32 = 23;
    pub const SCRUBBED: u32 = 24;
    /// Every kind with its name as `SPEC.md` spells it.
    pub const ALL: &[(u32, &str)] = &[
        (SESSION, "Session"),
        (STRING, "String"),
        (PROCESS, "Process"),
        (PROCESS_EXIT, "ProcessExit"),
        (THREAD, "Thread"),
        (MODULE, "Module"),
        (FRAME, "Frame"),
        (STACK, "Stack"),
        (SAMPLES, "Samples"),
        (SYMBOL, "Symbol"),
        (LOST, "Lost"),
        (INDEX, "Index"),
        (END, "End"),
        (UNWINDING, "Unwinding"),
        (LOST_MAPPINGS, "LostMappings"),
        (OFF_CPU_SAMPLES, "OffCpuSamples"),
        (OFF_CPU, "OffCpu"),
        (THREAD_TIMES, "ThreadTimes"),
        (LOST_OFF_CPU, "LostOffCpu"),
        (FEATURE_OFF, "FeatureOff"),
        (INTERPRETER_MODULE, "InterpreterModule"),
        (INTERPRETER_PROCESS, "InterpreterProcess"),
        (MARK, "Mark"),
        (SCRUBBED, "Scrubbed"),
    ];
}

impl Record {
    /// The on-disk kind number of this record.
    pub fn kind(&self) -> u32 {
        match self {
            Record::Session(_) => kind::SESSION,
            Record::String { .. } => kind::STRING,
            Record::Process(_) => kind::PROCESS,
            Record::ProcessExit(_) => kind::PROCESS_EXIT,
            Record::Thread(_) => kind::THREAD,
            Record::Module(_) => kind::MODULE,
            Record::Frame(_) => kind::FRAME,
            Record::Stack(_) => kind::STACK,
            Record::Samples(_) => kind::SAMPLES,
            Record::Symbol(_) => kind::SYMBOL,
            Record::Lost(_) => kind::LOST,
            Record::Index(_) => kind::INDEX,
            Record::End(_) => kind::END,
            Record::Unwinding(_) => kind::UNWINDING,
            Record::LostMappings(_) => kind::LOST_MAPPINGS,
            Record::OffCpuSamples(_) => kind::OFF_CPU_SAMPLES,
            Record::OffCpu(_) => kind::OFF_CPU,
            Record::ThreadTimes(_) => kind::THREAD_TIMES,
            Record::LostOffCpu(_) => kind::LOST_OFF_CPU,
            Record::FeatureOff(_) => kind::FEATURE_OFF,
            Record::InterpreterModule(_) => kind::INTERPRETER_MODULE,
            Record::InterpreterProcess(_) => kind::INTERPRETER_PROCESS,
            Record::Mark(_) => kind::MARK,
            Record::Scrubbed(_) => kind::SCRUBBED,
        }
    }
}
