//! A fixed-size, direct-mapped cache of compiled rules keyed by (module, address).
//!
//! Hot code is a small set of addresses, so most lookups hit; a miss compiles the rule
//! from the CFI (a binary search and a short evaluation) and replaces whatever the slot
//! held. Memory is fixed whatever the programs do; "no FDE" and "bad CFI" are cached too,
//! so a stack through code without CFI costs no repeated searches.

use crate::cfi::Compiled;
use crate::limits::CACHE_SLOTS;

/// 32 bytes, aligned: a lookup touches one cache line.
#[derive(Clone, Copy, Debug)]
#[repr(align(32))]
struct Slot {
    /// 0: empty (module ids start at 1).
    module: u64,
    svma: u64,
    value: Compiled,
}

#[derive(Debug)]
pub(crate) struct RuleCache {
    slots: Box<[Slot]>,
    pub(crate) hits: u64,
    pub(crate) misses: u64,
}

const _: () = assert!(CACHE_SLOTS.is_power_of_two());
const _: () = assert!(std::mem::size_of::<Slot>() == 32);

impl RuleCache {
    pub(crate) fn new() -> RuleCache {
        let empty = Slot {
            module: 0,
            svma: 0,
            value: Compiled::NoFde,
        };
        RuleCache {
            slots: vec![empty; CACHE_SLOTS].into_boxed_slice(),
            hits: 0,
            misses: 0,
        }
    }

    fn slot(module: u64, svma: u64) -> usize {
        // Fibonacci hashing of both keys: neighbouring addresses spread over the slots.
        let h = (svma ^ module.rotate_left(32)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (h >> (64 - CACHE_SLOTS.trailing_zeros())) as usize
    }

    /// The cached value for (module, svma), or the one `compile` gives (then cached).
    pub(crate) fn get(
        &mut self,
        module: u64,
        svma: u64,
        compile: impl FnOnce() -> Compiled,
    ) -> &Compiled {
        let i = Self::slot(module, svma) & (CACHE_SLOTS - 1);
        let slot = &mut self.slots[i];
        if slot.module == module && slot.svma == svma {
            self.hits += 1;
        } else {
            self.misses += 1;
            *slot = Slot {
                module,
                svma,
                value: compile(),
            };
        }
        &slot.value
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
    fn slots_spread() {
        let used: std::collections::HashSet<usize> = (0..4096u64)
            .map(|i| RuleCache::slot(1, 0x40_0000 + i * 4))
            .collect();
        assert!(used.len() > 2500, "{}", used.len());
    }
}
