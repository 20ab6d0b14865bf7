//! A snapshot of the kernel's symbols (`/proc/kallsyms`), to turn kernel addresses into
//! symbol + offset at record time so no raw kernel address reaches the capture.

use std::path::Path;

/// A kernel text symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelSymbol {
    pub addr: u64,
    pub name: String,
    /// Kernel module name, `None` for the kernel image.
    pub module: Option<String>,
}

/// Kernel text symbols sorted by address.
#[derive(Debug, Default)]
pub struct Kallsyms {
    syms: Vec<KernelSymbol>,
}

impl Kallsyms {
    /// Parses the text of `/proc/kallsyms`, keeping text symbols (`t`, `T`, `w`, `W`).
    pub fn parse(text: &str) -> Self {
        let mut syms: Vec<KernelSymbol> = text
            .lines()
            .filter_map(|line| {
                let mut it = line.split_ascii_whitespace();
                let addr = u64::from_str_radix(it.next()?, 16).ok()?;
                let kind = it.next()?;
                let name = it.next()?;
                if !matches!(kind, "t" | "T" | "w" | "W") || addr == 0 {
                    return None;
                }
                let module = it
                    .next()
                    .and_then(|m| m.strip_prefix('['))
                    .and_then(|m| m.strip_suffix(']'))
                    .map(str::to_string);
                Some(KernelSymbol {
                    addr,
                    name: name.to_string(),
                    module,
                })
            })
            .collect();
        syms.sort_by_key(|s| s.addr);
        Kallsyms { syms }
    }

    /// Reads `/proc/kallsyms`. Without privilege every address reads as 0, which leaves
    /// the snapshot empty: report that instead of resolving everything to one symbol.
    pub fn read(path: &Path) -> std::io::Result<Self> {
        Ok(Self::parse(&std::fs::read_to_string(path)?))
    }

    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    /// The symbol containing `addr`, with the offset into it.
    pub fn resolve(&self, addr: u64) -> Option<(&KernelSymbol, u64)> {
        let i = self.syms.partition_point(|s| s.addr <= addr);
        let sym = self.syms.get(i.checked_sub(1)?)?;
        Some((sym, addr - sym.addr))
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
        assert_eq!((s.name.as_str(), off), ("do_thing", 0x10));
        // Data symbols are skipped: an address after `some_data` still belongs to do_thing.
        let (s, off) = k.resolve(0xffffffff81000250).expect("resolves");
        assert_eq!((s.name.as_str(), off), ("do_thing", 0x150));
        let (s, _) = k.resolve(0xffffffffc0000004).expect("resolves");
        assert_eq!(s.module.as_deref(), Some("ext4"));
        assert!(k.resolve(0x1000).is_none());
    }

    #[test]
    fn unprivileged_snapshot_is_empty() {
        assert!(Kallsyms::parse("0000000000000000 T a\n0000000000000000 t b\n").is_empty());
    }
}
