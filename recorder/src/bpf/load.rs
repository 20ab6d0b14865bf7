//! Loading the BPF object into the kernel: the options checked, the globals and map sizes
//! written into it, relocated against the kernel's types (the BTF subset, else the whole
//! kernel BTF), and its programs handed to the verifier. [`load`] says in [`Loaded`] which
//! programs it loaded, and the sampler attaches those: a program that may fail on some
//! kernels and be done without (or replaced, as frame pointers replace a refused stack
//! copy when [`SamplerOptions::stack_fallback`] allows, and samplers without the Python
//! walk replace ones a kernel refuses with it) is decided here, in one place.

use aya::{Ebpf, EbpfError, EbpfLoader};
use hotspot_format::{FeatureOff, feature};

use super::abi::{MAX_PYTHON_FRAMES, MAX_STACK};
use super::btf_subset;
use super::caps;
use super::error::{BpfError, kernel_release};
use super::forced_refusal::ForcedRefusals;
use super::off_cpu::THREADS_MAX;
use super::off_cpu_attach::{OffCpuAttach, STACK_OFF_CPU_KPROBE, STACK_OFF_CPU_TRACEPOINT};
use super::programs::{
    FP_SAMPLE_PROGRAM, STACK_SAMPLE_PROGRAM, load_error, load_kernel_symbols, load_programs,
};
use super::ring_size::max_record_bytes;
use crate::live::kernel_names::BpfKernelSymbols;

/// Python frames a sample carries unless told otherwise.
pub const DEFAULT_PYTHON_FRAMES: u32 = 128;

/// How to sample. Everything here is fixed once [`BpfSampler::load`](super::BpfSampler::load) returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SamplerOptions {
    /// Samples per second per CPU (cpu_clock frequency mode).
    pub freq_hz: u64,
    /// Sample every process instead of only the targets (the recorder itself excepted).
    pub all_processes: bool,
    /// When a target forks a new process, make the child a target too (in the kernel,
    /// before the child runs).
    pub follow_children: bool,
    /// The recorder's own tgid, never sampled.
    pub self_tgid: u32,
    /// Ring-buffer size in bytes: a power of two and a multiple of the page size, and
    /// room for the largest record `stack_cap` allows.
    pub ring_bytes: u32,
    /// Most bytes of user stack each sample copies, from the stack pointer to the top of
    /// its frames, for the recorder to unwind (at most 65536). 0 is frame-pointer mode:
    /// no registers, no copy, only the kernel's frame-pointer walk (the program every
    /// kernel from 5.8 runs; the copying one needs 5.17).
    pub stack_cap: u32,
    /// With `stack_cap > 0`: when the kernel refuses a stack-copying program, load the
    /// frame-pointer programs instead and say so ([`BpfSampler::features_off`]) rather
    /// than fail. `hotspot record` sets it unless `--call-graph dwarf` was asked for.
    ///
    /// [`BpfSampler::features_off`]: super::BpfSampler::features_off
    pub stack_fallback: bool,
    /// Also record off-CPU time (`--off-cpu`): every traced thread's exact times at
    /// each context switch, and a sample of the stack it blocked in each time its
    /// blocked time crosses a period (1 / `freq_hz`). Needs 5.18 (sched_switch's
    /// `prev_state`), and the `sched_exit_tp` tracepoint (6.16) or kprobes for the stacks
    /// (see `recorder/src/bpf/off_cpu_attach.rs`).
    pub off_cpu: bool,
    /// Most Python frames a sample of a Python process carries (1 to
    /// `HS_MAX_PYTHON_FRAMES`); a deeper stack is cut, which the recorder marks. 0: no
    /// Python walk (what the loader falls back to when the kernel refuses the samplers
    /// with it, saying so in [`BpfSampler::features_off`]).
    ///
    /// [`BpfSampler::features_off`]: super::BpfSampler::features_off
    pub python_frames: u32,
}

