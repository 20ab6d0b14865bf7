//! How a flight recorder names its segments: `seg-<start, Unix ms, 16 digits>.hsp`, so
//! that name order is time order. The recorder writes these names, readers of a history
//! (`report DIR`, `snapshot DIR`) look for them; the rule is here, once.

const PREFIX: &str = "seg-";
const SUFFIX: &str = ".hsp";

/// The file name of a segment starting at `start_ms` (Unix ms).
pub fn name(start_ms: u128) -> String {
    format!("{PREFIX}{start_ms:016}{SUFFIX}")
}

/// Whether a file name is a segment's.
pub fn is_name(name: &str) -> bool {
    name.len() > PREFIX.len() + SUFFIX.len()
        && name.starts_with(PREFIX)
        && name.ends_with(SUFFIX)
        && name[PREFIX.len()..name.len() - SUFFIX.len()]
            .bytes()
            .all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sort_as_their_times() {
        assert_eq!(name(1_796_194_027_713), "seg-0001796194027713.hsp");
        assert!(name(999) < name(1000));
        assert!(is_name(&name(5)));
        for other in [
            "seg-.hsp",
            "seg-12.hsp.tmp",
            "mark-1",
            "seg-1a.hsp",
            "x.hsp",
        ] {
            assert!(!is_name(other), "{other}");
        }
    }
}
