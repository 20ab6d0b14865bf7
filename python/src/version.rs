//! A CPython version, and the evidence an ELF file gives of it: `Py_Version`'s value
//! (3.11+), a `libpython3.X` file name, or which API functions the file exports.

use std::fmt;

/// A CPython version as `PY_VERSION_HEX` spells it: 0x030B02F0 is 3.11.2 final.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PyVersion {
    pub major: u8,
    pub minor: u8,
    /// The patch release; `None` when only the minor version is known (names, symbols).
    pub micro: Option<u8>,
    /// 0xA alpha, 0xB beta, 0xC release candidate, 0xF final; 0xF when unknown.
    pub level: u8,
    pub serial: u8,
}

impl PyVersion {
    /// A minor version whose patch release is unknown.
    pub const fn minor(major: u8, minor: u8) -> Self {
        PyVersion {
            major,
            minor,
            micro: None,
            level: 0xF,
            serial: 0,
        }
    }

    /// From `PY_VERSION_HEX` (`Py_Version`, `_Py_DebugOffsets.version`); `None` for a value
    /// no release has (a release level other than a/b/rc/final, a major other than 3).
    pub fn from_hex(hex: u64) -> Option<Self> {
        if hex >> 32 != 0 {
            return None;
        }
        let v = PyVersion {
            major: (hex >> 24) as u8,
            minor: (hex >> 16) as u8,
            micro: Some((hex >> 8) as u8),
            level: ((hex >> 4) & 0xF) as u8,
            serial: (hex & 0xF) as u8,
        };
        (v.major == 3 && matches!(v.level, 0xA | 0xB | 0xC | 0xF)).then_some(v)
    }

    /// `(major, minor)`, what the struct layouts depend on.
    pub fn key(self) -> (u8, u8) {
        (self.major, self.minor)
    }

    /// From a file name such as `libpython3.11.so.1.0`, `libpython3.6m.so`, `python3.11` or
    /// `libpython3.13t.so`: the version and whether the name marks a free-threaded build.
    pub fn from_file_name(name: &str) -> Option<(PyVersion, bool)> {
        let base = name.rsplit('/').next().unwrap_or(name);
        let rest = base
            .strip_prefix("libpython")
            .or_else(|| base.strip_prefix("python"))?;
        let (major, rest) = rest.split_once('.')?;
        let major: u8 = major.parse().ok()?;
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        if digits.is_empty() || digits.len() > 3 {
            return None;
        }
        let minor: u8 = digits.parse().ok()?;
        let tail = &rest[digits.len()..];
        // ABI flags follow the version: `m` (pymalloc, before 3.8), `d` (debug), `t`
        // (free-threaded, 3.13+); then the end, `.so…` or `-…`.
        let flags: String = tail
            .chars()
            .take_while(|c| c.is_ascii_lowercase())
            .collect();
        let after = &tail[flags.len()..];
        if !(after.is_empty() || after.starts_with('.') || after.starts_with('-')) {
            return None;
        }
        if !flags.chars().all(|c| matches!(c, 'm' | 'd' | 't' | 'u')) {
            return None;
        }
        Some((PyVersion::minor(major, minor), flags.contains('t')))
    }
}

impl fmt::Display for PyVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)?;
        if let Some(micro) = self.micro {
            write!(f, ".{micro}")?;
        }
        match self.level {
            0xA => write!(f, "a{}", self.serial),
            0xB => write!(f, "b{}", self.serial),
            0xC => write!(f, "rc{}", self.serial),
            _ => Ok(()),
        }
    }
}

/// The exported API functions that first appeared in a minor version, newest first: a
/// file exporting the first of these names is at least that version. Checked on pyenv's
/// 2.7 and 3.6–3.13 (`tests/detect_real.rs`); what tells versions apart when neither
/// `Py_Version` (3.11+) nor a `libpython3.X` name is there (a static, renamed interpreter).
pub(crate) const FIRST_IN: [(&str, PyVersion); 5] = [
    ("Py_Version", PyVersion::minor(3, 11)),
    ("Py_Is", PyVersion::minor(3, 10)),
    ("PyModule_AddType", PyVersion::minor(3, 9)),
    ("PyConfig_InitPythonConfig", PyVersion::minor(3, 8)),
    ("PyContext_New", PyVersion::minor(3, 7)),
];

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn hex_versions() {
        let v = PyVersion::from_hex(0x030B_02F0).unwrap();
        assert_eq!(
            (v.major, v.minor, v.micro, v.level, v.serial),
            (3, 11, Some(2), 0xF, 0)
        );
        assert_eq!(v.to_string(), "3.11.2");
        assert_eq!(
            PyVersion::from_hex(0x030E_00A3).unwrap().to_string(),
            "3.14.0a3"
        );
        assert_eq!(
            PyVersion::from_hex(0x030D_00C1).unwrap().to_string(),
            "3.13.0rc1"
        );
        assert_eq!(
            PyVersion::from_hex(0x030D_00F0).unwrap().to_string(),
            "3.13.0"
        );
        assert_eq!(PyVersion::minor(3, 13).to_string(), "3.13");
        assert_eq!(PyVersion::from_hex(0x0207_12F0), None, "not Python 3");
        assert_eq!(PyVersion::from_hex(0x030B_0250), None, "no release level 5");
        assert_eq!(PyVersion::from_hex(1 << 40), None);
    }

    #[test]
    fn file_names() {
        let n = |s| PyVersion::from_file_name(s).map(|(v, t)| (v.to_string(), t));
        assert_eq!(n("libpython3.11.so.1.0"), Some(("3.11".into(), false)));
        assert_eq!(
            n("/x/lib/libpython3.6m.so.1.0"),
            Some(("3.6".into(), false))
        );
        assert_eq!(n("libpython3.13t.so"), Some(("3.13".into(), true)));
        assert_eq!(n("/usr/bin/python3.11"), Some(("3.11".into(), false)));
        assert_eq!(n("libpython2.7.so.1.0"), Some(("2.7".into(), false)));
        assert_eq!(n("python3"), None, "no minor version");
        assert_eq!(n("python3.11-config"), Some(("3.11".into(), false)));
        assert_eq!(n("libpython3.x.so"), None);
        assert_eq!(n("libpython3.11zz.so"), None);
        assert_eq!(n("pythonista3.1"), None);
    }
}
