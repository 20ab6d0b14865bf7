//! The object's programs: which there are, loading them into the kernel, and telling
//! the user why the kernel refused one (a missing helper, a failed CO-RE relocation, a
//! frequency above the kernel's limit, a missing privilege).

use std::io;

use aya::maps::MapError;
use aya::programs::{PerfEvent, ProgramError, RawTracePoint};
use aya::{Ebpf, EbpfError};

use super::error::{BpfError, chain, kernel_release};
use super::forced_refusal::{self, ForcedRefusals};
use super::off_cpu_attach::{
    FP_OFF_CPU_KPROBE, OffCpuAttach, STACK_OFF_CPU_KPROBE, STACK_OFF_CPU_TRACEPOINT,
};
use crate::live::kernel_names::BpfKernelSymbols;

/// The frame-pointer-only sampler: `stack_cap == 0`, and every kernel from 5.8.
pub(super) const FP_SAMPLE_PROGRAM: &str = "hs_sample";
/// The sampler that also copies user registers and stack (helpers from 5.17).
pub(super) const STACK_SAMPLE_PROGRAM: &str = "hs_sample_stack";
/// Names kernel addresses; run on demand, never attached (see [`BpfKernelSymbols`]).
pub(super) const KSYM_PROGRAM: &str = "hs_ksym";
/// (program, kernel tracepoint) pairs, all raw tracepoints.
pub(super) const TASK_PROGRAMS: [(&str, &str); 3] = [
    ("hs_fork", "sched_process_fork"),
    ("hs_exec", "sched_process_exec"),
    ("hs_exit", "sched_process_exit"),
];

/// `--off-cpu`: (program, tracepoint) keeping each traced thread's times at every switch.
/// (The program taking a due off-CPU sample's stack depends on where it attaches: see
/// [`OffCpuAttach::program`].)
pub(super) const SWITCH_PROGRAM: (&str, &str) = ("hs_switch", "sched_switch");

/// Kernel-internal, but it does leak to user space from BPF paths.
pub(super) const ENOTSUPP: i32 = 524;

pub(super) fn is_unsupported(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::EINVAL | libc::EOPNOTSUPP | ENOTSUPP)
    )
}

pub(super) fn load_error(error: EbpfError) -> BpfError {
    if let EbpfError::MapError(MapError::CreateError { name, io_error }) = &error {
        // The ring buffer is the newest map type we create: EINVAL means the
        // kernel does not know it.
        if name == "events" && is_unsupported(io_error) {
            return BpfError::Unsupported {
                kernel: kernel_release(),
                feature: "BPF ring buffer",
                needs: "5.8",
            };
        }
    }
    BpfError::Load {
        reason: chain(&error),
    }
}

/// Turns a program load failure into a one-line error. An EINVAL with an empty
/// verifier log means the kernel refused the program type before verifying it.
pub(super) fn program_error(
    program: &'static str,
    error: ProgramError,
    feature: &'static str,
    needs: &'static str,
) -> BpfError {
    if let ProgramError::LoadError {
        io_error,
        verifier_log,
    } = &error
    {
        let log = verifier_log.to_string();
        if log.trim().is_empty() && is_unsupported(io_error) {
            return BpfError::Unsupported {
                kernel: kernel_release(),
                feature,
                needs,
            };
        }
        // The verifier's verdict is at the end of its log; the rest is its trace.
        let lines: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
        let tail = lines[lines.len().saturating_sub(4)..].join(" | ");
        return BpfError::ProgramLoad {
            program,
            reason: format!("{io_error}; verifier: {tail}"),
        };
    }
    BpfError::ProgramLoad {
        program,
        reason: chain(&error),
    }
}

/// The verifier's line saying a helper is unknown, if that is why it refused (and not
/// the loader's poison, which is a CO-RE relocation that failed).
pub(super) fn missing_helper(log: &str) -> Option<&str> {
    log.lines()
        .find(|l| {
            (l.contains("unknown func") || l.contains("invalid func")) && !l.contains(POISON_HELPER)
        })
        .map(str::trim)
}

pub(super) fn perf_program<'a>(
    ebpf: &'a mut Ebpf,
    program: &'static str,
) -> Result<&'a mut PerfEvent, BpfError> {
    ebpf.program_mut(program)
        .ok_or_else(|| missing_program(program))?
        .try_into()
        .map_err(|e| BpfError::ProgramLoad {
            program,
            reason: chain(&e),
        })
}

