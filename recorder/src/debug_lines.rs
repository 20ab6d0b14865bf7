//! Source lines from a module's `.debug_line` section alone, for modules whose DWARF is
//! stored compressed (distribution debug packages such as libc6-dbg). A full DWARF
//! symboliser inflates every debug section up front: for libc that is ~10 MB, ~60 ms of
//! CPU and ~11 MB of memory to name a handful of frames. The line table alone is 1.3 MB
//! and gives file:line; the price is that inlined-function frames are not reconstructed
//! for these modules (that needs `.debug_info`, the biggest section).

use std::fs::File;
use std::io::Read;
use std::path::Path;

use gimli::{AttributeValue, DebugLine, DebugLineOffset, DebugLineStr, DebugStr, RunTimeEndian};
use object::{Object, ObjectSection, ObjectSegment, ReadCache, ReadRef, SegmentFlags};

/// How a module's line table is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineInfo {
    /// No `.debug_line` section.
    Absent,
    /// Stored as is: a full symboliser reads it in place, cheaply.
    Plain,
    /// zlib or zstd compressed (`SHF_COMPRESSED`, or an old-style `.zdebug_line`).
    Compressed,
}

/// Whether and how the ELF file at `path` holds a line table. Reads the headers only.
pub fn line_info(path: &Path) -> Option<LineInfo> {
    let file = File::open(path).ok()?;
    let cache = ReadCache::new(file);
    let obj = object::File::parse(&cache).ok()?;
    let Some(section) = debug_line_section(&obj) else {
        return Some(LineInfo::Absent);
    };
    let range = section.compressed_file_range().ok()?;
    Some(match range.format {
        object::CompressionFormat::None => LineInfo::Plain,
        _ => LineInfo::Compressed,
    })
}

fn debug_line_section<'data, 'file, R: ReadRef<'data>>(
    obj: &'file object::File<'data, R>,
) -> Option<object::Section<'data, 'file, R>> {
    obj.section_by_name(".debug_line")
        .or_else(|| obj.section_by_name(".zdebug_line"))
}

/// Virtual address of a file offset inside one of the executable `PT_LOAD` segments of
/// the ELF file at `path` (the one that was mapped), for every offset in `offsets`.
pub fn virtual_addresses(path: &Path, offsets: &[u64]) -> Option<Vec<Option<u64>>> {
    let file = File::open(path).ok()?;
    let cache = ReadCache::new(file);
    let obj = object::File::parse(&cache).ok()?;
    let segments: Vec<(u64, u64, u64)> = obj
        .segments()
        .filter(|s| {
            matches!(s.flags(), SegmentFlags::Elf { p_flags, .. } if p_flags.0 & object::elf::PF_X.0 != 0)
        })
        .map(|s| {
            let (offset, size) = s.file_range();
            (offset, size, s.address())
        })
        .collect();
    Some(
        offsets
            .iter()
            .map(|&off| {
                segments
                    .iter()
                    .find(|&&(start, size, _)| off >= start && off - start < size)
                    .map(|&(start, _, vaddr)| off - start + vaddr)
            })
            .collect(),
    )
}

/// A source location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Directory and file as the line table names them, joined.
    pub file: String,
    pub line: u32,
}

/// One address range of generated code with rows in a line program.
#[derive(Debug, Clone, Copy)]
struct Sequence {
    start: u64,
    end: u64,
    /// Offset of its line program in `.debug_line`.
    program: usize,
}

/// A module's line table, inflated, with an index of which program covers which
/// addresses so that a lookup runs one program, not all of them.
#[derive(Debug)]
pub struct LineTable {
    line: Vec<u8>,
    line_str: Vec<u8>,
    strings: Vec<u8>,
    endian: RunTimeEndian,
    address_size: u8,
    /// Sorted by start.
    sequences: Vec<Sequence>,
}

impl LineTable {
    /// Reads and indexes the line table of the ELF file at `path`; `None` if it has none
    /// or it does not parse.
    pub fn read(path: &Path) -> Option<Self> {
        let file = File::open(path).ok()?;
        let cache = ReadCache::new(file);
        let obj = object::File::parse(&cache).ok()?;
        let endian = if obj.is_little_endian() {
            RunTimeEndian::Little
        } else {
            RunTimeEndian::Big
        };
        let address_size = if obj.is_64() { 8 } else { 4 };
        let line = section_bytes(debug_line_section(&obj)?)?;
        let named = |name: &str, z: &str| {
            obj.section_by_name(name)
                .or_else(|| obj.section_by_name(z))
                .and_then(section_bytes)
                .unwrap_or_default()
        };
        let line_str = named(".debug_line_str", ".zdebug_line_str");
        let strings = named(".debug_str", ".zdebug_str");
        let mut table = LineTable {
            line,
            line_str,
            strings,
            endian,
            address_size,
            sequences: Vec::new(),
        };
        table.sequences = table.index();
        table.line.shrink_to_fit();
        Some(table)
    }

