//! Where `--off-cpu`'s sampler runs on this kernel: the raw tracepoint `sched_exit_tp`
//! (6.16+), else a kprobe on `finish_task_switch` (kernels with `CONFIG_KPROBES`, such as
//! Debian's 6.1 and 6.12), chosen when the object is loaded by what the kernel offers.
//!
//! Both fire in the thread switched back in, in its own context, right after the switch
//! (see `off_cpu_fp` in `ebpf/hotspot.bpf.c`). fentry on `finish_task_switch` is not
//! among them: where gcc cloned the function (`finish_task_switch.isra.0` in Debian's 6.1
//! and 6.12) the kernel's BTF has no such function to attach to, and the 6.18 kernel of
//! these machines refuses tracing programs.

use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use aya::Ebpf;
use aya::programs::KProbe;
use aya::programs::kprobe::KProbeLinkId;
use aya::programs::raw_trace_point::RawTracePointLinkId;

use super::error::{BpfError, chain, kernel_release};
use super::programs::{LoadFailure, missing_program, tracepoint_program};

/// The raw tracepoint at the end of `__schedule` (6.16+).
const SCHED_EXIT_TRACEPOINT: &str = "sched_exit_tp";
/// The function the thread switched in calls first, before 6.16.
const FINISH_TASK_SWITCH: &str = "finish_task_switch";
/// Present when the kernel was built with kprobes: aya (like perf) creates the probe
/// through this PMU.
const KPROBE_PMU: &str = "/sys/bus/event_source/devices/kprobe/type";

/// The off-CPU samplers (`ebpf/hotspot.bpf.c`): at `sched_exit_tp` and at
/// `finish_task_switch`, each with frame pointers only or with the user stack copy.
pub(super) const FP_OFF_CPU_TRACEPOINT: &str = "hs_off_cpu";
pub(super) const STACK_OFF_CPU_TRACEPOINT: &str = "hs_off_cpu_stack";
pub(super) const FP_OFF_CPU_KPROBE: &str = "hs_off_kp";
pub(super) const STACK_OFF_CPU_KPROBE: &str = "hs_off_stack_kp";

/// Where the off-CPU sampler attaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OffCpuAttach {
    /// The raw tracepoint `sched_exit_tp`.
    SchedExit,
    /// A kprobe on `finish_task_switch` (whatever suffix the kernel's build gave it).
    FinishTaskSwitchKprobe,
}

/// A live attachment, to detach at the end.
pub(super) enum OffCpuLink {
    Tracepoint(RawTracePointLinkId),
    Kprobe(KProbeLinkId),
}

impl OffCpuAttach {
    /// The best the running kernel offers, read from its BTF (every raw tracepoint has a
    /// `btf_trace_<name>` type there) and its perf PMUs; an error naming what is missing
    /// when it offers neither.
    pub(super) fn choose(kernel_btf: &Path) -> Result<Self, BpfError> {
        Self::choose_from(
            has_raw_tracepoint(kernel_btf, SCHED_EXIT_TRACEPOINT).unwrap_or(false),
            Path::new(KPROBE_PMU).exists(),
        )
    }

    fn choose_from(sched_exit: bool, kprobes: bool) -> Result<Self, BpfError> {
        if sched_exit {
            Ok(Self::SchedExit)
        } else if kprobes {
            Ok(Self::FinishTaskSwitchKprobe)
        } else {
            Err(BpfError::OffCpuUnsupported {
                kernel: kernel_release(),
            })
        }
    }

    /// The sampler program for this attach point, with the user stack copy or frame
    /// pointers only.
    pub(super) fn program(self, copies_stacks: bool) -> &'static str {
        match (self, copies_stacks) {
            (Self::SchedExit, false) => FP_OFF_CPU_TRACEPOINT,
            (Self::SchedExit, true) => STACK_OFF_CPU_TRACEPOINT,
            (Self::FinishTaskSwitchKprobe, false) => FP_OFF_CPU_KPROBE,
            (Self::FinishTaskSwitchKprobe, true) => STACK_OFF_CPU_KPROBE,
        }
    }

    /// Loads `program` into the kernel (its type follows the attach point).
    pub(super) fn load(self, ebpf: &mut Ebpf, program: &'static str) -> Result<(), LoadFailure> {
        let loaded = match self {
            Self::SchedExit => tracepoint_program(ebpf, program)
                .map_err(LoadFailure::Other)?
                .load(),
            Self::FinishTaskSwitchKprobe => kprobe_program(ebpf, program)
                .map_err(LoadFailure::Other)?
                .load(),
        };
        loaded.map_err(|e| LoadFailure::Refused(program, e))
    }

    pub(super) fn attach(
        self,
        ebpf: &mut Ebpf,
        program: &'static str,
    ) -> Result<OffCpuLink, BpfError> {
        match self {
            Self::SchedExit => tracepoint_program(ebpf, program)?
                .attach(SCHED_EXIT_TRACEPOINT)
                .map(OffCpuLink::Tracepoint)
                .map_err(|e| BpfError::AttachTracepoint {
                    program,
                    tracepoint: SCHED_EXIT_TRACEPOINT,
                    reason: chain(&e),
                }),
            Self::FinishTaskSwitchKprobe => {
                let probe = kprobe_program(ebpf, program)?;
                attach_finish_task_switch(probe, program).map(OffCpuLink::Kprobe)
            }
        }
    }

    pub(super) fn detach(
        self,
        ebpf: &mut Ebpf,
        program: &'static str,
        link: OffCpuLink,
    ) -> Result<(), BpfError> {
        let detached = match link {
            OffCpuLink::Tracepoint(link) => tracepoint_program(ebpf, program)?.detach(link),
            OffCpuLink::Kprobe(link) => kprobe_program(ebpf, program)?.detach(link),
        };
        detached.map_err(|e| BpfError::Detach { reason: chain(&e) })
    }
}

