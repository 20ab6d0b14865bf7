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
use object::{Object, ObjectSection, ReadCache, ReadRef};

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

/// A module's line table with an index of which program covers which addresses, so
/// that a lookup runs one program, not all of them.
///
/// Both are built only as far as lookups need: the section is inflated, and its programs
/// indexed, in file order until every address asked for is covered. The programs a
/// profile needs are often near the start (libc's startup code is in its third of 2,063),
/// and a table read to the end costs ~15 ms for libc.
#[derive(Debug)]
pub struct LineTable {
    /// The section's bytes inflated so far, from its start.
    line: Vec<u8>,
    /// What is still compressed; `None` once `line` is the whole section.
    rest: Option<Inflating>,
    line_str: Vec<u8>,
    /// `.debug_str` as stored, inflated on first use: DWARF 5 line tables name their
    /// files in `.debug_line_str`, so it is seldom needed (libc's is 190 kB inflated).
    strings: (Option<StoredSection>, std::cell::OnceCell<Vec<u8>>),
    endian: RunTimeEndian,
    address_size: u8,
    /// Offset of the first program not indexed yet.
    next_program: usize,
    /// Every program is indexed (or the rest does not parse).
    indexed: bool,
    /// Sequences of the indexed programs, sorted by start.
    sequences: Vec<Sequence>,
    /// Inflated in steps of at least this much ([`INFLATE_STEP`]; tests use less).
    inflate_step: usize,
}

/// A section's bytes as the file holds them.
#[derive(Debug)]
struct StoredSection {
    format: object::CompressionFormat,
    data: Vec<u8>,
    uncompressed_size: u64,
}

/// A zlib stream being inflated a piece at a time.
struct Inflating {
    compressed: Vec<u8>,
    consumed: usize,
    z: flate2::Decompress,
}

impl std::fmt::Debug for Inflating {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inflating")
            .field("compressed", &self.compressed.len())
            .field("consumed", &self.consumed)
            .finish_non_exhaustive()
    }
}

/// Inflated in steps of at least this much.
const INFLATE_STEP: usize = 64 << 10;