    /// Runs every line program once to learn the address ranges each covers.
    fn index(&self) -> Vec<Sequence> {
        let debug_line = DebugLine::new(&self.line, self.endian);
        let mut sequences = Vec::new();
        let mut offset = 0;
        while offset < self.line.len() {
            let Ok(program) =
                debug_line.program(DebugLineOffset(offset), self.address_size, None, None)
            else {
                break;
            };
            let header = program.header();
            // Saturating: a corrupt length ends the walk instead of wrapping around.
            let next = offset
                .saturating_add(header.unit_length())
                .saturating_add(usize::from(header.format().initial_length_size()));
            let mut rows = program.rows();
            // First address of the sequence being read.
            let mut start = None;
            while let Ok(Some((_, row))) = rows.next_row() {
                let first = *start.get_or_insert(row.address());
                if row.end_sequence() {
                    if row.address() > first {
                        sequences.push(Sequence {
                            start: first,
                            end: row.address(),
                            program: offset,
                        });
                    }
                    start = None;
                }
            }
            if next <= offset {
                break;
            }
            offset = next;
        }
        sequences.sort_by_key(|s| s.start);
        sequences
    }

    /// The location of each of `addrs` (virtual addresses in the module's own terms),
    /// `None` where no line program covers it.
    pub fn lookup(&self, addrs: &[u64]) -> Vec<Option<Line>> {
        let mut out = vec![None; addrs.len()];
        // Addresses grouped by the program that covers them: each program runs once.
        let mut by_program: Vec<(usize, usize)> = addrs
            .iter()
            .enumerate()
            .filter_map(|(i, &a)| self.sequence_of(a).map(|s| (s.program, i)))
            .collect();
        by_program.sort_unstable();
        let debug_line = DebugLine::new(&self.line, self.endian);
        for group in by_program.chunk_by(|a, b| a.0 == b.0) {
            let Ok(program) =
                debug_line.program(DebugLineOffset(group[0].0), self.address_size, None, None)
            else {
                continue;
            };
            let mut rows = program.rows();
            // The row before the current one, within the current sequence.
            let mut prev: Option<(u64, u64, u32)> = None;
            while let Ok(Some((header, row))) = rows.next_row() {
                if let Some((from, file, line)) = prev {
                    for &(_, i) in group {
                        let a = addrs[i];
                        if from <= a && a < row.address() {
                            out[i] = Some(Line {
                                file: self.file_name(header, file).unwrap_or_default(),
                                line,
                            });
                        }
                    }
                }
                prev = (!row.end_sequence()).then(|| {
                    let line = row
                        .line()
                        .map_or(0, |l| u32::try_from(l.get()).unwrap_or(0));
                    (row.address(), row.file_index(), line)
                });
            }
        }
        out
    }

    /// The innermost sequence holding `addr`.
    fn sequence_of(&self, addr: u64) -> Option<&Sequence> {
        let i = self.sequences.partition_point(|s| s.start <= addr);
        // Sequences rarely overlap (code discarded at link time is left at address 0);
        // look back over the few that start at or before `addr`.
        self.sequences[..i]
            .iter()
            .rev()
            .take(8)
            .find(|s| addr < s.end)
    }

    fn file_name(
        &self,
        header: &gimli::LineProgramHeader<gimli::EndianSlice<'_, RunTimeEndian>>,
        index: u64,
    ) -> Option<String> {
        let entry = header.file(index)?;
        let mut path = self.string(entry.path_name())?;
        if path.starts_with('/') {
            return Some(path);
        }
        let mut dirs = vec![entry.directory(header).and_then(|d| self.string(d))];
        // DWARF 5 keeps the compilation directory as directory 0, and other directories
        // may be relative to it (DWARF 4 keeps it in .debug_info, which is not read).
        if header.version() >= 5 && entry.directory_index() != 0 {
            let comp_dir = header.directory(0).and_then(|d| self.string(d));
            dirs.push(comp_dir);
        }
        for dir in dirs.into_iter().flatten() {
            if path.starts_with('/') {
                break;
            }
            if !dir.is_empty() {
                path = format!("{}/{path}", dir.trim_end_matches('/'));
            }
        }
        Some(path)
    }

    fn string(
        &self,
        value: AttributeValue<gimli::EndianSlice<'_, RunTimeEndian>>,
    ) -> Option<String> {
        let bytes = match value {
            AttributeValue::String(s) => s,
            AttributeValue::DebugLineStrRef(o) => DebugLineStr::new(&self.line_str, self.endian)
                .get_str(o)
                .ok()?,
            AttributeValue::DebugStrRef(o) => {
                DebugStr::new(&self.strings, self.endian).get_str(o).ok()?
            }
            _ => return None,
        };
        Some(String::from_utf8_lossy(bytes.slice()).into_owned())
    }
}

