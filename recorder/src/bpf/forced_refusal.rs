//! The test switch that makes the loader treat programs as refused by the kernel:
//! `HOTSPOT_TEST_REFUSE=hs_sample_stack[,PROGRAM…]`. For tests only: it lets a host whose
//! kernel loads everything show what a recording does on one that refuses a program (the
//! fallbacks of `load.rs`, the one-line errors of an explicit request). It can only take
//! features away, never add or change one. [`PYTHON_WALK`] is not a program but the
//! Python walk in every sampler: named, the sampler is refused while the walk is in it.

/// The environment variable the loader reads.
pub const VARIABLE: &str = "HOTSPOT_TEST_REFUSE";

/// The name that refuses the samplers with the Python walk in them, as Debian 12's 6.1
/// did with an earlier walk.
pub const PYTHON_WALK: &str = "python_walk";

/// The programs to refuse, as named in the variable.
#[derive(Debug, Clone, Default)]
pub(super) struct ForcedRefusals(Vec<String>);

impl ForcedRefusals {
    /// What the environment asks for (nothing when the variable is unset).
    pub(super) fn from_env() -> Self {
        Self::parse(&std::env::var(VARIABLE).unwrap_or_default())
    }

    fn parse(value: &str) -> Self {
        ForcedRefusals(
            value
                .split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
                .collect(),
        )
    }

    /// Whether `program` is to be refused.
    pub(super) fn refuses(&self, program: &str) -> bool {
        self.0.iter().any(|p| p == program)
    }
}

/// The reason given for a forced refusal, in place of the verifier's.
pub(super) fn reason() -> String {
    format!("refused on request ({VARIABLE}, a test switch)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_a_comma_list() {
        let r = ForcedRefusals::parse(" hs_sample_stack, hs_off_cpu_stack ,,");
        assert!(r.refuses("hs_sample_stack"));
        assert!(r.refuses("hs_off_cpu_stack"));
        assert!(!r.refuses("hs_sample"));
        assert!(!ForcedRefusals::parse("").refuses(""));
    }
}
