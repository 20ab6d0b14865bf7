//! Folded stacks and the SVG flame graph: the folded lines feed inferno's flamegraph with
//! the report's totals; the SVG is well-formed XML (xmllint) holding every top function
//! and the search script.

mod export_common;

use std::process::Command;

use export_common::{out, run, tmp, with_slice};
use hotspot_replay::export::{ExportOptions, Format, Selection};

/// How inferno prints counts: `1,638`.
fn commas(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn folded_lines_are_root_first_and_add_up() {
    for no_kernel in [false, true] {
        let sel = Selection {
            no_kernel,
            ..Selection::default()
        };
        let (text, total) = with_slice("split7030.hsp", &sel, false, |s| {
            (out(Format::Folded, s, None), s.total)
        });
        let mut sum = 0;
        let mut previous = String::new();
        for line in text.lines() {
            let (stack, n) = line.rsplit_once(' ').expect("stack count");
            sum += n.parse::<u64>().expect("count");
            assert!(*stack > *previous, "sorted, no duplicates");
            previous = stack.to_string();
            assert!(!stack.contains("0x"), "names, not addresses: {stack}");
        }
        assert_eq!(sum, total);
        assert!(text.contains("__libc_start_call_main;main;hot_a;hot_b;hot_leaf "));
    }
}

#[test]
fn inferno_draws_the_folded_stacks_with_the_same_total() {
    let (text, total) = with_slice("phased-report.hsp", &Selection::default(), false, |s| {
        (out(Format::Folded, s, None), s.total)
    });
    let mut options = inferno::flamegraph::Options::default();
    options.deterministic = true;
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut options, text.lines(), &mut out).expect("inferno");
    let svg = String::from_utf8(out).expect("utf-8");
    assert!(
        svg.contains(&format!(
            "<title>all ({} samples, 100%)</title>",
            commas(total)
        )),
        "the root frame holds {total} samples"
    );
}

#[test]
fn svg_is_well_formed_with_every_top_function() {
    for name in ["split7030.hsp", "phased-report.hsp"] {
        let (bytes, rows, total) = with_slice(name, &Selection::default(), false, |s| {
            (
                Format::Svg
                    .render(s, &ExportOptions::default())
                    .expect("svg"),
                s.flat(),
                s.total,
            )
        });
        let dir = tmp(&format!("svg-{name}"));
        let path = dir.join("flame.svg");
        std::fs::write(&path, &bytes).expect("write");
        run(Command::new("xmllint").arg("--noout").arg(&path));
        let svg = String::from_utf8(bytes).expect("utf-8");
        assert!(
            svg.contains("<svg") && svg.contains("function search("),
            "interactive"
        );
        assert!(svg.contains(&format!("all ({} samples, 100%)", commas(total))));
        for r in rows.iter().filter(|r| r.total_samples * 100 >= total) {
            assert!(
                svg.contains(&format!("<title>{} (", r.key.function)),
                "{name}: {} missing from the flame graph",
                r.key.function
            );
        }
    }
}
