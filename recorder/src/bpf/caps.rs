//! Checks the process's effective capabilities before touching BPF, so a missing one is named
//! instead of surfacing as an anonymous EPERM from deep inside the loader.

use super::error::BpfError;

use crate::privilege::{CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN, capget};

/// The effective capability set of this thread, as a 64-bit mask.
fn effective_caps() -> std::io::Result<u64> {
    capget().map(|c| c.effective)
}

/// What is missing from `caps` to load and attach hotspot's programs, if anything.
///
/// CAP_SYS_ADMIN alone suffices (it is what kernels before 5.8 require);
/// otherwise both CAP_BPF (maps, programs) and CAP_PERFMON (system-wide perf
/// events, tracing programs, reading kernel stacks) are needed.
fn missing_from(caps: u64) -> Option<String> {
    let has = |cap: u32| caps & (1u64 << cap) != 0;
    if has(CAP_SYS_ADMIN) {
        return None;
    }
    let missing: Vec<&str> = [(CAP_BPF, "CAP_BPF"), (CAP_PERFMON, "CAP_PERFMON")]
        .into_iter()
        .filter(|&(cap, _)| !has(cap))
        .map(|(_, name)| name)
        .collect();
    if missing.is_empty() {
        None
    } else {
        Some(format!("{} (or CAP_SYS_ADMIN)", missing.join(" and ")))
    }
}

/// Fails with [`BpfError::MissingCapabilities`] unless the process can use BPF.
pub(crate) fn check() -> Result<(), BpfError> {
    // If capget itself fails we cannot tell; let the loader report what the kernel says.
    let Ok(caps) = effective_caps() else {
        return Ok(());
    };
    match missing_from(caps) {
        None => Ok(()),
        Some(missing) => Err(BpfError::MissingCapabilities { missing }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_what_is_missing() {
        let bit = |cap: u32| 1u64 << cap;
        assert_eq!(missing_from(bit(CAP_SYS_ADMIN)), None);
        assert_eq!(missing_from(bit(CAP_BPF) | bit(CAP_PERFMON)), None);
        assert_eq!(
            missing_from(bit(CAP_BPF)).as_deref(),
            Some("CAP_PERFMON (or CAP_SYS_ADMIN)")
        );
        assert_eq!(
            missing_from(bit(CAP_PERFMON)).as_deref(),
            Some("CAP_BPF (or CAP_SYS_ADMIN)")
        );
        assert_eq!(
            missing_from(0).as_deref(),
            Some("CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN)")
        );
    }

    #[test]
    fn reads_our_own_caps() {
        assert!(effective_caps().is_ok());
    }
}
