//! Naming a module's frames from its ELF file and debug file, the same way at record
//! time and for `--symbols`. Offsets become addresses by [`crate::segments`]' rule
//! (through [`ModuleFile::vaddr_of`]), then one of two plans names them, chosen per file
//! from where its line table is and how it is stored:
//!
//! - [`Plan::Full`]: blazesym with its DWARF reader: names, file:line and inlined
//!   functions. For DWARF stored plainly (read in place) or absent (ELF symbols only).
//!   A function DWARF names bare (line tables only) takes its symbol's whole name
//!   ([`crate::qualified`]).
//! - [`Plan::Light`]: for compressed DWARF (distribution debug packages such as
//!   libc6-dbg): names from the ELF symbol table, lines from the line table alone
//!   ([`crate::debug_lines`]), no inlined functions. blazesym would inflate every debug
//!   section up front, which the recorder measured at about 3x the time of this path.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use blazesym::symbolize::source::{Elf, Source};
use blazesym::symbolize::{CodeInfo, Input, Symbolized};

use crate::debug_lines::{self, LineInfo, LineTable};
use crate::error::SymbolsError;
use crate::module_file::ModuleFile;

/// A source location as plain strings (callers intern them).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Loc {
    pub file: Option<String>,
    pub line: u32,
}

/// The name of one frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    pub function: String,
    pub loc: Loc,
    /// Inlined functions, outermost first: (name, location inside it).
    pub inlined: Vec<(String, Loc)>,
}

/// How a module's frames are named (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    Full,
    Light,
}

/// A plan with what it reads.
enum Chosen {
    /// blazesym on `source`: the module's own file, or its plain debug file.
    Full { source: PathBuf },
    /// Symbols and lines of `symbols`, the file with the compressed line table.
    Light {
        symbols: PathBuf,
        /// Read at first use; `None` inside once reading failed.
        lines: Option<Option<Box<LineTable>>>,
    },
}

/// Names frames module by module. Holds the parsed debug information between calls;
/// [`Symbolizer::release`] drops it, [`Symbolizer::release_unused`] that of the files
/// not used since the last call.
pub struct Symbolizer {
    /// One per file blazesym reads (so that each can be dropped alone), built on demand.
    blaze: HashMap<PathBuf, blazesym::symbolize::Symbolizer>,
    /// Per module file, decided at first use.
    plans: HashMap<PathBuf, Chosen>,
    /// Module files named since the last [`Symbolizer::release_unused`].
    used: HashSet<PathBuf>,
    debug_dirs: Vec<PathBuf>,
}

impl std::fmt::Debug for Symbolizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Symbolizer")
            .field("plans", &self.plans.len())
            .field("debug_dirs", &self.debug_dirs)
            .finish_non_exhaustive()
    }
}

impl Symbolizer {
    /// A symboliser looking separate debug files up under `debug_dirs`.
    pub fn new(debug_dirs: Vec<PathBuf>) -> Self {
        Symbolizer {
            blaze: HashMap::new(),
            plans: HashMap::new(),
            used: HashSet::new(),
            debug_dirs,
        }
    }

    pub fn debug_dirs(&self) -> &[PathBuf] {
        &self.debug_dirs
    }

    /// The plan chosen for the module file at `path`, once it was used.
    pub fn plan(&self, path: &Path) -> Option<Plan> {
        self.plans.get(path).map(|c| match c {
            Chosen::Full { .. } => Plan::Full,
            Chosen::Light { .. } => Plan::Light,
        })
    }

    /// Drops the parsed debug information and gives the freed memory back to the system
    /// (new frames are rare once a program has warmed up, and libc's DWARF alone holds
    /// ~10 MB).
    pub fn release(&mut self) {
        self.plans.clear();
        self.used.clear();
        if !std::mem::take(&mut self.blaze).is_empty() {
            // SAFETY: malloc_trim only returns free heap pages to the kernel.
            unsafe { libc::malloc_trim(0) };
        }
    }

