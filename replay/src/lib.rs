//! hotspot's replay side: reads captures and folds them into profiles, views and reports.

pub mod capture;
pub mod clock;
pub mod error;
pub mod export;
pub mod file;
pub mod history;
pub mod info;
pub mod kind;
pub mod metric;
pub mod model;
pub mod names;
pub mod pipe;
pub mod profile;
pub mod resymbolize;
pub mod sanitize;
pub mod tally;
pub mod time;
pub mod unwinding;

pub use capture::Capture;
pub use error::ReplayError;
