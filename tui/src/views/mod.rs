//! The views, each a read-only render of the state into a buffer: flat, flame,
//! callers/callees, stream and threads in the main area, the timeline under them, the
//! chrome (header, tabs, footer, help) around them, and the process picker.

pub(crate) mod callers;
pub(crate) mod chrome;
pub(crate) mod diff;
pub mod draw;
pub(crate) mod flame;
pub(crate) mod flat;
pub mod picker;
pub(crate) mod stream;
pub mod threads;
pub(crate) mod timeline;
