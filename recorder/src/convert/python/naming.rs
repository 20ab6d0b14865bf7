//! Python frames as capture frames: one module, `[python]`, marked as an interpreter's
//! frames (`InterpreterModule`); one frame per distinct (qualified name, file, line),
//! named by its own `Symbol`, so the capture names them anywhere it is replayed.

use std::collections::HashMap;

use hotspot_format::{
    FormatError, FrameId, InterpreterModule, InterpreterRole, Language, ModuleId, Record,
};
use hotspot_python::CodeObject;

use crate::convert::normalizer::Normalizer;
use crate::sink::Sink;

/// Path of the module Python frames are in.
pub const PYTHON_MODULE: &str = "[python]";

/// The marker standing for a frame whose code object could not be read.
pub const UNREADABLE: &str = "[python: unreadable code object]";
/// The marker ending a Python stack cut at `--python-frames`.
pub const CUT: &str = "[python: more frames than --python-frames]";
/// The marker at the root of a stack whose Python frames did not match its eval loop.
pub const MISMATCH: &str = "[python: frames did not match the native stack]";

/// Python frames named so far.
#[derive(Debug, Default)]
pub struct Naming {
    module: Option<ModuleId>,
    keys: HashMap<(String, String, u32), FrameId>,
    markers: HashMap<&'static str, FrameId>,
}

impl Naming {
    fn module(
        &mut self,
        norm: &mut Normalizer,
        sink: &mut impl Sink,
    ) -> Result<ModuleId, FormatError> {
        if let Some(m) = self.module {
            return Ok(m);
        }
        let (id, new) = norm.own_module(PYTHON_MODULE, sink)?;
        if new {
            sink.push(Record::InterpreterModule(InterpreterModule {
                module: id,
                language: Language::Python,
                role: InterpreterRole::Frames,
            }))?;
        }
        self.module = Some(id);
        Ok(id)
    }

    /// The frame of `code` at `line` (0: unknown).
    pub fn code_frame(
        &mut self,
        code: &CodeObject,
        line: u32,
        norm: &mut Normalizer,
        sink: &mut impl Sink,
    ) -> Result<FrameId, FormatError> {
        let key = (code.qualname.clone(), code.filename.clone(), line);
        if let Some(&f) = self.keys.get(&key) {
            return Ok(f);
        }
        let module = self.module(norm, sink)?;
        let id = (self.keys.len() + self.markers.len()) as u64;
        let f = norm.named_frame(
            module,
            id,
            &code.qualname,
            Some((&code.filename, line)),
            sink,
        )?;
        self.keys.insert(key, f);
        Ok(f)
    }

    /// One of the markers above.
    pub fn marker(
        &mut self,
        text: &'static str,
        norm: &mut Normalizer,
        sink: &mut impl Sink,
    ) -> Result<FrameId, FormatError> {
        if let Some(&f) = self.markers.get(text) {
            return Ok(f);
        }
        let module = self.module(norm, sink)?;
        let id = (self.keys.len() + self.markers.len()) as u64;
        let f = norm.named_frame(module, id, text, None, sink)?;
        self.markers.insert(text, f);
        Ok(f)
    }
}