impl Default for SamplerOptions {
    fn default() -> Self {
        Self {
            // Prime, so the tick does not beat against periodic work at round rates.
            freq_hz: 499,
            all_processes: false,
            follow_children: false,
            self_tgid: std::process::id(),
            ring_bytes: 8 << 20,
            stack_cap: MAX_STACK as u32,
            stack_fallback: false,
            off_cpu: false,
            python_frames: DEFAULT_PYTHON_FRAMES,
        }
    }
}

/// Built by `tools/build-bpf`; committed so that building the recorder needs no clang.
static OBJECT: &[u8] = aya::include_bytes_aligned!("../../../ebpf/hotspot.bpf.o");

/// Its per-CPU scratch, sized by the loader, and the off-CPU sampler's.
const STACK_SCRATCH_MAP: &str = "stack_scratch";
const OFF_STACK_SCRATCH_MAP: &str = "off_stack_scratch";

/// The object in the kernel, and what of it was loaded.
pub(super) struct Loaded {
    pub(super) ebpf: Ebpf,
    /// Relocated against the BTF subset rather than the whole kernel BTF.
    pub(super) btf_subset: bool,
    /// [`FP_SAMPLE_PROGRAM`] or [`STACK_SAMPLE_PROGRAM`].
    pub(super) sample_program: &'static str,
    /// `--off-cpu`'s sampler, when asked for: where it attaches, and which program that is.
    pub(super) off_cpu_program: Option<(OffCpuAttach, &'static str)>,
    /// `None` where the kernel cannot run `hs_ksym`.
    pub(super) kernel_symbols: Option<BpfKernelSymbols>,
    /// Bytes of user stack each sample copies: the options' `stack_cap`, or 0 after a
    /// fallback to frame pointers.
    pub(super) stack_cap: u32,
    /// What the kernel refused and the recording goes without.
    pub(super) features_off: Vec<FeatureOff>,
}

/// What frame-pointer stacks are called where a recording says what it went without.
const FP_INSTEAD: &str = "frame-pointer stacks (--call-graph fp)";
/// What a recording without the Python walk has of a Python process.
const NATIVE_INSTEAD: &str = "native stacks";

/// Loads the object and the programs `opts` ask for. When the kernel refuses a sampler
/// with the Python walk in it and takes it without, the samplers without; when it refuses
/// a stack-copying program and `opts.stack_fallback` allows, the frame-pointer programs
/// instead. Each with the refusal in [`Loaded::features_off`].
pub(super) fn load(opts: &SamplerOptions) -> Result<Loaded, BpfError> {
    load_with(opts, &ForcedRefusals::from_env())
}

fn load_with(opts: &SamplerOptions, forced: &ForcedRefusals) -> Result<Loaded, BpfError> {
    let refusal = match load_exactly(opts, forced) {
        Ok(loaded) => return Ok(loaded),
        Err(refusal) => refusal,
    };
    // The Python walk goes first, whatever the program refused: it is in every sampler,
    // and a kernel that takes them without it keeps everything else (Debian 12's 6.1
    // refused them all with an earlier walk). Tried alone, so a refusal it does not cure
    // leads to the other fallbacks with the walk kept.
    if opts.python_frames > 0 && refusal.is_program() {
        let without = SamplerOptions {
            python_frames: 0,
            stack_fallback: false,
            ..opts.clone()
        };
        if let Ok(mut loaded) = load_exactly(&without, forced) {
            loaded.features_off.push(FeatureOff {
                feature: feature::PYTHON_FRAMES,
                instead: NATIVE_INSTEAD.to_owned(),
                reason: refusal.error().to_string(),
            });
            return Ok(loaded);
        }
    }
    match refusal {
        Refusal::StackCopy(refused) if opts.stack_fallback => {
            let fp = SamplerOptions {
                stack_cap: 0,
                stack_fallback: false,
                ..opts.clone()
            };
            let mut loaded = load_with(&fp, forced)?;
            loaded.features_off.push(FeatureOff {
                feature: feature::CFI_UNWINDING,
                instead: FP_INSTEAD.to_owned(),
                reason: refused.to_string(),
            });
            Ok(loaded)
        }
        // Asked for explicitly: say what records without it.
        Refusal::StackCopy(BpfError::ProgramLoad { program, reason }) => {
            Err(BpfError::ProgramLoad {
                program,
                reason: format!("{reason} (--call-graph fp records without the stack copy)"),
            })
        }
        Refusal::StackCopy(e) | Refusal::Other(e) => Err(e),
    }
}

/// Why [`load_exactly`] failed: a stack-copying program refused (which frame pointers
/// can replace), or anything else.
enum Refusal {
    StackCopy(BpfError),
    Other(BpfError),
}

impl From<BpfError> for Refusal {
    fn from(e: BpfError) -> Self {
        Refusal::Other(e)
    }
}

impl Refusal {
    fn error(&self) -> &BpfError {
        match self {
            Refusal::StackCopy(e) | Refusal::Other(e) => e,
        }
    }

