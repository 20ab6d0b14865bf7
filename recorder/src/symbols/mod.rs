//! The recorder's symbol code, around the shared [`hotspot_symbols`] library: the worker
//! thread that names user frames off the sampling path ([`worker`]), and which file a
//! process maps, found through `/proc` ([`module_file`]).

pub(crate) mod module_file;
pub(crate) mod worker;
