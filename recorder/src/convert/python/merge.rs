//! The merge: each eval-loop frame of a native stack replaced by the Python frames that
//! eval-loop call ran, newest first, so `Python → C → Python` reads in that order.
//!
//! The walk reports Python frames newest first, each run of one eval-loop call ending at
//! an entry frame (every frame on 3.8–3.10, `is_entry` on 3.11, the frame before a shim
//! on 3.12+). The native stack, leaf first, meets the eval-loop calls newest first too:
//! the n-th eval-loop frame takes the n-th run.

use hotspot_format::FrameId;

/// One Python frame, named, as the merge takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PyFrame {
    pub frame: FrameId,
    /// The oldest frame of its eval-loop call.
    pub entry: bool,
}

/// How a merge went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Every eval-loop frame took its run and every run found its frame.
    Merged,
    /// The walk stopped at the cap: eval-loop frames past it became one marker.
    Cut,
    /// The runs and the eval-loop frames do not pair up: nothing was replaced.
    Mismatch,
}

/// Writes into `out` the stack `frames` (leaf first) with the frames at `eval` (their
/// positions in `frames`, ascending) replaced by the runs of `python` (newest first).
/// `cap_marker` is the frame that stands for what the walk did not reach when it stopped
/// at its cap (`None`: it reached the oldest frame, or stopped at a fault). On a
/// mismatch `out` is `frames` unchanged.
pub fn merge(
    frames: &[FrameId],
    eval: &[usize],
    python: &[PyFrame],
    cap_marker: Option<FrameId>,
    out: &mut Vec<FrameId>,
) -> Outcome {
    out.clear();
    let mut next = 0;
    let mut eval_at = eval.iter().copied().peekable();
    let mut cut = false;
    for (i, &f) in frames.iter().enumerate() {
        if eval_at.peek() != Some(&i) {
            out.push(f);
            continue;
        }
        eval_at.next();
        if next < python.len() {
            // This call's run: up to and including its entry frame.
            loop {
                let p = python[next];
                out.push(p.frame);
                next += 1;
                if p.entry {
                    break;
                }
                if next == python.len() {
                    // The walk ended inside a run: only the cap explains it.
                    let Some(marker) = cap_marker else {
                        return mismatch(frames, out);
                    };
                    out.push(marker);
                    cut = true;
                    break;
                }
            }
        } else if let Some(marker) = cap_marker {
            // Calls past the cap: one marker for all of them.
            if !cut {
                out.push(marker);
                cut = true;
            }
        } else {
            return mismatch(frames, out);
        }
    }
    if next < python.len() {
        // Runs no eval-loop frame of the native stack ran.
        return mismatch(frames, out);
    }
    if let Some(marker) = cap_marker {
        if !cut {
            // The native stack ended with the runs: the marker still says frames are missing.
            out.push(marker);
        }
        return Outcome::Cut;
    }
    Outcome::Merged
}

fn mismatch(frames: &[FrameId], out: &mut Vec<FrameId>) -> Outcome {
    out.clear();
    out.extend_from_slice(frames);
    Outcome::Mismatch
}

#[cfg(test)]
mod tests {
    use super::*;

    fn py(frame: FrameId, entry: bool) -> PyFrame {
        PyFrame { frame, entry }
    }

    #[test]
    fn python_c_python_reads_in_order() {
        // Native, leaf first: [eval, sorted, eval, main]; Python: key lambda (run 1),
        // then f and <module> (run 2, the entry is <module>).
        let native = [1, 2, 3, 4];
        let python = [py(10, true), py(11, false), py(12, true)];
        let mut out = Vec::new();
        let o = merge(&native, &[0, 2], &python, None, &mut out);
        assert_eq!(o, Outcome::Merged);
        assert_eq!(out, vec![10, 2, 11, 12, 4]);
    }

    #[test]
    fn counts_that_differ_keep_the_native_stack() {
        let native = [1, 2, 3];
        let mut out = Vec::new();
        // Two eval-loop frames, one run.
        let o = merge(&native, &[0, 2], &[py(10, true)], None, &mut out);
        assert_eq!((o, out.clone()), (Outcome::Mismatch, native.to_vec()));
        // One eval-loop frame, two runs.
        let o = merge(&native, &[0], &[py(10, true), py(11, true)], None, &mut out);
        assert_eq!((o, out.clone()), (Outcome::Mismatch, native.to_vec()));
        // A run without its entry frame (a fault in the walk).
        let o = merge(&native, &[0], &[py(10, false)], None, &mut out);
        assert_eq!((o, out.clone()), (Outcome::Mismatch, native.to_vec()));
        // No eval-loop frame and no run: nothing to do.
        let o = merge(&native, &[], &[], None, &mut out);
        assert_eq!((o, out), (Outcome::Merged, native.to_vec()));
    }

    #[test]
    fn calls_past_the_cap_become_one_marker() {
        let native = [1, 2, 3, 4, 5];
        let mut out = Vec::new();
        let o = merge(
            &native,
            &[0, 1, 2, 3],
            &[py(10, true), py(11, true)],
            Some(99),
            &mut out,
        );
        assert_eq!(o, Outcome::Cut);
        assert_eq!(out, vec![10, 11, 99, 5]);
        // Cut inside a run (3.11+: one call ran many frames).
        let o = merge(
            &native,
            &[0, 3],
            &[py(10, false), py(11, false)],
            Some(99),
            &mut out,
        );
        assert_eq!(o, Outcome::Cut);
        assert_eq!(out, vec![10, 11, 99, 2, 3, 5]);
    }
}