    /// The kernel (or the test switch) refused a program, rather than the object, the
    /// options or the privileges.
    fn is_program(&self) -> bool {
        matches!(
            self.error(),
            BpfError::ProgramLoad { .. } | BpfError::StackCopyUnsupported { .. }
        )
    }
}

/// Loads the object and the programs `opts` ask for, no fewer (targets are added, and
/// programs attached, by the sampler); `forced` names programs to refuse as if the kernel
/// had.
fn load_exactly(opts: &SamplerOptions, forced: &ForcedRefusals) -> Result<Loaded, Refusal> {
    validate(opts)?;
    caps::check()?;
    raise_memlock_limit();

    // The fork/exec/exit programs read task_struct through CO-RE: the loader
    // relocates them with the kernel's BTF.
    let kernel_btf = std::path::Path::new(btf_subset::KERNEL_BTF);
    if !kernel_btf.exists() {
        return Err(BpfError::Unsupported {
            kernel: kernel_release(),
            feature: "BTF type information (/sys/kernel/btf/vmlinux)",
            needs: "5.5 with CONFIG_DEBUG_INFO_BTF=y",
        }
        .into());
    }

    let all_processes = u8::from(opts.all_processes);
    let follow_children = u8::from(opts.follow_children);
    // The copy's scratch is indexed by CPU number; without the copy one slot is
    // enough (its 72 KiB per CPU are kernel memory).
    let stack_scratch_entries = if opts.stack_cap == 0 {
        1
    } else {
        let cpus =
            aya::util::nr_cpus().map_err(|(path, source)| BpfError::OnlineCpus { path, source })?;
        u32::try_from(cpus).unwrap_or(u32::MAX)
    };
    // Relocated against the few kernel types the programs read (see btf_subset),
    // not the whole kernel BTF: parsing that took ~30 ms of CPU and ~18 MB. Should
    // the subset fail, the loader parses the kernel's BTF itself, as it does by
    // default. Either way there is one source: the task programs are raw
    // tracepoints, which attach by name, not by BTF id as tp_btf ones would.
    let off_cpu = u8::from(opts.off_cpu);
    let period_ns = 1_000_000_000 / opts.freq_hz;
    let globals = Globals {
        all_processes: &all_processes,
        follow_children: &follow_children,
        self_tgid: &opts.self_tgid,
        stack_cap: &opts.stack_cap,
        python_frames: &opts.python_frames,
        off_cpu: &off_cpu,
        period_ns: &period_ns,
        ring_bytes: opts.ring_bytes,
        stack_scratch_entries,
        off_stack_scratch_entries: if opts.off_cpu {
            stack_scratch_entries
        } else {
            1
        },
        // Without --off-cpu the map is never used: one entry, not ~3 MiB.
        threads_entries: if opts.off_cpu { THREADS_MAX } else { 1 },
    };
    let subset = btf_subset::read(kernel_btf).ok();
    let loaded = match &subset {
        Some(btf) => load_object(
            btf_subset::loader_without_kernel_btf().btf(Some(btf)),
            &globals,
        ),
        None => load_object(&mut EbpfLoader::new(), &globals),
    };
    let (mut ebpf, btf_subset) = match loaded {
        Ok(ebpf) => (ebpf, subset.is_some()),
        // A kernel whose types the subset models wrongly still gets a recorder.
        Err(_) if subset.is_some() => (
            load_object(&mut EbpfLoader::new(), &globals).map_err(load_error)?,
            false,
        ),
        Err(e) => return Err(load_error(e).into()),
    };

    let sample_program = if opts.stack_cap == 0 {
        FP_SAMPLE_PROGRAM
    } else {
        STACK_SAMPLE_PROGRAM
    };
    let off_cpu_program = if opts.off_cpu {
        let attach = OffCpuAttach::choose(kernel_btf)?;
        Some((attach, attach.program(opts.stack_cap > 0)))
    } else {
        None
    };
    // aya does not fail the object's load on a CO-RE field it cannot find: it
    // poisons the instruction, and the verifier then refuses the program. A subset
    // that lacks a field the programs read is such a case: parse the whole BTF.
    let python_walk = opts.python_frames > 0;
    let mut loaded = load_programs(
        &mut ebpf,
        sample_program,
        off_cpu_program,
        python_walk,
        forced,
    );
    let mut btf_subset = btf_subset;
    if btf_subset && matches!(&loaded, Err(f) if f.poisoned_relocation()) {
        ebpf = load_object(&mut EbpfLoader::new(), &globals).map_err(load_error)?;
        btf_subset = false;
        loaded = load_programs(
            &mut ebpf,
            sample_program,
            off_cpu_program,
            python_walk,
            forced,
        );
    }
    if let Err(failure) = loaded {
        let copies = matches!(
            failure.program(),
            Some(STACK_SAMPLE_PROGRAM | STACK_OFF_CPU_TRACEPOINT | STACK_OFF_CPU_KPROBE)
        );
        let error = failure.into_error();
        return Err(if copies {
            Refusal::StackCopy(error)
        } else {
            Refusal::Other(error)
        });
    }
    // Optional: without it (bpf_snprintf needs 5.13) kernel frames are named from
    // /proc/kallsyms instead.
    let kernel_symbols = load_kernel_symbols(&mut ebpf);
    Ok(Loaded {
        ebpf,
        btf_subset,
        sample_program,
        off_cpu_program,
        kernel_symbols,
        stack_cap: opts.stack_cap,
        features_off: Vec::new(),
    })
}

/// What the loader writes into the object before the verifier sees it.
struct Globals<'a> {
    all_processes: &'a u8,
    follow_children: &'a u8,
    self_tgid: &'a u32,
    stack_cap: &'a u32,
    python_frames: &'a u32,
    off_cpu: &'a u8,
    period_ns: &'a u64,
    ring_bytes: u32,
    stack_scratch_entries: u32,
    off_stack_scratch_entries: u32,
    threads_entries: u32,
}

