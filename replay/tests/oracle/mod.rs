//! The naive string-keyed fold, the oracle the interned model is checked against: every
//! sample's stack expanded into names, stacks keyed by their names, flat rows and call
//! tree built from those keys with plain maps.
//!
//! (While the reports still fold this way, this module names their functions; it takes
//! their code when they read the interned model.)

#![allow(dead_code)]

use hotspot_replay::Capture;
pub use hotspot_replay::flat::flat;
pub use hotspot_replay::profile::Folded;
use hotspot_replay::profile::{Filter, fold as naive_fold};
pub use hotspot_replay::tree::{CallTree, neighbours};

/// Every sample of `c`, folded by names (kernel frames dropped if asked).
pub fn fold(c: &Capture, no_kernel: bool) -> Folded {
    naive_fold(
        c,
        &Filter {
            no_kernel,
            ..Filter::default()
        },
    )
}