    /// Drops what was parsed of the module files not named since the last call, and
    /// keeps the others': a file whose new frames keep coming (an interpreter's, on a box
    /// where a script polls) is not parsed again every time the rest is let go of, and
    /// what passing programs needed still goes. Returns how many files were let go of.
    pub fn release_unused(&mut self) -> usize {
        let used = std::mem::take(&mut self.used);
        let unused: Vec<PathBuf> = self
            .plans
            .keys()
            .filter(|p| !used.contains(*p))
            .cloned()
            .collect();
        for path in &unused {
            let read = match self.plans.remove(path) {
                Some(Chosen::Full { source }) => source,
                Some(Chosen::Light { symbols, .. }) => symbols,
                None => continue,
            };
            self.blaze.remove(&read);
        }
        if !unused.is_empty() {
            // SAFETY: malloc_trim only returns free heap pages to the kernel.
            unsafe { libc::malloc_trim(0) };
        }
        unused.len()
    }

    /// Names the code at file offsets `offsets` of `file`: one entry per offset, `None`
    /// where no symbol covers it (or the offset is in no code segment).
    pub fn symbolize(
        &mut self,
        file: &ModuleFile,
        offsets: &[u64],
    ) -> Result<Vec<Option<Named>>, SymbolsError> {
        let path = file.path().to_path_buf();
        if !self.plans.contains_key(&path) {
            let chosen = choose(file, &self.debug_dirs);
            self.plans.insert(path.clone(), chosen);
        }
        self.used.insert(path.clone());
        let known: Vec<(usize, u64)> = offsets
            .iter()
            .enumerate()
            .filter_map(|(i, &o)| Some((i, file.vaddr_of(o)?)))
            .collect();
        let mut out = vec![None; offsets.len()];
        if known.is_empty() {
            return Ok(out);
        }
        let addrs: Vec<u64> = known.iter().map(|&(_, v)| v).collect();
        let named = match self.plans.get_mut(&path) {
            Some(Chosen::Light { symbols, lines }) => {
                let symbols = symbols.clone();
                let locs = lines
                    .get_or_insert_with(|| LineTable::read(&symbols).map(Box::new))
                    .as_mut()
                    .map(|t| t.lookup(&addrs))
                    .unwrap_or_default();
                let mut elf = Elf::new(&symbols);
                // Symbol tables only: not blazesym's DWARF reader, whose cost is the point.
                elf.debug_syms = false;
                self.run(&symbols, elf, &addrs)?
                    .into_iter()
                    .enumerate()
                    .map(|(i, named)| {
                        named.map(|mut n| {
                            if let Some(Some(l)) = locs.get(i) {
                                n.loc = Loc {
                                    file: Some(l.file.clone()),
                                    line: l.line,
                                };
                            }
                            n
                        })
                    })
                    .collect()
            }
            Some(Chosen::Full { source }) => {
                let source = source.clone();
                let named = self.run(&source, Elf::new(&source), &addrs)?;
                self.qualify(&source, &addrs, named)?
            }
            None => Vec::new(),
        };
        for ((i, _), n) in known.iter().zip(named) {
            out[*i] = n;
        }
        Ok(out)
    }