fn load_object<'a>(loader: &mut EbpfLoader<'a>, g: &Globals<'a>) -> Result<Ebpf, EbpfError> {
    loader
        .override_global("all_processes", g.all_processes, true)
        .override_global("follow_children", g.follow_children, true)
        .override_global("self_tgid", g.self_tgid, true)
        .override_global("stack_cap", g.stack_cap, true)
        .override_global("python_frames", g.python_frames, true)
        .override_global("off_cpu", g.off_cpu, true)
        .override_global("period_ns", g.period_ns, true)
        .map_max_entries("events", g.ring_bytes)
        .map_max_entries(STACK_SCRATCH_MAP, g.stack_scratch_entries)
        .map_max_entries(OFF_STACK_SCRATCH_MAP, g.off_stack_scratch_entries)
        .map_max_entries("threads", g.threads_entries)
        .load(OBJECT)
}

pub(super) fn validate(opts: &SamplerOptions) -> Result<(), BpfError> {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let page = u32::try_from(page).unwrap_or(4096);
    if !opts.ring_bytes.is_power_of_two() || opts.ring_bytes < page {
        return Err(BpfError::InvalidOptions(format!(
            "ring_bytes {} must be a power of two of at least the page size ({page})",
            opts.ring_bytes
        )));
    }
    if opts.python_frames as usize > MAX_PYTHON_FRAMES {
        return Err(BpfError::InvalidOptions(format!(
            "python_frames {} must be 0 (no Python walk) to {MAX_PYTHON_FRAMES}",
            opts.python_frames
        )));
    }
    if opts.freq_hz == 0 {
        return Err(BpfError::InvalidOptions(
            "freq_hz must be at least 1".to_owned(),
        ));
    }
    if opts.stack_cap as usize > MAX_STACK {
        return Err(BpfError::InvalidOptions(format!(
            "stack_cap {} is above the {MAX_STACK} bytes the BPF program can copy",
            opts.stack_cap
        )));
    }
    // A ring that cannot hold the largest record would drop every deep sample. The
    // kernel adds an 8-byte header to each record.
    let largest = max_record_bytes(opts.stack_cap) + 8;
    if opts.ring_bytes < largest {
        return Err(BpfError::InvalidOptions(format!(
            "ring_bytes {} cannot hold a {largest}-byte sample (stack_cap {}): use a larger ring or a smaller cap",
            opts.ring_bytes, opts.stack_cap
        )));
    }
    Ok(())
}