/// The bytes of a section, inflated if stored compressed.
fn section_bytes<'data, R: ReadRef<'data>>(
    section: object::Section<'data, '_, R>,
) -> Option<Vec<u8>> {
    let compressed = section.compressed_data().ok()?;
    let size = usize::try_from(compressed.uncompressed_size).ok()?;
    // A corrupt header must not make us reserve gigabytes.
    let hint = size.min(64 << 20);
    let mut out = Vec::with_capacity(hint);
    match compressed.format {
        object::CompressionFormat::None => out.extend_from_slice(compressed.data),
        object::CompressionFormat::Zlib => {
            flate2::read::ZlibDecoder::new(compressed.data)
                .take(size as u64)
                .read_to_end(&mut out)
                .ok()?;
        }
        object::CompressionFormat::Zstandard => {
            zstd::stream::read::Decoder::new(compressed.data)
                .ok()?
                .take(size as u64)
                .read_to_end(&mut out)
                .ok()?;
        }
        _ => return None,
    }
    Some(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::process::Command;

    /// C source with enough functions that the linker's section compression pays (it
    /// leaves small sections plain), and the line of `work_fn`'s body.
    pub(crate) fn source() -> (String, u32) {
        let mut c = String::from("#include <stdio.h>\n");
        for i in 0..200 {
            c.push_str(&format!(
                "__attribute__((noinline)) int f{i}(int x) {{ int y = x * {i} + 1;\n  \
                 if (y % 7 == 3) y += {i};\n  return y ^ {i}; }}\n"
            ));
        }
        let work_line = c.lines().count() as u32 + 2;
        c.push_str("__attribute__((noinline)) int work_fn(int x) {\n    return x * 3 + 1;\n}\n");
        c.push_str("int main(int argc, char **argv) { (void)argv; int s = work_fn(argc);\n");
        for i in 0..200 {
            c.push_str(&format!("  s += f{i}(s);\n"));
        }
        c.push_str("  printf(\"%d\\n\", s); return 0; }\n");
        (c, work_line)
    }

    pub(crate) fn compile(dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
        let src = dir.join("lines.c");
        std::fs::write(&src, source().0).expect("write source");
        let out = dir.join(name);
        let status = Command::new("cc")
            .args(["-O1", "-g", "-Wl,--build-id=sha1"])
            .args(extra)
            .arg("-o")
            .arg(&out)
            .arg(&src)
            .status()
            .expect("run cc");
        assert!(status.success(), "cc {extra:?} failed");
        out
    }

    /// Virtual address of a symbol, from the symbol table.
    pub(crate) fn symbol_address(path: &Path, name: &str) -> u64 {
        use object::ObjectSymbol;
        let data = std::fs::read(path).expect("read binary");
        let obj = object::File::parse(&*data).expect("parse");
        obj.symbols()
            .find(|s| s.name() == Ok(name))
            .map(|s| s.address())
            .expect("symbol present")
    }

    /// binutils' answer for `addr`: (file name, line).
    fn addr2line(path: &Path, addr: u64) -> (String, u32) {
        let out = Command::new("addr2line")
            .arg("-e")
            .arg(path)
            .arg(format!("{addr:#x}"))
            .output()
            .expect("run addr2line");
        let text = String::from_utf8_lossy(&out.stdout);
        let (file, line) = text.trim().rsplit_once(':').expect("file:line");
        let line = line.split_whitespace().next().unwrap_or("0");
        (file.to_string(), line.parse().expect("line number"))
    }

    #[test]
    fn compressed_line_tables_give_the_lines_binutils_gives() {
        let dir = tempfile::tempdir().expect("tempdir");
        let plain = compile(dir.path(), "plain", &[]);
        let packed = compile(dir.path(), "packed", &["-gz=zlib"]);
        assert_eq!(line_info(&plain), Some(LineInfo::Plain));
        assert_eq!(line_info(&packed), Some(LineInfo::Compressed));

        let mut addrs: Vec<u64> = (0..200)
            .step_by(17)
            .map(|i| symbol_address(&packed, &format!("f{i}")) + 4)
            .collect();
        let work = symbol_address(&packed, "work_fn");
        addrs.push(work);
        let table = LineTable::read(&packed).expect("line table");
        let found = table.lookup(&addrs);
        for (&addr, got) in addrs.iter().zip(&found) {
            let got = got
                .as_ref()
                .unwrap_or_else(|| panic!("no line for {addr:#x}"));
            let (file, line) = addr2line(&packed, addr);
            assert_eq!(got.line, line, "line of {addr:#x}");
            assert!(
                got.file.ends_with("lines.c") && file.ends_with("lines.c"),
                "{} vs {file}",
                got.file
            );
        }
        let work_line = found.last().and_then(|l| l.as_ref()).map(|l| l.line);
        assert!(
            work_line.is_some_and(|l| l + 1 >= source().1 && l <= source().1),
            "work_fn at line {work_line:?}, body at {}",
            source().1
        );
        // Outside any function: no line rather than a neighbour's.
        assert_eq!(table.lookup(&[0x10]), vec![None]);
    }

    #[test]
    fn modules_without_line_tables_are_told_apart() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bin = compile(dir.path(), "plain", &["-g0"]);
        assert_eq!(line_info(&bin), Some(LineInfo::Absent));
        assert!(LineTable::read(&bin).is_none());
        assert_eq!(line_info(&dir.path().join("nothing")), None);
    }
}
