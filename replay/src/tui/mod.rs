//! The terminal views — flat, callers/callees, flame, stream, threads, under a timeline —
//! over a capture that is finished or still being written (live mode is a recorder
//! writing the file these views tail).
//!
//! State → input → render: [`state::State`] is plain data; [`input`] changes it through
//! pure functions of (state, event, now); [`render`] draws it read-only. The folds are
//! cached in the state under the inputs they came from ([`model`]).

pub mod app;

pub mod callers;
pub mod chrome;
pub mod draw;
pub mod flame;
pub mod flat;
pub mod hyperlink;
pub mod input;
pub mod keymap;
pub mod layout;
pub mod link;
pub mod model;
pub mod palette;
pub mod picker;
pub mod render;
pub mod state;
pub mod stream;
pub mod tail;
pub mod terminal;
pub mod threads;
pub mod timeline;

pub use app::{TuiError, pick, view};
pub use state::{Mode, Options, State, View};
pub use terminal::Term;
