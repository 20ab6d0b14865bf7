//! Writing the names the symbol worker found: one `Symbol` record per frame.

use std::io::Write;

use hotspot_format::{InlinedFn, Record, SourceLoc, Symbol, Writer};

use crate::error::RecorderError;
use crate::sink::Sink;
use crate::symbol_worker::{Loc, Resolved};

pub(super) fn push<W: Write>(
    resolved: Vec<Resolved>,
    writer: &mut Writer<W>,
) -> Result<(), RecorderError> {
    for r in resolved {
        let function = writer.intern(&r.function);
        let loc = source_loc(&r.loc, writer);
        let inlined = r
            .inlined
            .iter()
            .map(|(name, l)| InlinedFn {
                function: writer.intern(name),
                loc: source_loc(l, writer),
            })
            .collect();
        writer.push(Record::Symbol(Symbol {
            frame: r.frame,
            function,
            loc,
            inlined,
        }))?;
    }
    Ok(())
}

fn source_loc(l: &Loc, sink: &mut impl Sink) -> SourceLoc {
    SourceLoc {
        file: l.file.as_deref().map(|f| sink.intern(f)),
        line: l.line,
    }
}
