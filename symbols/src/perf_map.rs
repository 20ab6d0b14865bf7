//! JIT symbol maps (`/tmp/perf-PID.map`: `START SIZE name` per line, hex), which JITs
//! write so profilers can name their code: the parser, and [`PerfMaps`], the maps read
//! so far, read again when an address is missing (the JIT appends as it compiles).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One JIT symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerfMapEntry {
    pub start: u64,
    pub size: u64,
    pub name: String,
}

/// Entries sorted by start; malformed lines are skipped. Names are kept as written
/// (control characters included): sanitising is the job of whatever prints them.
pub fn parse(text: &[u8]) -> Vec<PerfMapEntry> {
    let mut out: Vec<PerfMapEntry> = text
        .split(|&b| b == b'\n')
        .filter_map(|line| {
            let line = String::from_utf8_lossy(line);
            let line = line.trim_start();
            let (start, rest) = line.split_once(' ')?;
            let (size, name) = rest.trim_start().split_once(' ')?;
            let start = u64::from_str_radix(start.trim_start_matches("0x"), 16).ok()?;
            let size = u64::from_str_radix(size.trim_start_matches("0x"), 16).ok()?;
            Some(PerfMapEntry {
                start,
                size,
                name: name.trim_end_matches('\r').to_string(),
            })
        })
        .collect();
    out.sort_by_key(|e| e.start);
    out
}

/// The entry covering `addr`.
pub fn lookup(entries: &[PerfMapEntry], addr: u64) -> Option<&PerfMapEntry> {
    let i = entries.partition_point(|e| e.start <= addr);
    let e = entries.get(i.checked_sub(1)?)?;
    (addr < e.start.saturating_add(e.size)).then_some(e)
}

/// The perf maps read so far, by path.
#[derive(Debug, Default)]
pub struct PerfMaps {
    maps: HashMap<PathBuf, Vec<PerfMapEntry>>,
}

impl PerfMaps {
    /// The names of `addrs` in the map at `path` (one entry per address). The file is
    /// read at the first call, and again for each address the copy read earlier does
    /// not cover.
    pub fn names(&mut self, path: &Path, addrs: &[u64]) -> Vec<Option<String>> {
        let mut reread = !self.maps.contains_key(path);
        addrs
            .iter()
            .map(|&addr| {
                let known = self.maps.get(path).map_or(&[][..], Vec::as_slice);
                if reread || lookup(known, addr).is_none() {
                    if let Ok(bytes) = std::fs::read(path) {
                        self.maps.insert(path.to_path_buf(), parse(&bytes));
                    }
                    reread = false;
                }
                let entries = self.maps.get(path)?;
                lookup(entries, addr).map(|e| e.name.clone())
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_looks_up() {
        let m = parse(
            b"7f0000001000 40 jitted one\n0x7f0000000000 10 first\nbad line\n7f0000002000 zz x\n",
        );
        assert_eq!(m.len(), 2);
        assert_eq!(
            lookup(&m, 0x7f0000001010).map(|e| e.name.as_str()),
            Some("jitted one")
        );
        assert_eq!(
            lookup(&m, 0x7f0000000005).map(|e| e.name.as_str()),
            Some("first")
        );
        assert!(lookup(&m, 0x7f0000000010).is_none());
    }

    #[test]
    fn keeps_hostile_bytes_for_later_sanitising() {
        let m = parse(b"1000 10 \x1b[31mevil\x07\n");
        assert_eq!(m[0].name, "\u{1b}[31mevil\u{7}");
    }

    #[test]
    fn a_map_is_read_again_when_the_jit_has_appended() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("perf-1.map");
        std::fs::write(&path, "1000 10 first\n").expect("write");
        let mut maps = PerfMaps::default();
        assert_eq!(maps.names(&path, &[0x1004]), vec![Some("first".into())]);
        std::fs::write(&path, "1000 10 first\n2000 10 second\n").expect("write");
        assert_eq!(
            maps.names(&path, &[0x1008, 0x2004, 0x3000]),
            vec![Some("first".into()), Some("second".into()), None]
        );
    }
}
