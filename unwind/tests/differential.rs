//! Our unwinder against framehop 0.16 on the same real dumps: the same frames wherever
//! framehop gets (it stops at `__restore_rt`, whose CFA is a memory-reading expression,
//! and may stop at code without CFI), and the same complete stacks where it completes.

#![allow(clippy::unwrap_used)]

mod common;

use common::oracle::Oracle;
use common::{Build, SCENARIOS, dumps, unwind};
use hotspot_unwind::End;

#[test]
fn same_frames_as_framehop() {
    let mut compared = 0;
    let mut complete_in_both = 0;
    for build in Build::ALL {
        for name in SCENARIOS {
            let dump = &dumps(build)[name];
            let (frames, end, process) = unwind(dump);
            let ours: Vec<u64> = frames.iter().map(|f| f.addr).collect();
            let mut theirs = Vec::new();
            let mut completed = Oracle::new(dump).unwind(dump, &mut theirs);
            // framehop cannot evaluate a CFA expression that reads memory (__restore_rt's,
            // DRAP's CFA = [rbp - 8]); past one it goes on by the frame-pointer rule, which
            // leaves sp wrong: under frame pointers it reaches main without signal_spin and
            // signal_caller, and after drap it claims "complete" at main. Compare up to
            // that frame: the trampoline (our first exact frame after the leaf), drap.
            let reliable = match name {
                "signal" => frames.iter().skip(1).position(|f| f.exact).map(|t| t + 2),
                "drap" => Some(2),
                _ => None,
            };
            if let Some(keep) = reliable
                && theirs.len() > keep
            {
                theirs.truncate(keep);
                completed = false;
            }
            let names = process.names(
                &theirs
                    .iter()
                    .enumerate()
                    .map(|(i, &addr)| hotspot_unwind::Frame {
                        addr,
                        exact: i == 0,
                    })
                    .collect::<Vec<_>>(),
            );
            println!(
                "{build:?} {name}: framehop {} frames, completed {completed}: {names:?}",
                theirs.len()
            );
            assert!(!theirs.is_empty());
            let n = theirs.len().min(ours.len());
            assert_eq!(ours[..n], theirs[..n], "{build:?} {name}");
            if completed {
                assert_eq!(ours, theirs, "{build:?} {name}: framehop completed");
                assert_eq!(end, End::Complete);
                complete_in_both += 1;
            } else {
                // framehop stopped early; we went at least as far
                assert!(ours.len() >= theirs.len(), "{build:?} {name}");
            }
            compared += 1;
        }
    }
    assert_eq!(compared, 16);
    // chain, thread, recursion, jit, leaf, vdso at least, in both builds
    assert!(complete_in_both >= 10, "{complete_in_both}");
}
