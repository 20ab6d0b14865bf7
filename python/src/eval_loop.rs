//! Where the eval loop's machine code is: `_PyEval_EvalFrameDefault`'s symbol, plus the
//! cold part a compiler splits off it (`-freorder-blocks-and-partition`), which a stripped
//! build leaves unnamed. A native frame whose PC is in any of these ranges is an eval-loop
//! frame, to be replaced by the Python frames it ran.
//!
//! The cold part is taken from local `_PyEval_EvalFrameDefault.cold` symbols where the
//! file has them, else found from the code. The ways into it: the direct jumps of the hot
//! part that land outside it, and the entries of its computed-goto table (`opcode_targets`,
//! a run of code pointers in the file's data most of which point into the hot part) that
//! do. Each such address lies in an `.eh_frame` FDE; the FDE is a piece of the eval loop
//! when it begins inside the eval loop's own frame: its first row has the CFA and saved
//! registers of a row of the hot part's FDE (a function begins at `rsp+8` with nothing
//! saved). Pieces found are searched for further jumps in turn.
//!
//! On Debian's 3.11 (stripped) the hot part jumps to 314 addresses outside it, its opcode
//! table has 81 entries outside it, and all lie in one FDE of 13.9 KB whose first row is
//! the hot part's `rsp+352` frame. pyenv's 3.11 and 3.12 name a cold part of 4 and 8 bytes,
//! reached only through the opcode table.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::ops::Range;

use crate::disasm::jump_targets;
use crate::eh_frame::EhFrameIndex;
use crate::elf::{ElfImage, Sym};
use crate::limits::{MAX_COLD_PIECES, MAX_EVAL_LOOP_BYTES};

/// Code pointers into the hot part that make a run of data a jump table of it: the opcode
/// table has 256 entries (most into the hot part); a handful of function pointers in a row
/// is no such table.
const MIN_TABLE_HITS: usize = 64;

/// Bytes of data scanned for jump tables at most.
const MAX_DATA_SCANNED: usize = 1 << 26;

/// How the cold part was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColdSource {
    /// From local `.cold` symbols.
    Symbols,
    /// From the code: `jump_targets` distinct targets of direct jumps and `table_entries`
    /// jump-table entries land in the pieces found; `unexplained` direct jump targets
    /// outside the hot part lie in no piece and start no function (0 on every build
    /// checked: a non-zero count means a piece was missed).
    Code {
        jump_targets: usize,
        table_entries: usize,
        unexplained: usize,
    },
}

/// The eval loop's code, as file virtual addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalLoop {
    /// `_PyEval_EvalFrameDefault` as its symbol gives it.
    pub hot: Range<u64>,
    /// The split-off rest, sorted; empty when the build has none.
    pub cold: Vec<Range<u64>>,
    pub cold_source: ColdSource,
}

impl EvalLoop {
    /// Every range, hot first.
    pub fn ranges(&self) -> impl Iterator<Item = Range<u64>> + '_ {
        std::iter::once(self.hot.clone()).chain(self.cold.iter().cloned())
    }

    /// Whether `address` (a file virtual address) is eval-loop code.
    pub fn contains(&self, address: u64) -> bool {
        self.ranges().any(|r| r.contains(&address))
    }
}

/// The eval loop of `elf`, whose `_PyEval_EvalFrameDefault` is `hot`. `use_symbols`:
/// whether to look at `.symtab` first (tests turn it off to check the code way against it).
pub(crate) fn find(elf: &ElfImage<'_>, hot: Sym, use_symbols: bool) -> EvalLoop {
    let hot_range = hot.range();
    if use_symbols {
        let mut cold: Vec<Range<u64>> = elf
            .symtab_functions(|n| n.starts_with("_PyEval_EvalFrameDefault.cold"))
            .into_iter()
            .map(|(_, s)| s.range())
            .filter(|r| !r.is_empty())
            .collect();
        if !cold.is_empty() && cold.len() <= MAX_COLD_PIECES {
            cold.sort_by_key(|r| r.start);
            return EvalLoop {
                hot: hot_range,
                cold,
                cold_source: ColdSource::Symbols,
            };
        }
    }
    let (cold, cold_source) = cold_from_code(elf, &hot_range);
    EvalLoop {
        hot: hot_range,
        cold,
        cold_source,
    }
}

