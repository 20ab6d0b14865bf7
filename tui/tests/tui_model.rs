//! The views' fold (the interned model over the time buckets) agrees with the naive
//! string-keyed fold (`oracle`) on the committed fixtures.

use std::path::PathBuf;

use hotspot_replay::Capture;
use hotspot_tui::model::{Data, Query, ensure_tree, fold, neighbours};

// The oracle is replay's (`replay/tests/model_oracle.rs` checks the reports' model against it).
#[path = "../../replay/tests/oracle/mod.rs"]
mod oracle;
use oracle::{CallTree, flat, neighbours as replay_neighbours};

fn capture(name: &str) -> Capture {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/captures")
        .join(format!("{name}.hsp"));
    Capture::open(&path).expect("fixture capture opens")
}

fn check(name: &str, no_kernel: bool) {
    let c = capture(name);
    let reference = oracle::fold(&c, no_kernel);
    let expected_flat = flat(&reference);
    let expected_tree = CallTree::build(&reference);
    let mut data = Data::new(c);
    let (a, b) = data.span().expect("samples");
    let q = Query {
        from_ns: a,
        to_ns: b,
        no_kernel,
        ..Query::default()
    };
    let mut f = fold(&mut data, &q);
    ensure_tree(&mut f, &data);
    assert_eq!(f.total, reference.total);
    assert_eq!(f.flat, expected_flat);
    // Same shape: totals and functions node by node in child order.
    let mut stack = vec![(0usize, 0usize)];
    while let Some((mine, theirs)) = stack.pop() {
        let (m, t) = (&f.tree.nodes[mine], &expected_tree.nodes[theirs]);
        assert_eq!((m.total, m.self_samples), (t.total, t.self_samples));
        assert_eq!(f.key(mine), t.key.as_ref());
        assert_eq!(f.line(mine), t.lines.first().map(|(l, _)| l));
        assert_eq!(m.children.len(), t.children.len());
        stack.extend(m.children.iter().copied().zip(t.children.iter().copied()));
    }
    for row in f.flat.iter().take(8) {
        let mine = neighbours(&f, &data, &row.key);
        assert_eq!(
            mine,
            replay_neighbours(&reference, &row.key),
            "{}",
            row.key.function
        );
    }
}

#[test]
fn phased_matches_the_replay_model() {
    check("phased", false);
    check("phased", true);
}

#[test]
fn threads_matches_the_replay_model() {
    check("threads", false);
    check("threads", true);
}

/// The model's memory follows distinct (thread, stack) pairs, not samples: five times
/// the samples of the same 64 pairs over five times the time hold no more cells.
#[test]
fn model_memory_follows_distinct_stacks_not_samples() {
    use hotspot_format::Sample;
    use hotspot_tui::model::buckets::MAX_BUCKETS;
    let cells = |n: u64| {
        let mut data = Data::default();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        // Fed in recorder-sized batches, as the viewer's follower hands them over.
        for chunk in (0..n).collect::<Vec<_>>().chunks(50_000) {
            let batch: Vec<Sample> = chunk
                .iter()
                .map(|&i| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    Sample {
                        time_ns: 1_000_000_000 + i * 1_000_000,
                        tid: 1 + (x % 2) as u32,
                        cpu: 0,
                        stack: ((x >> 8) % 32) as u32,
                    }
                })
                .collect();
            data.add_samples(batch);
        }
        assert_eq!(data.samples(), n);
        let q = Query {
            from_ns: 0,
            to_ns: u64::MAX,
            ..Query::default()
        };
        assert_eq!(fold(&mut data, &q).total, n);
        data.buckets.cells()
    };
    let small = cells(1_000_000);
    let big = cells(5_000_000);
    assert!(small <= MAX_BUCKETS * 64 && big <= MAX_BUCKETS * 64);
    assert!(
        big * 4 <= small * 5,
        "5x the samples took {big} cells against {small}"
    );
}
