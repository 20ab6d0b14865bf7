//! hotspot's terminal views — flat, callers/callees, flame, stream, threads, under a
//! timeline — over a capture that is finished or still being written (live mode is a
//! recorder writing the file these views tail, through [`hotspot_replay::file::Tail`]).
//! The UI over `hotspot-replay`'s model: this crate depends on replay, never the other
//! way, so the exporters and anything else linking replay do without ratatui.
//!
//! State → input → render: [`state::State`] is plain data; [`input`] changes it through
//! pure functions of (state, event, now); [`render`] draws it read-only. The folds are
//! cached in the state under the inputs they came from ([`model`]).

pub(crate) mod app;

pub mod diff;
pub mod input;
pub mod keymap;
pub mod layout;
pub mod links;
pub mod model;
pub mod palette;
pub mod render;
pub mod state;
pub(crate) mod terminal;
pub mod views;

pub use app::{TuiError, pick, view, view_against};
pub use state::{Mode, Options, State, View};
pub use terminal::Term;