/// Kernels before 5.11 charge BPF maps to RLIMIT_MEMLOCK, whose default (64 KiB) is far
/// below an 8 MiB ring. Newer kernels ignore it, so failing to raise it is not an error:
/// if it mattered, map creation reports EPERM.
fn raise_memlock_limit() {
    let unlimited = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: setrlimit only reads the struct we pass.
    let _ = unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &unlimited) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpf::ring_size::max_record_bytes;

    #[test]
    fn rejects_bad_ring_sizes_and_frequencies() {
        let bad_ring = SamplerOptions {
            ring_bytes: 3 << 20,
            ..SamplerOptions::default()
        };
        assert!(matches!(
            validate(&bad_ring),
            Err(BpfError::InvalidOptions(_))
        ));
        let tiny_ring = SamplerOptions {
            ring_bytes: 1024,
            ..SamplerOptions::default()
        };
        assert!(validate(&tiny_ring).is_err());
        let no_freq = SamplerOptions {
            freq_hz: 0,
            ..SamplerOptions::default()
        };
        assert!(validate(&no_freq).is_err());
        assert!(validate(&SamplerOptions::default()).is_ok());
    }

    #[test]
    fn stack_cap_is_bounded_and_must_fit_the_ring() {
        let over = SamplerOptions {
            stack_cap: 65537,
            ..SamplerOptions::default()
        };
        assert!(matches!(validate(&over), Err(BpfError::InvalidOptions(m)) if m.contains("65536")));
        // A page of ring holds any frame-pointer record, not a 64 KiB stack.
        let page_ring = |stack_cap| SamplerOptions {
            ring_bytes: 4096,
            stack_cap,
            ..SamplerOptions::default()
        };
        assert!(validate(&page_ring(0)).is_ok());
        assert!(validate(&page_ring(1024)).is_ok());
        assert!(matches!(
            validate(&page_ring(65536)),
            Err(BpfError::InvalidOptions(m)) if m.contains("stack_cap 65536")
        ));
        assert_eq!(max_record_bytes(0), 48 + 48 + 254 * 8 + 8);
        assert_eq!(max_record_bytes(65536), 48 + 48 + 254 * 8 + 8 + 65536);
    }
}