impl LineTable {
    /// Opens the line table of the ELF file at `path`; `None` if it has none or its
    /// compression is unknown. Nothing is indexed yet.
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
        let section = debug_line_section(&obj)?.compressed_data().ok()?;
        let (line, rest) = match section.format {
            object::CompressionFormat::Zlib => (
                Vec::new(),
                Some(Inflating {
                    compressed: section.data.to_vec(),
                    consumed: 0,
                    z: flate2::Decompress::new(true),
                }),
            ),
            // Plain needs no inflating; zstd (rare in debug packages) is inflated whole.
            _ => (decompress(section)?, None),
        };
        let named = |name: &str, z: &str| {
            obj.section_by_name(name)
                .or_else(|| obj.section_by_name(z))
                .and_then(|s| decompress(s.compressed_data().ok()?))
                .unwrap_or_default()
        };
        let line_str = named(".debug_line_str", ".zdebug_line_str");
        let strings = obj
            .section_by_name(".debug_str")
            .or_else(|| obj.section_by_name(".zdebug_str"))
            .and_then(|s| s.compressed_data().ok())
            .map(|c| StoredSection {
                format: c.format,
                data: c.data.to_vec(),
                uncompressed_size: c.uncompressed_size,
            });
        Some(LineTable {
            line,
            rest,
            line_str,
            strings: (strings, std::cell::OnceCell::new()),
            endian,
            address_size,
            next_program: 0,
            indexed: false,
            sequences: Vec::new(),
            inflate_step: INFLATE_STEP,
        })
    }

    /// Inflates until `line` holds at least `len` bytes; whether it does.
    fn inflate_to(&mut self, len: usize) -> bool {
        while self.line.len() < len {
            let Some(rest) = &mut self.rest else {
                return false;
            };
            self.line
                .reserve((len - self.line.len()).max(self.inflate_step));
            let before = (rest.z.total_in(), self.line.len());
            let status = rest.z.decompress_vec(
                &rest.compressed[rest.consumed..],
                &mut self.line,
                flate2::FlushDecompress::None,
            );
            rest.consumed += (rest.z.total_in() - before.0) as usize;
            let stuck = rest.z.total_in() == before.0 && self.line.len() == before.1;
            if !matches!(status, Ok(flate2::Status::Ok)) || stuck {
                // The end of the stream (or a corrupt one): nothing more will come.
                self.rest = None;
                self.line.shrink_to_fit();
            }
        }
        true
    }

    /// Indexes the next program; false once there is none.
    fn index_next(&mut self) -> bool {
        if self.indexed {
            return false;
        }
        let offset = self.next_program;
        let length = self.inflate_to(offset + 4).then(|| {
            let word = self.word(offset);
            // 0xffffffff: a 64-bit DWARF unit, its length in the next 8 bytes.
            if word == u32::MAX {
                self.inflate_to(offset + 12).then(|| {
                    let low = u64::from(self.word(offset + 4));
                    let high = u64::from(self.word(offset + 8));
                    let length = if self.endian == RunTimeEndian::Little {
                        high << 32 | low
                    } else {
                        low << 32 | high
                    };
                    usize::try_from(length).ok()?.checked_add(12)
                })?
            } else {
                usize::try_from(word).ok()?.checked_add(4)
            }
        });
        let end = length.flatten().and_then(|l| offset.checked_add(l));
        let Some(end) = end.filter(|&end| end > offset && self.inflate_to(end)) else {
            self.indexed = true;
            return false;
        };
        let debug_line = DebugLine::new(&self.line[..end], self.endian);
        let Ok(program) =
            debug_line.program(DebugLineOffset(offset), self.address_size, None, None)
        else {
            self.indexed = true;
            return false;
        };
        let mut rows = program.rows();
        // First address of the sequence being read.
        let mut start = None;
        while let Ok(Some((_, row))) = rows.next_row() {
            let first = *start.get_or_insert(row.address());
            if row.end_sequence() {
                if row.address() > first {
                    let at = self.sequences.partition_point(|s| s.start <= first);
                    self.sequences.insert(
                        at,
                        Sequence {
                            start: first,
                            end: row.address(),
                            program: offset,
                        },
                    );
                }
                start = None;
            }
        }
        self.next_program = end;
        true
    }

    /// A native-order 32-bit word of `line` (callers made sure it is inflated).
    fn word(&self, at: usize) -> u32 {
        let b = [
            self.line[at],
            self.line[at + 1],
            self.line[at + 2],
            self.line[at + 3],
        ];
        match self.endian {
            RunTimeEndian::Little => u32::from_le_bytes(b),
            RunTimeEndian::Big => u32::from_be_bytes(b),
        }
    }

    /// The location of each of `addrs` (virtual addresses in the module's own terms),
    /// `None` where no line program covers it.
    pub fn lookup(&mut self, addrs: &[u64]) -> Vec<Option<Line>> {
        for &addr in addrs {
            while self.sequence_of(addr).is_none() && self.index_next() {}
        }
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
                let strings = self.strings.1.get_or_init(|| {
                    self.strings
                        .0
                        .as_ref()
                        .and_then(|s| {
                            decompress(object::CompressedData {
                                format: s.format,
                                data: &s.data,
                                uncompressed_size: s.uncompressed_size,
                            })
                        })
                        .unwrap_or_default()
                });
                DebugStr::new(strings, self.endian).get_str(o).ok()?
            }
            _ => return None,
        };
        Some(String::from_utf8_lossy(bytes.slice()).into_owned())
    }
}

