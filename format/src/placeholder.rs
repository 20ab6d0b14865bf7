//! Names for code that has no symbol: `MODULE+0xADDR`, where ADDR is the ELF virtual
//! address at which the CFI entry covering the code starts (its function's start, in
//! practice). Frames of one such function share the name, so a profile lists each unnamed
//! function on its own row instead of one `??` per module; `--symbols` replaces the name
//! when a debug file turns up. SPEC.md §5 (Symbol) describes the form.

/// The placeholder name of the code at `start` in the module whose file name is `module`.
pub fn name(module: &str, start: u64) -> String {
    format!("{module}+0x{start:x}")
}

/// Whether `function` has the placeholder form (so it is not a real symbol).
pub fn is_placeholder(function: &str) -> bool {
    function.rsplit_once("+0x").is_some_and(|(module, hex)| {
        !module.is_empty()
            && !module.contains(char::is_whitespace)
            && !hex.is_empty()
            && hex.len() <= 16
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_recognised_and_symbols_are_not() {
        let n = name("python3.11", 0x1a_8700);
        assert_eq!(n, "python3.11+0x1a8700");
        assert!(is_placeholder(&n));
        for real in [
            "main",
            "_PyEval_EvalFrameDefault",
            "operator+",
            "std::vec::Vec<T>::push",
            "a+0x",
            "+0x10",
            "x+0xZZ",
            "a b+0x10",
        ] {
            assert!(!is_placeholder(real), "{real}");
        }
    }
}