fn cold_from_code(elf: &ElfImage<'_>, hot: &Range<u64>) -> (Vec<Range<u64>>, ColdSource) {
    let outside = |targets: &mut dyn Iterator<Item = u64>| -> BTreeSet<u64> {
        targets.filter(|t| !hot.contains(t)).collect()
    };
    let len = hot.end - hot.start;
    let code = (len <= MAX_EVAL_LOOP_BYTES)
        .then(|| elf.bytes_at(hot.start, len))
        .flatten()
        .unwrap_or(&[]);
    let direct = outside(&mut jump_targets(code, hot.start));
    let tables = outside(&mut table_entries(elf, hot).into_iter());
    if direct.is_empty() && tables.is_empty() {
        return (
            Vec::new(),
            ColdSource::Code {
                jump_targets: 0,
                table_entries: 0,
                unexplained: 0,
            },
        );
    }

    let index = EhFrameIndex::new(elf);
    let hot_shapes: HashSet<_> = index.shapes(hot.start, usize::MAX).into_iter().collect();
    let mut pieces: BTreeMap<u64, Range<u64>> = BTreeMap::new();
    let mut rejected: HashSet<u64> = HashSet::new();
    let mut all_direct = direct.clone();
    let mut pending: Vec<u64> = direct.iter().chain(&tables).copied().collect();
    while let Some(t) = pending.pop() {
        if pieces.values().any(|r| r.contains(&t)) {
            continue;
        }
        let Some(fde) = index.range_of(t) else {
            continue;
        };
        if rejected.contains(&fde.start) || fde.start < hot.end && hot.start < fde.end {
            continue;
        }
        let first = index.shapes(fde.start, 1).into_iter().next();
        let piece = first.is_some_and(|s| !s.is_function_entry() && hot_shapes.contains(&s));
        if !piece || fde.end - fde.start > MAX_EVAL_LOOP_BYTES || pieces.len() == MAX_COLD_PIECES {
            rejected.insert(fde.start);
            continue;
        }
        // A piece may jump on to another one (or back, which is no new target).
        if let Some(bytes) = elf.bytes_at(fde.start, fde.end - fde.start) {
            for j in jump_targets(bytes, fde.start) {
                if !hot.contains(&j) && !fde.contains(&j) && all_direct.insert(j) {
                    pending.push(j);
                }
            }
        }
        pieces.insert(fde.start, fde);
    }
    let in_pieces = |t: &&u64| pieces.values().any(|r| r.contains(t));
    // A direct jump out of the eval loop that reaches no piece must start a function (a
    // tail call); anything else is a piece not found.
    let unexplained = all_direct
        .iter()
        .filter(|t| !in_pieces(t))
        .filter(|t| {
            let starts_function = index.range_of(**t).is_some_and(|r| {
                r.start == **t
                    && index
                        .shapes(r.start, 1)
                        .first()
                        .is_some_and(|s| s.is_function_entry())
            });
            !starts_function
        })
        .count();
    let source = ColdSource::Code {
        jump_targets: all_direct.iter().filter(in_pieces).count(),
        table_entries: tables.iter().filter(in_pieces).count(),
        unexplained,
    };
    (pieces.into_values().collect(), source)
}

/// Entries of the jump tables of the hot part: runs of 8-byte-aligned code pointers in the
/// file's data with at least [`MIN_TABLE_HITS`] into the hot part. Position-dependent
/// files hold the addresses as they are; shared ones hold them as relocation addends,
/// which the GNU linker also writes into the slots.
fn table_entries(elf: &ElfImage<'_>, hot: &Range<u64>) -> Vec<u64> {
    let code = elf.code_ranges();
    let is_code = |w: u64| code.iter().any(|r| r.contains(&w));
    let mut out = Vec::new();
    let mut scanned = 0;
    for (address, data) in elf.data_sections() {
        if scanned + data.len() > MAX_DATA_SCANNED {
            break;
        }
        scanned += data.len();
        let skip = ((8 - address % 8) % 8) as usize;
        let mut run: Vec<u64> = Vec::new();
        let mut flush = |run: &mut Vec<u64>| {
            if run.iter().filter(|w| hot.contains(w)).count() >= MIN_TABLE_HITS {
                out.extend(run.iter().filter(|w| !hot.contains(w)));
            }
            run.clear();
        };
        for word in data.get(skip..).unwrap_or(&[]).chunks_exact(8) {
            let w = u64::from_le_bytes([
                word[0], word[1], word[2], word[3], word[4], word[5], word[6], word[7],
            ]);
            if is_code(w) {
                run.push(w);
            } else {
                flush(&mut run);
            }
        }
        flush(&mut run);
    }
    out.sort_unstable();
    out.dedup();
    out
}
