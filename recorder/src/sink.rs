//! Where the recorder's records go: the capture writer, or a collecting fake in tests.

use std::io::Write;

use hotspot_format::{FormatError, Record, StringId, Writer};

/// The slice of the capture writer the recorder's tables need.
pub trait Sink {
    fn intern(&mut self, text: &str) -> StringId;
    fn push(&mut self, record: Record) -> Result<(), FormatError>;
}

impl<W: Write> Sink for Writer<W> {
    fn intern(&mut self, text: &str) -> StringId {
        Writer::intern(self, text)
    }
    fn push(&mut self, record: Record) -> Result<(), FormatError> {
        Writer::push(self, record)
    }
}

/// Collects everything in memory; strings are interned like the writer does.
#[derive(Debug, Default)]
pub struct VecSink {
    pub strings: Vec<String>,
    pub records: Vec<Record>,
}

impl Sink for VecSink {
    fn intern(&mut self, text: &str) -> StringId {
        if let Some(i) = self.strings.iter().position(|s| s == text) {
            return i as StringId;
        }
        self.strings.push(text.to_string());
        (self.strings.len() - 1) as StringId
    }
    fn push(&mut self, record: Record) -> Result<(), FormatError> {
        self.records.push(record);
        Ok(())
    }
}
