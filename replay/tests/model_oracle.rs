//! The interned profile model (`hotspot_replay::model`) against the naive string-keyed
//! fold it replaced, on random captures: the same flat rows, call tree and
//! callers/callees, with and without kernel frames. The captures are small but crafted to
//! hit the cases that differ between the two engines: recursion (a function twice on a
//! stack), inlined frames, frames without symbols or without a file, unknown frames,
//! stacks the capture does not define, empty stacks, and names shared across modules.

use std::sync::Arc;

use hotspot_format::{Frame, FrameAddr, InlinedFn, Module, ModuleKind, Sample, SourceLoc, Symbol};
use hotspot_replay::Capture;
use hotspot_replay::model::aggregate::{self, Selected};
use hotspot_replay::model::{Hide, Profile};
use proptest::prelude::*;

mod oracle;

/// A frame: (function name, module, file, line, inlined functions, has a symbol).
type FrameSpec = (u8, u8, Option<u8>, u8, Vec<(u8, u8)>, bool);

#[derive(Debug, Clone)]
struct Spec {
    frames: Vec<FrameSpec>,
    /// Leaf first, as the format stores them; indices into `frames` (some past its end).
    stacks: Vec<Vec<u8>>,
    /// (tid, stack id): some stack ids are past the defined stacks.
    samples: Vec<(u8, u8)>,
}

fn spec() -> impl Strategy<Value = Spec> {
    let frame = (
        0u8..6,
        0u8..3,
        proptest::option::of(0u8..2),
        0u8..4,
        proptest::collection::vec((0u8..6, 0u8..4), 0..3),
        proptest::bool::weighted(0.85),
    );
    (
        proptest::collection::vec(frame, 1..10),
        proptest::collection::vec(proptest::collection::vec(0u8..11, 0..9), 1..9),
        proptest::collection::vec((0u8..3, 0u8..10), 0..80),
    )
        .prop_map(|(frames, stacks, samples)| Spec {
            frames,
            stacks,
            samples,
        })
}

fn capture(spec: &Spec) -> Capture {
    let mut c = Capture::default();
    for (id, path, kind) in [
        (0u32, "/usr/bin/app", ModuleKind::Elf),
        (1, "/usr/lib/libc.so.6", ModuleKind::Elf),
        (2, "[kernel.kallsyms]", ModuleKind::Kernel),
    ] {
        c.modules.insert(
            id,
            Module {
                id,
                kind,
                path: path.into(),
                build_id: vec![],
            },
        );
    }
    // Strings 0..6 are function names, 10 and 11 files.
    for f in 0..6u32 {
        c.strings.insert(f, Arc::from(format!("fn_{f}")));
    }
    c.strings.insert(10, "a.c".into());
    c.strings.insert(11, "b.c".into());
    for (i, (func, module, file, line, inlined, symbol)) in spec.frames.iter().enumerate() {
        let id = i as u32;
        c.frames.insert(
            id,
            Frame {
                id,
                module: u32::from(*module),
                addr: FrameAddr::FileOffset(u64::from(id) * 16),
            },
        );
        if *symbol {
            let loc = |line: u8| SourceLoc {
                file: file.map(|f| 10 + u32::from(f)),
                line: u32::from(line),
            };
            c.symbols.insert(
                id,
                Symbol {
                    frame: id,
                    function: u32::from(*func),
                    loc: loc(*line),
                    inlined: inlined
                        .iter()
                        .map(|&(f, l)| InlinedFn {
                            function: u32::from(f),
                            loc: loc(l),
                        })
                        .collect(),
                },
            );
        }
    }
    for (i, frames) in spec.stacks.iter().enumerate() {
        c.stacks
            .insert(i as u32, frames.iter().map(|&f| u32::from(f)).collect());
    }
    for (t, &(tid, stack)) in spec.samples.iter().enumerate() {
        c.samples.push(Sample {
            time_ns: t as u64,
            tid: u32::from(tid),
            cpu: 0,
            stack: u32::from(stack),
        });
    }
    c
}

fn check(c: &Capture, no_kernel: bool) -> Result<(), TestCaseError> {
    let folded = oracle::fold(c, no_kernel);
    let mut profile = Profile::default();
    let mut sel = Selected::default();
    let mut unknown = 0;
    for s in &c.samples {
        match profile.stack_of(c, s.stack, Hide::kernel(no_kernel)) {
            Some(stack) => sel.add(stack, 1),
            None => unknown += 1,
        }
    }
    prop_assert_eq!(unknown, folded.unknown_stacks);
    prop_assert_eq!(sel.total() + unknown, folded.total);
    let flat = aggregate::flat(&profile, &sel);
    prop_assert_eq!(&flat, &oracle::flat(&folded));
    let tree = aggregate::tree(&profile, &sel);
    let expected = oracle::CallTree::build(&folded);
    let mut pairs = vec![(0usize, 0usize)];
    while let Some((mine, theirs)) = pairs.pop() {
        let (m, t) = (&tree.nodes[mine], &expected.nodes[theirs]);
        prop_assert_eq!((m.total, m.self_samples), (t.total, t.self_samples));
        prop_assert_eq!(m.func.map(|f| &profile.keys()[f as usize]), t.key.as_ref());
        let lines: Vec<_> = m
            .lines
            .iter()
            .map(|&(l, n)| (profile.lines()[l as usize].clone(), n))
            .collect();
        prop_assert_eq!(&lines, &t.lines);
        prop_assert_eq!(m.children.len(), t.children.len());
        pairs.extend(m.children.iter().copied().zip(t.children.iter().copied()));
    }
    for row in &flat {
        prop_assert_eq!(
            aggregate::neighbours(&profile, &sel, &row.key),
            oracle::neighbours(&folded, &row.key)
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn the_model_aggregates_as_the_naive_fold(spec in spec()) {
        let c = capture(&spec);
        check(&c, false)?;
        check(&c, true)?;
    }
}