pub(super) fn tracepoint_program<'a>(
    ebpf: &'a mut Ebpf,
    program: &'static str,
) -> Result<&'a mut RawTracePoint, BpfError> {
    ebpf.program_mut(program)
        .ok_or_else(|| missing_program(program))?
        .try_into()
        .map_err(|e| BpfError::ProgramLoad {
            program,
            reason: chain(&e),
        })
}

/// Why [`load_programs`] failed.
pub(super) enum LoadFailure {
    /// The kernel refused this program.
    Refused(&'static str, ProgramError),
    /// The test switch refused it ([`forced_refusal`]).
    Forced(&'static str),
    /// The program is not in the object, or not of its expected type.
    Other(BpfError),
}

impl LoadFailure {
    /// The verifier refused a call to the loader's poison: a CO-RE relocation that
    /// found no such field in the BTF the loader relocated against.
    pub(super) fn poisoned_relocation(&self) -> bool {
        match self {
            LoadFailure::Refused(_, ProgramError::LoadError { verifier_log, .. }) => {
                poisoned_relocation(&verifier_log.to_string())
            }
            _ => false,
        }
    }

    /// The program refused, if one was.
    pub(super) fn program(&self) -> Option<&'static str> {
        match self {
            LoadFailure::Refused(p, _) | LoadFailure::Forced(p) => Some(p),
            LoadFailure::Other(_) => None,
        }
    }

    pub(super) fn into_error(self) -> BpfError {
        match self {
            LoadFailure::Forced(program) => BpfError::ProgramLoad {
                program,
                reason: forced_refusal::reason(),
            },
            LoadFailure::Refused(STACK_SAMPLE_PROGRAM, e) => {
                stack_program_error(STACK_SAMPLE_PROGRAM, e, "perf_event BPF programs", "4.9")
            }
            LoadFailure::Refused(FP_SAMPLE_PROGRAM, e) => {
                program_error(FP_SAMPLE_PROGRAM, e, "perf_event BPF programs", "4.9")
            }
            LoadFailure::Refused(STACK_OFF_CPU_TRACEPOINT, e) => stack_program_error(
                STACK_OFF_CPU_TRACEPOINT,
                e,
                "raw tracepoint BPF programs",
                "4.17",
            ),
            LoadFailure::Refused(STACK_OFF_CPU_KPROBE, e) => {
                stack_program_error(STACK_OFF_CPU_KPROBE, e, "kprobe BPF programs", "4.1")
            }
            LoadFailure::Refused(FP_OFF_CPU_KPROBE, e) => {
                program_error(FP_OFF_CPU_KPROBE, e, "kprobe BPF programs", "4.1")
            }
            LoadFailure::Refused(program, e) => {
                program_error(program, e, "raw tracepoint BPF programs", "4.17")
            }
            LoadFailure::Other(e) => e,
        }
    }
}

/// Loads the sampling program, the fork/exec/exit programs and, with `off_cpu`
/// (`--off-cpu`: where its sampler attaches, and which program that is), the switch
/// programs into the kernel.
/// A program `forced` names is refused before the kernel sees it, and so is the sampling
/// program with the Python walk in it (`python_walk`) when `forced` names the walk.
pub(super) fn load_programs(
    ebpf: &mut Ebpf,
    sample_program: &'static str,
    off_cpu: Option<(OffCpuAttach, &'static str)>,
    python_walk: bool,
    forced: &ForcedRefusals,
) -> Result<(), LoadFailure> {
    if python_walk && forced.refuses(forced_refusal::PYTHON_WALK) {
        return Err(LoadFailure::Forced(sample_program));
    }
    let switch = off_cpu.map(|_| SWITCH_PROGRAM.0);
    let every = [sample_program]
        .into_iter()
        .chain(TASK_PROGRAMS.map(|(p, _)| p))
        .chain(switch)
        .chain(off_cpu.map(|(_, p)| p));
    for program in every {
        if forced.refuses(program) {
            return Err(LoadFailure::Forced(program));
        }
    }
    perf_program(ebpf, sample_program)
        .map_err(LoadFailure::Other)?
        .load()
        .map_err(|e| LoadFailure::Refused(sample_program, e))?;
    for program in TASK_PROGRAMS.map(|(p, _)| p).into_iter().chain(switch) {
        tracepoint_program(ebpf, program)
            .map_err(LoadFailure::Other)?
            .load()
            .map_err(|e| LoadFailure::Refused(program, e))?;
    }
    if let Some((attach, program)) = off_cpu {
        attach.load(ebpf, program)?;
    }
    Ok(())
}

/// aya (like libbpf) replaces an unresolvable CO-RE access with a call to helper
/// 0xbad2310, which the verifier reports as an invalid function.
pub(super) const POISON_HELPER: &str = "#195896080";

pub(super) fn poisoned_relocation(log: &str) -> bool {
    log.contains(POISON_HELPER)
}

/// The copying programs need helpers from 5.11–5.17 (`bpf_get_current_task_btf`,
/// `bpf_task_pt_regs`, `bpf_find_vma`, `bpf_loop`); an older kernel's verifier names the
/// first one it lacks "unknown func" (known id, not for this program type) or "invalid
/// func" (id past the kernel's last). Those become an error that says what still works;
/// any other refusal is [`program_error`]'s.
pub(super) fn stack_program_error(
    program: &'static str,
    error: ProgramError,
    feature: &'static str,
    needs: &'static str,
) -> BpfError {
    if let ProgramError::LoadError { verifier_log, .. } = &error
        && let Some(line) = missing_helper(&verifier_log.to_string())
    {
        return BpfError::StackCopyUnsupported {
            kernel: kernel_release(),
            reason: line.to_owned(),
        };
    }
    program_error(program, error, feature, needs)
}

/// Loads `hs_ksym` and takes its output map; `None` if the kernel refuses either.
pub(super) fn load_kernel_symbols(ebpf: &mut Ebpf) -> Option<BpfKernelSymbols> {
    let prog = tracepoint_program(ebpf, KSYM_PROGRAM).ok()?;
    prog.load().ok()?;
    let fd = prog.fd().ok()?.try_clone().ok()?;
    BpfKernelSymbols::new(fd, ebpf.take_map("ksym_out")?).ok()
}

pub(super) fn missing_program(program: &'static str) -> BpfError {
    BpfError::ProgramLoad {
        program,
        reason: "not in the embedded object: rebuild it with tools/build-bpf".to_owned(),
    }
}

pub(super) fn take_map(ebpf: &mut Ebpf, name: &'static str) -> Result<aya::maps::Map, BpfError> {
    ebpf.take_map(name).ok_or_else(|| BpfError::Map {
        map: name,
        op: "open".to_owned(),
        reason: "not in the embedded object: rebuild it with tools/build-bpf".to_owned(),
    })
}

pub(super) fn map_error(map: &'static str, op: &str, error: &MapError) -> BpfError {
    BpfError::Map {
        map,
        op: op.to_owned(),
        reason: chain(error),
    }
}

pub(super) fn attach_reason(error: &ProgramError, freq_hz: u64) -> String {
    let mut reason = chain(error);
    let io_error = match error {
        ProgramError::SyscallError(e) => Some(&e.io_error),
        _ => None,
    };
    match io_error.and_then(io::Error::raw_os_error) {
        Some(libc::EINVAL) => {
            let max = std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok());
            if let Some(max) = max.filter(|&max| freq_hz > max) {
                reason.push_str(&format!(
                    " ({freq_hz} Hz is above kernel.perf_event_max_sample_rate = {max})"
                ));
            }
        }
        Some(libc::EACCES | libc::EPERM) => {
            reason.push_str(" (needs CAP_PERFMON, or kernel.perf_event_paranoid ≤ 0)");
        }
        Some(libc::ENOENT | libc::EOPNOTSUPP) => {
            reason.push_str(" (the kernel has no cpu_clock perf event: CONFIG_PERF_EVENTS?)");
        }
        _ => {}
    }
    reason
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_helper_is_told_apart_from_other_refusals() {
        // 5.15's verdict on bpf_find_vma, and an id past an older kernel's last helper.
        let log = "0: R1=ctx(off=0,imm=0) R10=fp0\n; task = bpf_get_current_task_btf();\n\
                   12: (85) call bpf_find_vma#180\nunknown func bpf_find_vma#180\n\
                   processed 12 insns (limit 1000000)\n";
        assert_eq!(missing_helper(log), Some("unknown func bpf_find_vma#180"));
        assert_eq!(
            missing_helper("3: (85) call unknown#180\ninvalid func unknown#180\n"),
            Some("invalid func unknown#180")
        );
        assert_eq!(
            missing_helper(
                "58: (79) r1 = *(u64 *)(r1 +0)\ndereference of modified ctx ptr R1 off=32 disallowed\n"
            ),
            None
        );
    }
}
