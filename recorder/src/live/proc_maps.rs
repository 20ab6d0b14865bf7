//! Parsing `/proc/PID/maps`: a live process's executable mappings.

use std::path::Path;

use crate::event::Mapping;

/// Parses the text of `/proc/PID/maps`, keeping executable mappings only, sorted by start.
pub fn parse_maps(text: &str) -> Vec<Mapping> {
    let mut out: Vec<Mapping> = text.lines().filter_map(parse_line).collect();
    out.sort_by_key(|m| m.start);
    out
}

fn parse_line(line: &str) -> Option<Mapping> {
    // address perms offset dev inode [path]; the path may contain spaces.
    let mut rest = line;
    let mut field = || {
        let trimmed = rest.trim_start();
        let end = trimmed.find(' ').unwrap_or(trimmed.len());
        let (f, r) = trimmed.split_at(end);
        rest = r;
        f
    };
    let range = field();
    let perms = field();
    let offset = field();
    let _dev = field();
    let inode = field();
    let path = rest.trim_start();
    if perms.as_bytes().get(2) != Some(&b'x') {
        return None;
    }
    let (start, end) = range.split_once('-')?;
    let path = path.strip_suffix(" (deleted)").unwrap_or(path);
    Some(Mapping {
        start: u64::from_str_radix(start, 16).ok()?,
        end: u64::from_str_radix(end, 16).ok()?,
        offset: u64::from_str_radix(offset, 16).ok()?,
        inode: inode.parse().ok()?,
        path: path.to_string(),
    })
}

/// Reads and parses the maps of `pid`; `None` when the process is gone.
pub fn read_maps(proc_root: &Path, pid: u32) -> Option<Vec<Mapping>> {
    let text = std::fs::read_to_string(proc_root.join(pid.to_string()).join("maps")).ok()?;
    Some(parse_maps(&text))
}

/// Finds the mapping holding `addr` in a list sorted by start.
pub fn find(maps: &[Mapping], addr: u64) -> Option<&Mapping> {
    let i = maps.partition_point(|m| m.start <= addr);
    let m = maps.get(i.checked_sub(1)?)?;
    (addr < m.end).then_some(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::MappingKind;

    const MAPS: &str = "\
55d0c0000000-55d0c0001000 r--p 00000000 fe:01 1234 /usr/bin/my prog
55d0c0001000-55d0c0005000 r-xp 00001000 fe:01 1234 /usr/bin/my prog
7f0000000000-7f0000100000 r-xp 00028000 fe:01 99 /usr/lib/libc.so.6 (deleted)
7f1000000000-7f1000001000 rwxp 00000000 00:00 0
7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                          [vdso]
";

    #[test]
    fn keeps_executable_mappings_with_paths_and_offsets() {
        let maps = parse_maps(MAPS);
        assert_eq!(maps.len(), 4);
        assert_eq!(maps[0].path, "/usr/bin/my prog");
        assert_eq!(maps[0].offset, 0x1000);
        assert_eq!(maps[1].path, "/usr/lib/libc.so.6");
        assert_eq!(maps[1].kind(), MappingKind::File);
        assert_eq!(maps[2].kind(), MappingKind::Anonymous);
        assert_eq!(maps[3].kind(), MappingKind::Vdso);
    }

    #[test]
    fn finds_the_mapping_of_an_address() {
        let maps = parse_maps(MAPS);
        assert_eq!(find(&maps, 0x55d0c0001000).map(|m| m.inode), Some(1234));
        assert_eq!(find(&maps, 0x55d0c0004fff).map(|m| m.inode), Some(1234));
        assert!(find(&maps, 0x55d0c0005000).is_none());
        assert!(find(&maps, 0x10).is_none());
    }

    #[test]
    fn garbage_lines_are_ignored() {
        assert!(parse_maps("nonsense\n\n-- r-xp\nzz-yy r-xp 0 0 0 /x\n").is_empty());
    }
}