    /// blazesym over ELF virtual addresses of `elf` (read from `path`).
    fn run(
        &mut self,
        path: &Path,
        elf: Elf,
        addrs: &[u64],
    ) -> Result<Vec<Option<Named>>, SymbolsError> {
        let dirs = &self.debug_dirs;
        let blaze = self.blaze.entry(path.to_path_buf()).or_insert_with(|| {
            blazesym::symbolize::Symbolizer::builder()
                .enable_code_info(true)
                .enable_inlined_fns(true)
                .enable_demangling(true)
                .set_debug_dirs(Some(dirs.clone()))
                .build()
        });
        let syms = blaze
            .symbolize(&Source::Elf(elf), Input::VirtOffset(addrs))
            .map_err(|source| SymbolsError::Symbolize {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(syms
            .into_iter()
            .map(|s| match s {
                Symbolized::Sym(sym) => Some(Named {
                    loc: loc(sym.code_info.as_deref()),
                    inlined: sym
                        .inlined
                        .iter()
                        .map(|f| (f.name.to_string(), loc(f.code_info.as_ref())))
                        .collect(),
                    function: sym.name.into_owned(),
                }),
                _ => None,
            })
            .collect())
    }

    /// Gives the functions DWARF names bare (line tables only) their symbols' whole
    /// names ([`crate::qualified`]); `named` is blazesym's naming of `addrs` in `path`.
    fn qualify(
        &mut self,
        path: &Path,
        addrs: &[u64],
        mut named: Vec<Option<Named>>,
    ) -> Result<Vec<Option<Named>>, SymbolsError> {
        // Only names without a path ask the symbol table (C's always do; they keep
        // their name, the symbol's being the same).
        let bare: Vec<usize> = named
            .iter()
            .enumerate()
            .filter(|(_, n)| n.as_ref().is_some_and(|n| !n.function.contains("::")))
            .map(|(i, _)| i)
            .collect();
        if bare.is_empty() {
            return Ok(named);
        }
        let mut elf = Elf::new(path);
        elf.debug_syms = false;
        let at: Vec<u64> = bare.iter().map(|&i| addrs[i]).collect();
        let symbols = self.run(path, elf, &at)?;
        for (&i, symbol) in bare.iter().zip(symbols) {
            if let (Some(n), Some(symbol)) = (named[i].as_mut(), symbol)
                && crate::qualified::qualifies(&symbol.function, &n.function)
            {
                n.function = symbol.function;
            }
        }
        Ok(named)
    }

    /// Names for code no symbol covers, by its module and the start of the CFI entry
    /// that covers it (`python3.11+0x1a8700`, see `hotspot_format::placeholder`): each
    /// unnamed function gets a row of its own instead of one `??` per module. `module`
    /// is the module's file name; one entry per offset.
    pub fn placeholders(
        &self,
        module: &str,
        file: &ModuleFile,
        offsets: &[u64],
    ) -> Vec<Option<String>> {
        let Some(unwind) = file.unwind(&self.debug_dirs) else {
            return vec![None; offsets.len()];
        };
        offsets
            .iter()
            .map(|&o| {
                let start = unwind.function_start(file.vaddr_of(o)?)?;
                Some(hotspot_format::placeholder::name(module, start))
            })
            .collect()
    }
}

/// Decides how to name a module's frames from where its DWARF is and how it is stored.
fn choose(file: &ModuleFile, debug_dirs: &[PathBuf]) -> Chosen {
    let own = file.path().to_path_buf();
    match file.line_info() {
        LineInfo::Compressed => {
            return Chosen::Light {
                symbols: own,
                lines: None,
            };
        }
        LineInfo::Plain => return Chosen::Full { source: own },
        LineInfo::Absent => {}
    }
    match file.debug_file(debug_dirs) {
        Some(debug) => match debug_lines::line_info(debug) {
            Some(LineInfo::Compressed) => Chosen::Light {
                symbols: debug.to_path_buf(),
                lines: None,
            },
            _ => Chosen::Full {
                source: debug.to_path_buf(),
            },
        },
        // No debug file of the same build: the file's own symbols (blazesym may still
        // follow a debug link, which it checks by CRC).
        None => Chosen::Full { source: own },
    }
}

fn loc(ci: Option<&CodeInfo<'_>>) -> Loc {
    match ci {
        Some(ci) => Loc {
            file: Some(ci.to_path().to_string_lossy().into_owned()),
            line: ci.line.unwrap_or(0),
        },
        None => Loc::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build_id;
    use crate::debug_lines::tests::{compile, source, symbol_address};
    use std::process::Command;

    fn tool(cmd: &mut Command) {
        let status = cmd.status().expect("run binutils");
        assert!(status.success(), "{cmd:?} failed");
    }

    /// File offset of a virtual address, by the program headers.
    fn file_offset(path: &Path, vaddr: u64) -> u64 {
        use object::{Object, ObjectSegment};
        let data = std::fs::read(path).expect("read");
        let obj = object::File::parse(&*data).expect("parse");
        obj.segments()
            .find(|s| vaddr >= s.address() && vaddr < s.address() + s.size())
            .map(|s| vaddr - s.address() + s.file_range().0)
            .expect("in a segment")
    }

    fn name_one(s: &mut Symbolizer, bin: &Path, offset: u64) -> Named {
        let file = ModuleFile::open(bin).expect("ELF");
        let mut out = s.symbolize(&file, &[offset]).expect("symbolises");
        out.remove(0).expect("named")
    }

    /// A Rust program built with line tables only (DWARF without paths) is named by its
    /// functions' whole paths, as one built with full debug information is and as perf
    /// names it from the symbol table: `m::inner::spin_here`, not `spin_here`. Lines and
    /// inlined functions still come from DWARF.
    #[test]
    fn functions_dwarf_names_bare_take_their_symbols_whole_names() {
        let dir = tempfile::tempdir().expect("tempdir");
        let src = dir.path().join("m.rs");
        std::fs::write(
            &src,
            "mod inner {\n\
             #[inline(never)] pub fn spin_here(n: u64) -> u64 {\n\
             let mut s = 0u64; for i in 0..n { s = s.wrapping_mul(31).wrapping_add(i ^ (s >> 3)); } s }\n\
             #[inline(never)] pub fn sum<T: Into<u64> + Copy>(v: &[T]) -> u64 {\n\
             v.iter().map(|&x| x.into()).fold(0, u64::wrapping_add) }\n\
             }\n\
             fn main() { let n = std::env::args().count() as u64;\n\
             println!(\"{} {}\", inner::spin_here(n), inner::sum(&[n, 2]));\n\
             println!(\"{}\", inner::sum(&[n as u32])); }\n",
        )
        .expect("write");
        let build = |name: &str, debuginfo: &str| {
            let out = dir.path().join(name);
            tool(
                Command::new("rustc")
                    .args(["-O", "-C", &format!("debuginfo={debuginfo}"), "-o"])
                    .arg(&out)
                    .arg(&src),
            );
            out
        };
        let bare = build("bare", "line-tables-only");
        let full = build("full", "2");
        // Every function of ours, by its mangled symbol: spin_here and sum's two instances.
        let ours = |bin: &Path| -> Vec<u64> {
            use object::{Object, ObjectSymbol};
            let data = std::fs::read(bin).expect("read");
            let obj = object::File::parse(&*data).expect("parse");
            let mut at: Vec<(String, u64)> = obj
                .symbols()
                .filter_map(|s| {
                    let name = s.name().ok()?;
                    (name.contains("5inner9spin_here") || name.contains("5inner3sum"))
                        .then(|| (name.to_string(), s.address()))
                })
                .collect();
            at.sort();
            at.into_iter()
                .map(|(_, a)| file_offset(bin, a + 1))
                .collect()
        };
        let names = |bin: &Path| -> Vec<Named> {
            let file = ModuleFile::open(bin).expect("ELF");
            let offsets = ours(bin);
            assert_eq!(
                offsets.len(),
                3,
                "spin_here and two instances of sum in {bin:?}"
            );
            let mut s = Symbolizer::new(vec![]);
            s.symbolize(&file, &offsets)
                .expect("symbolises")
                .into_iter()
                .map(|n| n.expect("named"))
                .collect()
        };
        let (bare, full) = (names(&bare), names(&full));
        let functions = |n: &[Named]| {
            let mut f: Vec<String> = n.iter().map(|n| n.function.clone()).collect();
            f.sort();
            f
        };
        assert_eq!(
            functions(&bare),
            ["m::inner::spin_here", "m::inner::sum", "m::inner::sum"],
            "line tables only"
        );
        assert_eq!(functions(&full), functions(&bare), "full debug information");
        for n in &bare {
            assert!(
                n.loc.file.as_deref().is_some_and(|f| f.ends_with("m.rs")) && n.loc.line > 0,
                "a line from DWARF: {n:?}"
            );
        }
    }

    /// What is dropped is what was not used since the last drop; a file still in use
    /// stays parsed and named the same.
    #[test]
    fn files_in_use_stay_parsed_and_the_others_go() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = compile(dir.path(), "a", &[]);
        let b = compile(dir.path(), "b", &[]);
        let (oa, ob) = (
            file_offset(&a, symbol_address(&a, "work_fn") + 1),
            file_offset(&b, symbol_address(&b, "work_fn") + 1),
        );
        let mut s = Symbolizer::new(vec![]);
        let first = name_one(&mut s, &a, oa);
        name_one(&mut s, &b, ob);
        assert_eq!(s.release_unused(), 0, "both were used");
        // Only `a` is used before the next drop: `b` goes, `a` stays.
        assert_eq!(name_one(&mut s, &a, oa), first);
        assert_eq!(s.release_unused(), 1);
        assert_eq!((s.plan(&a), s.plan(&b)), (Some(Plan::Full), None));
        assert_eq!(s.blaze.len(), 1);
        // Nothing used since: `a` goes too, and is read again when asked.
        assert_eq!(s.release_unused(), 1);
        assert!(s.blaze.is_empty() && s.plans.is_empty());
        assert_eq!(name_one(&mut s, &a, oa), first);
    }

    /// A stripped binary whose compressed debug file is found by build-id, then by
    /// debuglink, is named from symbols and line table (no inlined frames), and agrees
    /// with blazesym's full DWARF reading of the unstripped build.
    #[test]
    fn compressed_debug_files_give_names_and_lines_without_the_dwarf_reader() {
        let dir = tempfile::tempdir().expect("tempdir");
        let full = compile(dir.path(), "prog", &[]);
        let stripped = dir.path().join("prog.stripped");
        let debug = dir.path().join("prog.debug");
        tool(
            Command::new("objcopy")
                .args(["--only-keep-debug", "--compress-debug-sections=zlib"])
                .arg(&full)
                .arg(&debug),
        );
        tool(
            Command::new("objcopy")
                .arg("--strip-all")
                .arg(format!("--add-gnu-debuglink={}", debug.display()))
                .arg(&full)
                .arg(&stripped),
        );
        let offset = file_offset(&full, symbol_address(&full, "work_fn") + 1);

        // Reference: the unstripped binary through blazesym.
        let mut s = Symbolizer::new(vec![]);
        let reference = name_one(&mut s, &full, offset);
        assert_eq!(s.plan(&full), Some(Plan::Full));
        assert_eq!(reference.function, "work_fn");
        assert!(reference.loc.line + 1 >= source().1 && reference.loc.line <= source().1);

        // By build-id under a debug directory.
        let debug_root = dir.path().join("debug");
        let id = build_id::hex(&build_id::of_elf_file(&stripped).expect("build-id"));
        let by_id = crate::debug_file::by_build_id(&debug_root, &id);
        std::fs::create_dir_all(by_id.parent().expect("parent")).expect("mkdir");
        std::fs::copy(&debug, &by_id).expect("copy");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).expect("mkdir");
        let moved = elsewhere.join("prog.stripped");
        std::fs::copy(&stripped, &moved).expect("copy");
        let mut s = Symbolizer::new(vec![debug_root]);
        let named = name_one(&mut s, &moved, offset);
        assert_eq!(
            s.plan(&moved),
            Some(Plan::Light),
            "compressed debug info takes the light path"
        );
        assert_eq!(named.function, reference.function);
        assert_eq!(named.loc, reference.loc);
        assert!(named.inlined.is_empty());

        // By debuglink, beside the recorded path.
        let mut s = Symbolizer::new(vec![]);
        let named = name_one(&mut s, &stripped, offset);
        assert_eq!(s.plan(&stripped), Some(Plan::Light));
        assert_eq!(
            (named.function, named.loc),
            (reference.function.clone(), reference.loc.clone())
        );

        // The debug file alone (the binary gone): its program headers keep no file
        // ranges, so the layout is reconstructed, and names the same code.
        let alone = ModuleFile::open(&debug).expect("ELF");
        assert!(alone.segments().assumed());
        let mut s = Symbolizer::new(vec![]);
        let named = s.symbolize(&alone, &[offset]).expect("symbolises");
        assert_eq!(
            named[0].as_ref().map(|n| (&n.function, &n.loc)),
            Some((&reference.function, &reference.loc))
        );

        // A debug file of another build is never used.
        let other = compile(dir.path(), "other", &["-O2"]);
        std::fs::remove_file(&debug).expect("rm");
        tool(
            Command::new("objcopy")
                .args(["--only-keep-debug", "--compress-debug-sections=zlib"])
                .arg(&other)
                .arg(&debug),
        );
        assert!(
            ModuleFile::open(&stripped)
                .expect("ELF")
                .debug_file(&[])
                .is_none()
        );
    }
}
