//! JIT symbol maps (`/tmp/perf-PID.map`: `START SIZE name` per line, hex), which JITs
//! write so profilers can name their code.

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
}
