//! The unwinder on programs nobody on the team wrote: Debian's python3 (3.11, no frame
//! pointers, stripped), sampled by `tests/sampler.c` as the BPF program will sample it.

#![allow(clippy::unwrap_used)]

mod common;

use common::oracle::Oracle;
use common::{PYTHON_WORK, samples, unwind};
use hotspot_unwind::End;

#[test]
fn python3_stacks_reach_start() {
    let dumps = samples("python3", &["/usr/bin/python3", "-c", PYTHON_WORK], 300);
    assert!(dumps.len() >= 100, "{} samples", dumps.len());
    let mut complete = 0;
    let mut ends = std::collections::BTreeMap::new();
    for d in dumps {
        let (frames, end, process) = unwind(d);
        *ends.entry(format!("{end:?}")).or_insert(0) += 1;
        if end == End::Complete {
            complete += 1;
            let names = process.names(&frames);
            let tail = &names[names.len().saturating_sub(4)..]; // python3.11 tail-calls Py_BytesMain from main
            assert_eq!(
                tail[1..],
                ["__libc_start_call_main", "__libc_start_main", "_start"],
                "{}: {names:?}",
                d.name
            );
        } else {
            println!("{}: {end:?} {:?}", d.name, process.names(&frames));
        }
    }
    println!("{} samples: {ends:?}", dumps.len());
    // the goal for python3: at least 99% complete
    assert!(complete * 100 >= dumps.len() * 99, "{ends:?}");
}

#[test]
fn python3_same_frames_as_framehop() {
    let dumps = samples("python3", &["/usr/bin/python3", "-c", PYTHON_WORK], 300);
    let mut oracle = Oracle::new(&dumps[0]);
    let mut theirs = Vec::new();
    let mut completed_both = 0;
    for d in dumps {
        let (frames, end, _) = unwind(d);
        let ours: Vec<u64> = frames.iter().map(|f| f.addr).collect();
        let completed = oracle.unwind(d, &mut theirs);
        let n = ours.len().min(theirs.len());
        assert_eq!(ours[..n], theirs[..n], "{}: {end:?}", d.name);
        if completed {
            assert_eq!(ours, theirs, "{}", d.name);
            assert_eq!(end, End::Complete, "{}", d.name);
            completed_both += 1;
        }
    }
    assert!(
        completed_both * 100 >= dumps.len() * 80,
        "{completed_both} of {}",
        dumps.len()
    );
}
