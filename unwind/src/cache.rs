//! A fixed-size cache of compiled rules keyed by (module, address), two-way set
//! associative.
//!
//! Hot code is a small set of addresses, so most lookups hit; a miss compiles the rule
//! from the CFI (a binary search and a short evaluation, about 0.4 µs) and replaces the
//! older entry of its set. Two ways because a direct-mapped cache let two hot addresses
//! that hash alike evict each other on every sample (seen in the benchmark: a 5-frame
//! stack at 370 ns instead of 80); a set is one 64-byte cache line, so a lookup still
//! touches one line. Memory is fixed whatever the programs do; "no FDE" and "bad CFI"
//! are cached too, so a stack through code without CFI costs no repeated searches.

use crate::cfi::Compiled;
use crate::limits::CACHE_SLOTS;

/// 32 bytes; the slots live in pairs aligned to 64 (see [`Set`]).
#[derive(Clone, Copy, Debug)]
struct Slot {
    /// 0: empty (module ids start at 1).
    module: u64,
    svma: u64,
    value: Compiled,
}

#[derive(Debug)]
pub(crate) struct RuleCache {
    /// CACHE_SLOTS / 2 sets of two slots.
    sets: Box<[Set]>,
    /// Mixed into the stored module ids (bits 48 and up; ids never get there): bumping
    /// it makes every entry stale at once, without touching the 256 KiB.
    generation: u64,
    pub(crate) hits: u64,
    pub(crate) misses: u64,
}

const _: () = assert!(CACHE_SLOTS.is_power_of_two() && CACHE_SLOTS >= 2);
const SETS: usize = CACHE_SLOTS / 2;
const _: () = assert!(std::mem::size_of::<Slot>() == 32);

/// Two slots, 64-byte aligned: the allocation's unit, so every set is one cache line.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Set([Slot; 2]);

impl RuleCache {
    pub(crate) fn new() -> RuleCache {
        let empty = Slot {
            module: 0,
            svma: 0,
            value: Compiled::NoFde,
        };
        RuleCache {
            sets: vec![Set([empty; 2]); SETS].into_boxed_slice(),
            generation: 0,
            hits: 0,
            misses: 0,
        }
    }

    /// The set for a key.
    fn slot(module: u64, svma: u64) -> usize {
        // Fibonacci hashing of both keys: neighbouring addresses spread over the sets.
        let h = (svma ^ module.rotate_left(32)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (h >> (64 - SETS.trailing_zeros())) as usize
    }

    /// Forgets every entry.
    pub(crate) fn clear(&mut self) {
        self.generation = (self.generation + 1) & 0xffff;
        if self.generation == 0 {
            // after 65,536 clears the oldest stamps would match again: really empty it
            for Set(set) in self.sets.iter_mut() {
                for slot in set {
                    slot.module = 0;
                }
            }
        }
    }

    /// The cached value for (module, svma), or the one `compile` gives (then cached).
    pub(crate) fn get(
        &mut self,
        module: u64,
        svma: u64,
        compile: impl FnOnce() -> Compiled,
    ) -> &Compiled {
        let Set(set) = &mut self.sets[Self::slot(module, svma) & (SETS - 1)];
        let module = module ^ (self.generation << 48);
        let way = set
            .iter()
            .position(|s| s.module == module && s.svma == svma);
        if let Some(way) = way {
            self.hits += 1;
            return &set[way].value;
        }
        self.misses += 1;
        // The newest entry goes first; the one it displaces moves to the second way.
        set[1] = set[0];
        set[0] = Slot {
            module,
            svma,
            value: compile(),
        };
        &set[0].value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_after_a_miss_and_keys_are_exact() {
        let mut c = RuleCache::new();
        assert_eq!(*c.get(1, 0x1000, || Compiled::Bad), Compiled::Bad);
        assert_eq!(*c.get(1, 0x1000, || Compiled::NoFde), Compiled::Bad);
        assert_eq!(*c.get(2, 0x1000, || Compiled::NoFde), Compiled::NoFde);
        assert_eq!(*c.get(1, 0x1001, || Compiled::NoFde), Compiled::NoFde);
        assert!(c.hits >= 1);
    }

    #[test]
    fn two_colliding_keys_both_stay() {
        let mut c = RuleCache::new();
        // find two keys of one set
        let a = (1, 0x1000);
        let b = (1..)
            .map(|m| (m, 0x2000u64))
            .find(|&(m, s)| RuleCache::slot(m, s) == RuleCache::slot(a.0, a.1))
            .expect("some module id collides");
        for _ in 0..3 {
            c.get(a.0, a.1, || Compiled::Bad);
            c.get(b.0, b.1, || Compiled::NoFde);
        }
        assert_eq!(c.misses, 2);
        assert_eq!(c.hits, 4);
    }

    #[test]
    fn clear_forgets_everything() {
        let mut c = RuleCache::new();
        c.get(7, 0x1000, || Compiled::Bad);
        c.clear();
        assert_eq!(*c.get(7, 0x1000, || Compiled::NoFde), Compiled::NoFde);
        for _ in 0..70_000 {
            c.clear();
        }
        assert_eq!(*c.get(7, 0x1000, || Compiled::Bad), Compiled::Bad);
        assert_eq!(c.misses, 3);
    }

    #[test]
    fn slots_spread() {
        let used: std::collections::HashSet<usize> = (0..4096u64)
            .map(|i| RuleCache::slot(1, 0x40_0000 + i * 4))
            .collect();
        assert!(used.len() > 2500, "{}", used.len());
    }
}
