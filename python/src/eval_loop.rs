//! Where the eval loop's machine code is: `_PyEval_EvalFrameDefault`'s symbol, plus the
//! cold part a compiler splits off it (`-freorder-blocks-and-partition`), which a stripped
//! build leaves unnamed. A native frame whose PC is in any of these ranges is an eval-loop
//! frame, to be replaced by the Python frames it ran.
//!
//! The cold part is found from a local `_PyEval_EvalFrameDefault.cold` symbol where the
//! file has one (pyenv's 3.11 and 3.12), else from the code itself: the direct jumps of
//! the hot part that land outside it, grouped by the `.eh_frame` FDE (the compiler's own
//! function boundaries) that covers each target, keeping an FDE only when it is no named
//! function and jumps back into the eval loop. On Debian's 3.11 all 314 such targets lie in
//! one FDE, 13.9 KB long.

use std::collections::BTreeMap;
use std::ops::Range;

use gimli::{BaseAddresses, CieOrFde, EhFrame, LittleEndian, UnwindSection};

use crate::disasm::jump_targets;
use crate::elf::{ElfImage, Sym};
use crate::limits::{MAX_COLD_PIECES, MAX_EVAL_LOOP_BYTES};

/// FDEs parsed at most from one `.eh_frame` (Debian's python3 has about 20,000).
const MAX_FDES: usize = 1 << 20;

/// How the cold part was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColdSource {
    /// No jump of the hot part leaves it: the build has no cold part.
    NoColdPart,
    /// From local `.cold` symbols.
    Symbols,
    /// From the `.eh_frame` FDEs of the hot part's jump targets, `targets` of them
    /// (distinct addresses).
    JumpTargets { targets: usize },
    /// Jumps leave the hot part but no FDE passed the checks (named, or no jump back,
    /// or more pieces than a split makes): the cold part is unknown, `targets` targets.
    Unresolved { targets: usize },
}

/// The eval loop's code, as file virtual addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalLoop {
    /// `_PyEval_EvalFrameDefault` as its symbol gives it.
    pub hot: Range<u64>,
    /// The unnamed (or `.cold`-named) rest, sorted.
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
/// whether to look at `.symtab` first (tests turn it off to check the FDE way against it).
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
    let (cold, cold_source) = cold_by_jumps(elf, &hot_range);
    EvalLoop {
        hot: hot_range,
        cold,
        cold_source,
    }
}

fn cold_by_jumps(elf: &ElfImage<'_>, hot: &Range<u64>) -> (Vec<Range<u64>>, ColdSource) {
    let len = hot.end - hot.start;
    let Some(code) = (len <= MAX_EVAL_LOOP_BYTES)
        .then(|| elf.bytes_at(hot.start, len))
        .flatten()
    else {
        return (Vec::new(), ColdSource::Unresolved { targets: 0 });
    };
    let mut outside: Vec<u64> = jump_targets(code, hot.start)
        .filter(|t| !hot.contains(t))
        .collect();
    outside.sort_unstable();
    outside.dedup();
    if outside.is_empty() {
        return (Vec::new(), ColdSource::NoColdPart);
    }
    let fdes = fde_ranges(elf);
    let named = elf.function_starts();
    let fde_of = |t: u64| -> Option<Range<u64>> {
        let i = fdes.partition_point(|r| r.start <= t);
        let r = fdes.get(i.checked_sub(1)?)?;
        r.contains(&t).then(|| r.clone())
    };
    // FDE start -> (range, jumps into it).
    let mut pieces: BTreeMap<u64, Range<u64>> = BTreeMap::new();
    let mut pending = outside.clone();
    let mut rejected: Vec<u64> = Vec::new();
    while let Some(t) = pending.pop() {
        if hot.contains(&t) || pieces.values().any(|r| r.contains(&t)) {
            continue;
        }
        let Some(fde) = fde_of(t) else { continue };
        if rejected.contains(&fde.start) {
            continue;
        }
        if named.binary_search(&fde.start).is_ok() || fde.end - fde.start > MAX_EVAL_LOOP_BYTES {
            rejected.push(fde.start);
            continue;
        }
        let Some(bytes) = elf.bytes_at(fde.start, fde.end - fde.start) else {
            rejected.push(fde.start);
            continue;
        };
        let targets: Vec<u64> = jump_targets(bytes, fde.start).collect();
        let back = targets
            .iter()
            .any(|t| hot.contains(t) || pieces.values().any(|r| r.contains(t)));
        if !back {
            rejected.push(fde.start);
            continue;
        }
        if pieces.len() == MAX_COLD_PIECES {
            return (
                Vec::new(),
                ColdSource::Unresolved {
                    targets: outside.len(),
                },
            );
        }
        pieces.insert(fde.start, fde.clone());
        // A cold piece may jump on to another one.
        pending.extend(targets.into_iter().filter(|t| !fde.contains(t)));
    }
    let targets = outside
        .iter()
        .filter(|t| pieces.values().any(|r| r.contains(t)))
        .count();
    if pieces.is_empty() {
        return (
            Vec::new(),
            ColdSource::Unresolved {
                targets: outside.len(),
            },
        );
    }
    (
        pieces.into_values().collect(),
        ColdSource::JumpTargets { targets },
    )
}

/// The address ranges of every FDE in `.eh_frame`, sorted by start.
fn fde_ranges(elf: &ElfImage<'_>) -> Vec<Range<u64>> {
    let Some((address, data)) = elf.section(".eh_frame") else {
        return Vec::new();
    };
    let eh = EhFrame::new(data, LittleEndian);
    let mut bases = BaseAddresses::default().set_eh_frame(address);
    if let Some((text, _)) = elf.section(".text") {
        bases = bases.set_text(text);
    }
    let mut out = Vec::new();
    let mut entries = eh.entries(&bases);
    while out.len() < MAX_FDES {
        let Ok(Some(entry)) = entries.next() else {
            break;
        };
        let CieOrFde::Fde(partial) = entry else {
            continue;
        };
        let Ok(fde) =
            partial.parse(|section, bases, offset| section.cie_from_offset(bases, offset))
        else {
            continue;
        };
        let start = fde.initial_address();
        if let Some(end) = start.checked_add(fde.len())
            && end > start
        {
            out.push(start..end);
        }
    }
    out.sort_by_key(|r| r.start);
    out
}
