//! A function's whole name where its DWARF gives only the last part of it.
//!
//! DWARF with line tables only (rustc's `-C debuginfo=line-tables-only`, Cargo's
//! `debug = "line-tables-only"`, clang's `-gline-tables-only`) names each function by its
//! bare name, without the modules, types or namespaces around it: blazesym then names
//! `m::inner::spin_here` as `spin_here`, where perf and samply, which name a function by
//! its symbol, show the whole path. The symbol table still holds it, so for the
//! outermost function of a frame (an inlined one has no symbol of its own) the symbol's
//! name is taken where it is the DWARF name qualified.

/// Whether `symbol` (the symbol table's demangled name covering the address) is `dwarf`
/// (blazesym's name from DWARF) with the path around it, and so the name to show:
/// `m::inner::spin_here` for `spin_here`, `m::inner::sum` for the generic instance
/// `sum<u64>` (a Rust symbol has no generic arguments, and a full DWARF reading names it
/// `m::inner::sum` too), `outer::Worker::spin(unsigned long)` for C++'s `spin`. Never
/// for a name that is already qualified, nor for an unrelated symbol (DWARF and the
/// symbol table may cover an address differently).
pub fn qualifies(symbol: &str, dwarf: &str) -> bool {
    let bare = strip_tail(dwarf, '<', '>');
    if bare.is_empty() || bare.contains("::") {
        return false;
    }
    strip_tail(strip_tail(symbol, '(', ')'), '<', '>')
        .strip_suffix(bare)
        .is_some_and(|head| head.ends_with("::"))
}

/// `name` without a balanced `open … close` group at its end (a parameter list, generic
/// arguments), or `name` itself when it does not end in one.
fn strip_tail(name: &str, open: char, close: char) -> &str {
    if !name.ends_with(close) {
        return name;
    }
    let mut depth = 0usize;
    for (i, c) in name.char_indices().rev() {
        if c == close {
            depth += 1;
        } else if c == open {
            depth -= 1;
            if depth == 0 {
                return &name[..i];
            }
        }
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_name_is_qualified_by_its_symbol() {
        for (symbol, dwarf) in [
            ("m::inner::spin_here", "spin_here"),
            ("outer::Worker::spin(unsigned long)", "spin"),
            ("m::sum", "sum<u64>"),
            (
                "<core::ops::range::Range<T> as core::iter::range::RangeIteratorImpl>::spec_next",
                "spec_next<u64>",
            ),
            ("ns::f<int>(int)", "f"),
            ("ns::f<int>(int)", "f<int>"),
        ] {
            assert!(qualifies(symbol, dwarf), "{symbol} for {dwarf}");
        }
    }

    #[test]
    fn other_names_are_left_alone() {
        // Already whole, the same, or another function.
        for (symbol, dwarf) in [
            ("m::inner::spin_here", "inner::spin_here"),
            ("main", "main"),
            ("m::other_spin_here", "spin_here"),
            ("spin_here", "spin_here"),
            ("m::spin", "spin_here"),
            ("m::x", ""),
            // An unbalanced group is not cut.
            ("a::f)", "f"),
        ] {
            assert!(!qualifies(symbol, dwarf), "{symbol} for {dwarf}");
        }
        assert_eq!(strip_tail("f>>", '<', '>'), "f>>");
        assert_eq!(strip_tail("g<a<b>>", '<', '>'), "g");
    }
}
