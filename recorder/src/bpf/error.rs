//! The one error type of the kernel-facing seam, with messages that say what to do.

use std::io;

/// Everything that can go wrong between the recorder and the kernel's BPF side.
///
/// Messages are single lines. Where the cause is one of ours (an `io::Error`) it is the
/// variant's `source()`, printed after the message by whoever reports it; aya's errors are
/// flattened into the `reason` text with `chain` instead, because some of them repeat
/// their own source in their message.
#[derive(Debug, thiserror::Error)]
pub enum BpfError {
    /// The process lacks the capabilities to load and attach BPF programs.
    #[error(
        "missing {missing}: run as root or grant CAP_BPF and CAP_PERFMON \
         (e.g. sudo setcap cap_bpf,cap_perfmon+ep $(which hotspot))"
    )]
    MissingCapabilities {
        /// Which capabilities are missing, e.g. `CAP_PERFMON (or CAP_SYS_ADMIN)`.
        missing: String,
    },

    /// The running kernel lacks a BPF feature hotspot needs.
    #[error("kernel {kernel} lacks {feature} (needs ≥{needs})")]
    Unsupported {
        /// Release of the running kernel, e.g. `5.4`.
        kernel: String,
        /// The missing feature, e.g. `BPF ring buffer`.
        feature: &'static str,
        /// The first kernel release with it (or the config option), e.g. `5.8`.
        needs: &'static str,
    },

    /// The kernel lacks a helper the stack-copying sampler calls (it needs 5.17); the
    /// frame-pointer sampler still works.
    #[error(
        "kernel {kernel} cannot copy user stacks in BPF (needs ≥5.17 for bpf_find_vma; \
         verifier: {reason}): use --call-graph fp"
    )]
    StackCopyUnsupported {
        /// Release of the running kernel, e.g. `5.15`.
        kernel: String,
        /// The verifier's line naming the missing helper.
        reason: String,
    },

    /// A [`SamplerOptions`](super::SamplerOptions) value the kernel would reject.
    #[error("invalid sampler option: {0}")]
    InvalidOptions(String),

    /// The embedded BPF object could not be parsed, relocated or its maps created.
    #[error("cannot load hotspot's BPF object: {reason}")]
    Load {
        /// Cause, with its own causes.
        reason: String,
    },

    /// The verifier (or the kernel) refused one program.
    #[error("the kernel refused BPF program `{program}`: {reason}")]
    ProgramLoad {
        /// Program (function) name in `ebpf/hotspot.bpf.c`.
        program: &'static str,
        /// Cause; for verifier rejections, the end of the verifier log.
        reason: String,
    },

    /// The sampling program could not be attached to one CPU's clock.
    #[error("cannot attach the sampling program to CPU {cpu}: {reason}")]
    AttachCpu {
        /// The CPU whose perf event failed.
        cpu: u32,
        /// Cause, with a hint where one is known.
        reason: String,
    },

    /// A tracepoint program (fork/exec/exit, sched_switch) could not be attached.
    #[error("cannot attach BPF program `{program}` to tracepoint {tracepoint}: {reason}")]
    AttachTracepoint {
        /// Program name.
        program: &'static str,
        /// Tracepoint name.
        tracepoint: &'static str,
        /// Cause.
        reason: String,
    },

    /// `--off-cpu`'s sampler could not be attached to `finish_task_switch`.
    #[error("cannot attach BPF program `{program}` to a kprobe on {function}: {reason}")]
    AttachKprobe {
        /// Program name.
        program: &'static str,
        /// The kernel function (the names tried are in `reason`).
        function: &'static str,
        /// Cause, for each name tried.
        reason: String,
    },

    /// The kernel offers nothing the off-CPU sampler can run from.
    #[error(
        "kernel {kernel} cannot take off-CPU stacks: it has neither the sched_exit_tp \
         tracepoint (Linux ≥6.16) nor kprobes (CONFIG_KPROBES) for finish_task_switch; \
         record without --off-cpu"
    )]
    OffCpuUnsupported {
        /// Release of the running kernel, e.g. `6.1`.
        kernel: String,
    },

    /// The kernel's mapping events could not be opened.
    #[error(
        "cannot open the kernel's mapping events (a perf dummy event on CPU {cpu}; they need \
         CAP_PERFMON or root)"
    )]
    MappingEvents {
        /// CPU whose event failed.
        cpu: u32,
        /// Cause.
        source: io::Error,
    },
    /// The list of online (or possible) CPUs could not be read.
    #[error("cannot read the CPUs from {path}")]
    OnlineCpus {
        /// File that failed.
        path: &'static str,
        /// Cause.
        source: io::Error,
    },

    /// A map lookup or update failed.
    #[error("BPF map `{map}`: {op} failed: {reason}")]
    Map {
        /// Map name.
        map: &'static str,
        /// What was attempted, e.g. `insert 1234`.
        op: String,
        /// Cause.
        reason: String,
    },

    /// Waiting on the ring buffer failed.
    #[error("waiting for BPF events failed")]
    Poll(#[source] io::Error),

    /// The sampling program could not be detached at the end of a recording.
    #[error("cannot stop sampling: {reason}")]
    Detach {
        /// Cause.
        reason: String,
    },

    /// [`BpfSampler::start`](super::BpfSampler::start) was called twice.
    #[error("the BPF sampler is already started")]
    AlreadyStarted,
}

/// Renders an error and its `source()` chain on one line.
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut next = error.source();
    while let Some(cause) = next {
        let cause_text = cause.to_string();
        // aya often repeats the cause in the outer message; print it once.
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        next = cause.source();
    }
    text.replace('\n', " ")
}

/// Release of the running kernel as `major.minor`, for error messages.
pub(crate) fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .and_then(|release| {
            let mut parts = release.trim().split(['.', '-']);
            Some(format!("{}.{}", parts.next()?, parts.next()?))
        })
        .unwrap_or_else(|| "(unknown version)".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_one_line_and_say_what_to_do() {
        let e = BpfError::MissingCapabilities {
            missing: "CAP_PERFMON (or CAP_SYS_ADMIN)".into(),
        };
        let text = e.to_string();
        assert!(!text.contains('\n'));
        assert!(text.starts_with("missing CAP_PERFMON"));
        assert!(text.contains("setcap cap_bpf,cap_perfmon+ep"));

        let e = BpfError::Unsupported {
            kernel: "5.4".into(),
            feature: "BPF ring buffer",
            needs: "5.8",
        };
        assert_eq!(
            e.to_string(),
            "kernel 5.4 lacks BPF ring buffer (needs ≥5.8)"
        );

        let e = BpfError::StackCopyUnsupported {
            kernel: "5.15".into(),
            reason: "unknown func bpf_find_vma#180".into(),
        };
        let text = e.to_string();
        assert!(!text.contains('\n'));
        assert!(text.contains("kernel 5.15") && text.contains("bpf_find_vma#180"));
        assert!(text.ends_with("use --call-graph fp"), "{text}");
    }

    #[test]
    fn chain_flattens_causes() {
        #[derive(Debug, thiserror::Error)]
        #[error("outer")]
        struct Outer(#[source] io::Error);
        let e = Outer(io::Error::other("inner\nsecond line"));
        assert_eq!(chain(&e), "outer: inner second line");
    }
}