fn kprobe_program<'a>(
    ebpf: &'a mut Ebpf,
    program: &'static str,
) -> Result<&'a mut KProbe, BpfError> {
    ebpf.program_mut(program)
        .ok_or_else(|| missing_program(program))?
        .try_into()
        .map_err(|e| BpfError::ProgramLoad {
            program,
            reason: chain(&e),
        })
}

/// Attaches to `finish_task_switch` under the name this kernel's build gave it: plain,
/// or a compiler clone's (`finish_task_switch.isra.0` in Debian's 6.1 and 6.12), or any
/// other `finish_task_switch.*` listed in /proc/kallsyms (read only if the first two are
/// not there: it is ~100,000 lines the kernel formats).
fn attach_finish_task_switch(
    probe: &mut KProbe,
    program: &'static str,
) -> Result<KProbeLinkId, BpfError> {
    let isra = format!("{FINISH_TASK_SWITCH}.isra.0");
    let mut tried = Vec::new();
    for name in [FINISH_TASK_SWITCH.to_owned(), isra] {
        match probe.attach(&name, 0) {
            Ok(link) => return Ok(link),
            Err(e) => tried.push((name, e)),
        }
    }
    for name in kallsyms_clones(FINISH_TASK_SWITCH) {
        if tried.iter().any(|(n, _)| *n == name) {
            continue;
        }
        match probe.attach(&name, 0) {
            Ok(link) => return Ok(link),
            Err(e) => tried.push((name, e)),
        }
    }
    let reasons: Vec<String> = tried
        .iter()
        .map(|(name, e)| format!("{name}: {}", chain(e)))
        .collect();
    Err(BpfError::AttachKprobe {
        program,
        function: FINISH_TASK_SWITCH,
        reason: reasons.join("; "),
    })
}

/// The kernel's local symbols named `function.<suffix>` (compiler clones), from
/// /proc/kallsyms; empty if it cannot be read.
fn kallsyms_clones(function: &str) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string("/proc/kallsyms") else {
        return Vec::new();
    };
    let prefix = format!("{function}.");
    text.lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter(|name| name.starts_with(&prefix))
        .map(str::to_owned)
        .collect()
}

/// Whether the kernel BTF at `path` names the raw tracepoint `name`: every one has a
/// `btf_trace_<name>` typedef, so its name is in the string section. Reads the header and
/// that section only (~2-4 MB).
fn has_raw_tracepoint(path: &Path, name: &str) -> io::Result<bool> {
    let mut file = std::fs::File::open(path)?;
    has_name(&mut file, &format!("btf_trace_{name}"))
}

fn has_name<R: Read + Seek>(src: &mut R, name: &str) -> io::Result<bool> {
    let mut head = [0u8; 24];
    src.read_exact(&mut head)?;
    if u16::from_ne_bytes([head[0], head[1]]) != 0xeb9f {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not native-endian BTF",
        ));
    }
    let word = |at: usize| {
        u64::from(u32::from_ne_bytes([
            head[at],
            head[at + 1],
            head[at + 2],
            head[at + 3],
        ]))
    };
    let (hdr_len, str_off, str_len) = (word(4), word(16), word(20));
    src.seek(SeekFrom::Start(hdr_len + str_off))?;
    let mut strings = Vec::new();
    src.take(str_len).read_to_end(&mut strings)?;
    let mut want = Vec::with_capacity(name.len() + 2);
    want.push(0);
    want.extend_from_slice(name.as_bytes());
    want.push(0);
    Ok(strings.windows(want.len()).any(|w| w == want.as_slice()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tracepoint_is_preferred_and_neither_is_an_error() {
        assert_eq!(
            OffCpuAttach::choose_from(true, true).ok(),
            Some(OffCpuAttach::SchedExit)
        );
        assert_eq!(
            OffCpuAttach::choose_from(false, true).ok(),
            Some(OffCpuAttach::FinishTaskSwitchKprobe)
        );
        let e = OffCpuAttach::choose_from(false, false)
            .expect_err("neither is an error")
            .to_string();
        assert!(!e.contains('\n'), "{e}");
        assert!(
            e.contains("sched_exit_tp") && e.contains("CONFIG_KPROBES"),
            "{e}"
        );
    }

    #[test]
    fn a_tracepoint_is_found_by_its_btf_type_name() {
        // A header, then a string section holding two names.
        let strings = b"\0btf_trace_sched_switch\0int\0";
        let mut blob = Vec::new();
        blob.extend_from_slice(&0xeb9fu16.to_ne_bytes());
        blob.extend_from_slice(&[1, 0]);
        for w in [24u32, 0, 0, 0, strings.len() as u32] {
            blob.extend_from_slice(&w.to_ne_bytes());
        }
        blob.extend_from_slice(strings);
        let has = |name: &str| has_name(&mut io::Cursor::new(&blob), name).expect("valid BTF");
        assert!(has("btf_trace_sched_switch"));
        assert!(!has("btf_trace_sched_exit_tp"));
        // A prefix of a name is not the name.
        assert!(!has("btf_trace_sched"));
    }

    #[test]
    fn this_kernel_has_the_tracepoint_it_advertises() {
        // Every kernel this runs on has sched_switch; none has a made-up one.
        let btf = Path::new(super::super::btf_subset::KERNEL_BTF);
        assert!(has_raw_tracepoint(btf, "sched_switch").expect("kernel BTF"));
        assert!(!has_raw_tracepoint(btf, "hs_no_such_tracepoint").expect("kernel BTF"));
    }
}
