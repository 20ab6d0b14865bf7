//! A snapshot of the kernel's symbols (`/proc/kallsyms`), to turn kernel addresses into
//! symbol + offset at record time so no raw kernel address reaches the capture.

use std::path::Path;

/// A kernel text symbol, as returned by [`Kallsyms::resolve`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelSymbol<'a> {
    pub addr: u64,
    pub name: &'a str,
    /// Kernel module name, `None` for the kernel image.
    pub module: Option<&'a str>,
}

/// One entry, packed: the names live in one shared string (there are ~200,000 kernel
/// symbols; a `String` each would cost the recorder tens of megabytes).
#[derive(Debug, Clone, Copy)]
struct Entry {
    addr: u64,
    name_start: u32,
    name_len: u16,
    /// Index into `modules` plus one; 0 for the kernel image.
    module: u16,
}

/// Accumulates entries while parsing.
#[derive(Debug, Default)]
struct Builder {
    k: Kallsyms,
    module_ids: std::collections::HashMap<String, u16>,
}

impl Builder {
    fn line(&mut self, line: &str) {
        let mut it = line.split_ascii_whitespace();
        let (Some(addr), Some(kind), Some(name)) = (it.next(), it.next(), it.next()) else {
            return;
        };
        let Ok(addr) = u64::from_str_radix(addr, 16) else {
            return;
        };
        if !matches!(kind, "t" | "T" | "w" | "W") || addr == 0 {
            return;
        }
        let k = &mut self.k;
        let (Ok(name_start), Ok(name_len)) =
            (u32::try_from(k.names.len()), u16::try_from(name.len()))
        else {
            return;
        };
        let module = match it
            .next()
            .and_then(|m| m.strip_prefix('['))
            .and_then(|m| m.strip_suffix(']'))
        {
            None => 0,
            Some(m) => match self.module_ids.get(m) {
                Some(&id) => id,
                None => {
                    k.modules.push(m.to_string());
                    let id = u16::try_from(k.modules.len()).unwrap_or(0);
                    self.module_ids.insert(m.to_string(), id);
                    id
                }
            },
        };
        k.names.push_str(name);
        k.entries.push(Entry {
            addr,
            name_start,
            name_len,
            module,
        });
    }

    fn finish(self) -> Kallsyms {
        let mut k = self.k;
        k.entries.sort_by_key(|e| e.addr);
        k.entries.shrink_to_fit();
        k.names.shrink_to_fit();
        k
    }
}

/// Kernel text symbols sorted by address.
#[derive(Debug, Default)]
pub struct Kallsyms {
    entries: Vec<Entry>,
    names: String,
    modules: Vec<String>,
}

impl Kallsyms {
    /// Parses the text of `/proc/kallsyms`, keeping text symbols (`t`, `T`, `w`, `W`).
    pub fn parse(text: &str) -> Self {
        let mut k = Builder::default();
        for line in text.lines() {
            k.line(line);
        }
        k.finish()
    }

    /// Reads `/proc/kallsyms` line by line (the file is ~10 MB of text; holding it whole
    /// would double the recorder's peak memory). Without privilege every address reads as
    /// 0, which leaves the snapshot empty: report that instead of resolving everything to
    /// one symbol.
    pub fn read(path: &Path) -> std::io::Result<Self> {
        use std::io::BufRead;
        let mut reader = std::io::BufReader::new(std::fs::File::open(path)?);
        let mut k = Builder::default();
        let mut line = String::new();
        while reader.read_line(&mut line)? > 0 {
            k.line(line.trim_end_matches('\n'));
            line.clear();
        }
        Ok(k.finish())
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The symbol containing `addr`, with the offset into it.
    pub fn resolve(&self, addr: u64) -> Option<(KernelSymbol<'_>, u64)> {
        let i = self.entries.partition_point(|e| e.addr <= addr);
        let e = self.entries.get(i.checked_sub(1)?)?;
        let start = e.name_start as usize;
        let name = self.names.get(start..start + usize::from(e.name_len))?;
        let module = match e.module {
            0 => None,
            m => self.modules.get(usize::from(m) - 1).map(String::as_str),
        };
        Some((
            KernelSymbol {
                addr: e.addr,
                name,
                module,
            },
            addr - e.addr,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
ffffffff81000000 T _stext
ffffffff81000100 t do_thing
ffffffff81000200 D some_data
ffffffff81000300 T vfs_write
ffffffffc0000000 t mod_fn\t[ext4]
0000000000000000 T hidden
";

    #[test]
    fn resolves_text_symbols_with_offsets_and_modules() {
        let k = Kallsyms::parse(TEXT);
        let (s, off) = k.resolve(0xffffffff81000110).expect("resolves");
        assert_eq!((s.name, off), ("do_thing", 0x10));
        // Data symbols are skipped: an address after `some_data` still belongs to do_thing.
        let (s, off) = k.resolve(0xffffffff81000250).expect("resolves");
        assert_eq!((s.name, off), ("do_thing", 0x150));
        let (s, _) = k.resolve(0xffffffffc0000004).expect("resolves");
        assert_eq!(s.module, Some("ext4"));
        assert!(k.resolve(0x1000).is_none());
    }

    #[test]
    fn unprivileged_snapshot_is_empty() {
        assert!(Kallsyms::parse("0000000000000000 T a\n0000000000000000 t b\n").is_empty());
    }
}
