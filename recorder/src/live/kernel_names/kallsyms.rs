//! A snapshot of `/proc/kallsyms`: kernel text symbols sorted by address, packed into
//! one string of names.

use std::io::Read;
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
    /// One line, `ADDR KIND NAME` or `ADDR KIND NAME\t[MODULE]`, as bytes: checking
    /// each of ~120,000 lines for UTF-8 and splitting it into `&str`s was most of the
    /// parse's cost, and only the kept names need checking.
    fn line(&mut self, line: &[u8]) {
        let mut fields = line
            .split(|&b| b == b' ' || b == b'\t')
            .filter(|f| !f.is_empty());
        let (Some(addr), Some(kind), Some(name)) = (fields.next(), fields.next(), fields.next())
        else {
            return;
        };
        if !matches!(kind, b"t" | b"T" | b"w" | b"W") {
            return;
        }
        let Some(addr) = parse_hex(addr).filter(|&a| a != 0) else {
            return;
        };
        let Ok(name) = std::str::from_utf8(name) else {
            return;
        };
        let k = &mut self.k;
        let (Ok(name_start), Ok(name_len)) =
            (u32::try_from(k.names.len()), u16::try_from(name.len()))
        else {
            return;
        };
        let module = match fields
            .next()
            .and_then(|m| m.strip_prefix(b"["))
            .and_then(|m| m.strip_suffix(b"]"))
            .and_then(|m| std::str::from_utf8(m).ok())
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
            k.line(line.as_bytes());
        }
        k.finish()
    }

    /// Reads `/proc/kallsyms` a large block at a time, parsing the lines inside each
    /// block (the file is ~5 MB of text; holding it whole would double the recorder's
    /// peak memory, and a read per line costs a syscall and a copy each). Without
    /// privilege every address reads as 0, which leaves the snapshot empty: report that
    /// instead of resolving everything to one symbol.
    pub fn read(path: &Path) -> std::io::Result<Self> {
        let mut file = std::fs::File::open(path)?;
        let mut k = Builder::default();
        let mut buf = vec![0u8; 256 << 10];
        // Bytes of an unfinished line kept at the start of `buf`.
        let mut kept = 0;
        loop {
            let n = match file.read(&mut buf[kept..]) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if n == 0 {
                k.line(&buf[..kept]);
                break;
            }
            let end = kept + n;
            let mut start = 0;
            while let Some(nl) = buf[start..end].iter().position(|&b| b == b'\n') {
                k.line(&buf[start..start + nl]);
                start += nl + 1;
            }
            buf.copy_within(start..end, 0);
            kept = end - start;
            if kept == buf.len() {
                // A "line" as long as the buffer is not a symbol: skip it.
                kept = 0;
            }
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

/// A hex number of at most 16 digits, no prefix.
fn parse_hex(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    digits.iter().try_fold(0u64, |acc, &d| {
        let v = (d as char).to_digit(16)?;
        Some(acc << 4 | u64::from(v))
    })
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

    /// Enough lines to cross several of `read`'s blocks, so lines split between two
    /// reads are put back together.
    fn big_text() -> String {
        let mut text = String::new();
        for i in 0..20_000u64 {
            let kind = if i % 7 == 0 { 'D' } else { 't' };
            let module = if i % 5 == 0 { "\t[mod_a]" } else { "" };
            text.push_str(&format!(
                "{:016x} {kind} function_number_{i}{module}\n",
                0xffffffff81000000u64 + i * 0x40
            ));
        }
        text
    }

    #[test]
    fn reading_in_blocks_matches_parsing_the_whole_text() {
        let text = big_text();
        assert!(text.len() > 3 * (256 << 10), "must span several blocks");
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("kallsyms");
        std::fs::write(&path, &text).expect("write");
        let read = Kallsyms::read(&path).expect("read");
        let parsed = Kallsyms::parse(&text);
        assert_eq!(read.entries.len(), parsed.entries.len());
        // The first symbol is data: nothing before it names the address.
        assert_eq!(read.resolve(0xffffffff81000003), None);
        for i in [1u64, 6, 7, 4095, 4096, 19_999] {
            let addr = 0xffffffff81000000u64 + i * 0x40 + 3;
            let (a, b) = (read.resolve(addr), parsed.resolve(addr));
            assert_eq!(a, b, "address {addr:#x}");
            let (sym, off) = a.expect("resolves");
            // Data symbols (every 7th) are skipped: they fall to the text symbol before.
            let owner = if i % 7 == 0 { i - 1 } else { i };
            assert_eq!(sym.name, format!("function_number_{owner}"));
            assert_eq!(off, 3 + (i - owner) * 0x40);
            assert_eq!(sym.module, (owner % 5 == 0).then_some("mod_a"));
        }
    }
}