/// The bytes of a section, inflated if stored compressed.
fn decompress(compressed: object::CompressedData<'_>) -> Option<Vec<u8>> {
    let size = usize::try_from(compressed.uncompressed_size).ok()?;
    // A corrupt header must not make us reserve gigabytes.
    let mut out = Vec::with_capacity(size.min(64 << 20));
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

    /// Translation units: one with `work_fn` and `main`, then four of 50 small functions
    /// each (several line programs; enough code that the linker's section compression
    /// pays, it leaves small sections plain). Also the line of `work_fn`'s body.
    pub(crate) fn source() -> (Vec<String>, u32) {
        let mut main = String::from("#include <stdio.h>\n");
        for i in 0..200 {
            main.push_str(&format!("int f{i}(int x);\n"));
        }
        let work_line = main.lines().count() as u32 + 2;
        main.push_str("__attribute__((noinline)) int work_fn(int x) {\n    return x * 3 + 1;\n}\n");
        main.push_str("int main(int argc, char **argv) { (void)argv; int s = work_fn(argc);\n");
        for i in 0..200 {
            main.push_str(&format!("  s += f{i}(s);\n"));
        }
        main.push_str("  printf(\"%d\\n\", s); return 0; }\n");
        let mut units = vec![main];
        for u in 0..4 {
            let mut c = String::new();
            for i in u * 50..(u + 1) * 50 {
                c.push_str(&format!(
                    "__attribute__((noinline)) int f{i}(int x) {{ int y = x * {i} + 1;\n  \
                     if (y % 7 == 3) y += {i};\n  return y ^ {i}; }}\n"
                ));
            }
            units.push(c);
        }
        (units, work_line)
    }

    pub(crate) fn compile(dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
        let mut sources = Vec::new();
        for (i, text) in source().0.iter().enumerate() {
            let src = dir.join(format!("lines{i}.c"));
            std::fs::write(&src, text).expect("write source");
            sources.push(src);
        }
        let out = dir.join(name);
        let status = Command::new("cc")
            .args(["-O1", "-g", "-Wl,--build-id=sha1"])
            .args(extra)
            .arg("-o")
            .arg(&out)
            .args(&sources)
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
        assert_eq!(line_info(&plain), Some(LineInfo::Plain));
        // DWARF 5 names files through .debug_line_str, DWARF 4 inline.
        for (name, flags) in [
            ("packed", &["-gz=zlib"][..]),
            ("packed4", &["-gz=zlib", "-gdwarf-4"][..]),
        ] {
            let packed = compile(dir.path(), name, flags);
            assert_eq!(line_info(&packed), Some(LineInfo::Compressed), "{name}");
            let mut addrs: Vec<u64> = (0..200)
                .step_by(17)
                .map(|i| symbol_address(&packed, &format!("f{i}")) + 4)
                .collect();
            addrs.push(symbol_address(&packed, "work_fn"));
            let mut table = LineTable::read(&packed).expect("line table");
            let found = table.lookup(&addrs);
            for (&addr, got) in addrs.iter().zip(&found) {
                let got = got
                    .as_ref()
                    .unwrap_or_else(|| panic!("{name}: no line for {addr:#x}"));
                let (file, line) = addr2line(&packed, addr);
                assert_eq!(got.line, line, "{name}: line of {addr:#x}");
                assert_eq!(
                    Path::new(&got.file).file_name(),
                    Path::new(&file).file_name(),
                    "{name}: file of {addr:#x}"
                );
            }
            let work_line = found.last().and_then(|l| l.as_ref()).map(|l| l.line);
            assert!(
                work_line.is_some_and(|l| l + 1 >= source().1 && l <= source().1),
                "{name}: work_fn at line {work_line:?}, body at {}",
                source().1
            );
            // Outside any function: no line rather than a neighbour's.
            assert_eq!(table.lookup(&[0x10]), vec![None]);
            assert!(table.indexed && table.rest.is_none(), "all read by now");
        }
    }

    #[test]
    fn the_table_is_read_only_as_far_as_lookups_need() {
        let dir = tempfile::tempdir().expect("tempdir");
        let packed = compile(dir.path(), "packed", &["-gz=zlib"]);
        let first = symbol_address(&packed, "f3") + 4;
        let last = symbol_address(&packed, "f198") + 4;
        let mut whole = LineTable::read(&packed).expect("line table");
        let expected = whole.lookup(&[0x10, last, first]);
        assert!(expected[1].is_some() && expected[2].is_some());

        let mut table = LineTable::read(&packed).expect("line table");
        // Tiny steps, so that inflating stops well before the end.
        table.inflate_step = 64;
        assert_eq!(table.lookup(&[first]), vec![expected[2].clone()]);
        assert!(!table.indexed, "f3's unit is the second of five");
        assert!(table.rest.is_some(), "the rest is still compressed");
        let read_so_far = table.line.len();
        assert_eq!(table.lookup(&[last]), vec![expected[1].clone()]);
        assert!(table.line.len() > read_so_far);
        // An address no program covers reads to the end, once.
        assert_eq!(table.lookup(&[0x10]), vec![None]);
        assert!(table.indexed && table.rest.is_none());
        assert_eq!(table.line, whole.line);
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
