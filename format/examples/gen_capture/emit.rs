//! Writing: definitions (modules, frames, symbols, strings, stacks) pushed the first time a
//! stack is sampled, as `hotspot record` does.

use super::*;

pub(crate) struct Emitter {
    pub(crate) frame_ids: HashMap<FrameKey, u32>,
    pub(crate) modules_written: [bool; 9],
    pub(crate) stack_ids: Vec<Option<u32>>,
    pub(crate) next_stack: u32,
}

impl Emitter {
    pub(crate) fn frame<W: Write>(
        &mut self,
        w: &World,
        key: FrameKey,
        out: &mut Writer<W>,
        build_ids: &[Vec<u8>],
    ) -> Result<u32, hotspot_format::FormatError> {
        if let Some(&id) = self.frame_ids.get(&key) {
            return Ok(id);
        }
        let id = self.frame_ids.len() as u32;
        let module = match key {
            FrameKey::User(f, _) => w.funcs[f].module,
            FrameKey::Kernel(m, _, _) => m,
        };
        if !self.modules_written[module] {
            self.modules_written[module] = true;
            let (kind, path) = MODULES[module];
            out.push(Record::Module(Module {
                id: module as u32,
                kind,
                path: path.into(),
                build_id: build_ids[module].clone(),
            }))?;
        }
        match key {
            FrameKey::User(f, off) => {
                out.push(Record::Frame(Frame {
                    id,
                    module: module as u32,
                    addr: FrameAddr::FileOffset(off),
                }))?;
                let func = &w.funcs[f];
                let function = out.intern(&func.name);
                let file = func.file.as_deref().map(|s| out.intern(s));
                let line = if file.is_some() {
                    func.line + ((off - func.base) / 12) as u32
                } else {
                    0
                };
                // Some exe frames sit inside an inlined helper.
                let h = hash2(f as u64, off);
                let inlined = if func.module == M_EXE && h.is_multiple_of(7) {
                    let helper = INLINE_HELPERS[(h >> 8) as usize % INLINE_HELPERS.len()];
                    let hf = out.intern("src/util/inline.h");
                    vec![InlinedFn {
                        function: out.intern(helper),
                        loc: SourceLoc {
                            file: Some(hf),
                            line: 30 + ((h >> 16) % 400) as u32,
                        },
                    }]
                } else {
                    Vec::new()
                };
                out.push(Record::Symbol(Symbol {
                    frame: id,
                    function,
                    loc: SourceLoc { file, line },
                    inlined,
                }))?;
            }
            FrameKey::Kernel(_, sym, offset) => {
                let symbol = out.intern(sym);
                out.push(Record::Frame(Frame {
                    id,
                    module: module as u32,
                    addr: FrameAddr::KernelSymbol { symbol, offset },
                }))?;
                out.push(Record::Symbol(Symbol {
                    frame: id,
                    function: symbol,
                    loc: SourceLoc::default(),
                    inlined: Vec::new(),
                }))?;
            }
        }
        self.frame_ids.insert(key, id);
        Ok(id)
    }
}

pub(crate) fn zipf_cdf(n: usize, s: f64) -> Vec<f64> {
    let w: Vec<f64> = (1..=n).map(|k| 1.0 / (k as f64).powf(s)).collect();
    let total: f64 = w.iter().sum();
    let mut acc = 0.0;
    w.into_iter()
        .map(|x| {
            acc += x / total;
            acc
        })
        .collect()
}
