//! Python processes: which traced processes run a CPython the recorder walks (recognised
//! from the files they map, with `hotspot-python`), what the source is told to walk
//! ([`Pythons::take_registrations`]), the code objects named while the process lives,
//! and each sample's Python frames merged into its native stack ([`merge`]).
//! The capture gets one `[python]` module whose frames are `qualname` at `file:line`,
//! and an `InterpreterProcess` record per process with how its frames fared.

pub(crate) mod merge;
mod naming;

use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use hotspot_format::{FormatError, InterpreterProcess, InterpreterStatus, Language, Record};
use hotspot_python::{
    CodeCache, Detection, Interpreter, MemoryReader, ReadError, TsdLayout, detect,
};

use crate::event::{Mapping, MappingKind, PythonEnd, PythonStack};
use crate::host::Host;
use crate::sink::Sink;
use merge::{Outcome, PyFrame};
pub(crate) use naming::Naming;

/// Largest file read to recognise an interpreter in it: pyenv's `libpython3.X.so` with
/// its DWARF is ~25 MiB, Debian's `python3` 6.6 MiB.
const MAX_INTERPRETER_FILE: u64 = 256 << 20;

/// How many times an undecided process's mappings are asked for, once a poll (every 5
/// ms while one waits): a quarter of a second.
const RECHECKS: u32 = 50;

/// Largest C library read for its thread-specific data layout.
const MAX_LIBC_FILE: u64 = 64 << 20;

/// What a file is, to the recorder: decided once per file (inode and path).
#[derive(Debug, Clone)]
enum Verdict {
    NotPython,
    Unsupported { version: String, reason: String },
    Supported(Arc<Interpreter>, Arc<[Load]>),
}

/// A `PT_LOAD` segment: where a file offset is in the file's addresses.
#[derive(Debug, Clone, Copy)]
struct Load {
    offset: u64,
    vaddr: u64,
    filesz: u64,
}

/// A process whose Python frames are walked.
#[derive(Debug)]
struct Walking {
    /// The eval loop's code in the process (hot and cold parts).
    eval: Vec<Range<u64>>,
    cache: CodeCache,
    /// 4: `instr` is `f_lasti`; 8: an offset from the code object.
    instr_size: u8,
}

#[derive(Debug)]
struct PyProcess {
    record: InterpreterProcess,
    walk: Option<Walking>,
    /// When it was decided (host clock): an exec before then is the image it is about.
    since_ns: u64,
    /// `record` is in the current capture (its counts are this capture's).
    written: bool,
}

/// The Python side of the recording core.
#[derive(Debug, Default)]
pub struct Pythons {
    verdicts: HashMap<(u64, String), Verdict>,
    tsd: HashMap<(u64, String), Result<TsdLayout, String>>,
    procs: HashMap<u32, PyProcess>,
    registrations: Vec<(u32, Option<[u8; 48]>)>,
    /// Processes that map a file named like Python but are not decided yet (pyenv's
    /// launcher before its `libpython`, an interpreter before its C library), with how
    /// many more times their mappings are asked for (see [`Pythons::recheck`]).
    undecided: HashMap<u32, u32>,
    naming: Naming,
    /// Scratch for one sample's named Python frames.
    named: Vec<PyFrame>,
    /// Why no process is walked, when the source cannot walk Python here (the kernel
    /// refused the samplers with the walk): supported interpreters are then written as
    /// unsupported for this reason, and none is registered.
    walk_off: Option<String>,
}

/// What the recorder tells a Python process apart by: its executable or a library whose
/// file name says Python (`python3.11`, `libpython3.11.so.1.0`). Reading every mapped
/// file of every process would cost `record -a` a read of each; an interpreter embedded
/// in a file named otherwise keeps its native stacks.
fn may_be_python(m: &Mapping) -> bool {
    m.kind() == MappingKind::File && file_name(&m.path).contains("python")
}

fn is_libc(m: &Mapping) -> bool {
    let name = file_name(&m.path);
    m.kind() == MappingKind::File && (name.starts_with("libc.so") || name.starts_with("libc-2."))
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

impl Pythons {
    /// The Python side of a recording whose source walks Python, or (`walk_off`) cannot,
    /// for this reason.
    pub fn new(walk_off: Option<String>) -> Self {
        Pythons {
            walk_off,
            ..Pythons::default()
        }
    }

    /// `pid`'s interpreter, decided as not walked (`record` says why).
    fn not_walked(
        &mut self,
        pid: u32,
        record: InterpreterProcess,
        host: &mut dyn Host,
        sink: &mut impl Sink,
    ) -> Result<(), FormatError> {
        sink.push(Record::InterpreterProcess(record.clone()))?;
        self.procs.insert(
            pid,
            PyProcess {
                record,
                walk: None,
                since_ns: host.now_ns(),
                written: true,
            },
        );
        Ok(())
    }

    /// Looks at `pid`'s mappings, unless its interpreter is decided: a supported one is
    /// registered for the walk (once its C library is mapped too) and written to the
    /// capture; an unsupported one is written with the reason.
    pub fn consider(
        &mut self,
        pid: u32,
        start_ns: u64,
        maps: &[Mapping],
        host: &mut dyn Host,
        sink: &mut impl Sink,
    ) -> Result<(), FormatError> {
        if self.procs.contains_key(&pid) {
            self.undecided.remove(&pid);
            return Ok(());
        }
        if maps.iter().any(may_be_python) {
            self.undecided.entry(pid).or_insert(RECHECKS);
        }
        for m in maps.iter().filter(|m| may_be_python(m)) {
            let verdict = self.verdict(pid, m, host);
            let record = |status, version: String| InterpreterProcess {
                pid,
                start_ns,
                language: Language::Python,
                path: m.path.clone(),
                version,
                status,
                ..InterpreterProcess::default()
            };
            match verdict {
                Verdict::NotPython => continue,
                Verdict::Unsupported { version, reason } => {
                    let record = record(InterpreterStatus::Unsupported { reason }, version);
                    return self.not_walked(pid, record, host, sink);
                }
                Verdict::Supported(interp, loads) => {
                    let version = format!("{}.{}", interp.version.major, interp.version.minor);
                    if let Some(reason) = self.walk_off.clone() {
                        let record = record(InterpreterStatus::Unsupported { reason }, version);
                        return self.not_walked(pid, record, host, sink);
                    }
                    let Some(libc) = maps.iter().find(|m| is_libc(m)) else {
                        // Not mapped yet: the mapping event that maps it asks again.
                        return Ok(());
                    };
                    let tsd = self.tsd(pid, libc, host);
                    let bias = loads.iter().find_map(|l| {
                        // The file's numbers are untrusted: no arithmetic on them may panic.
                        (m.offset >= l.offset
                            && m.offset < l.offset.saturating_add(l.filesz.max(1)))
                        .then(|| {
                            m.start
                                .wrapping_sub(l.vaddr.wrapping_add(m.offset - l.offset))
                        })
                    });
                    let (tsd, bias) = match (tsd, bias) {
                        (Ok(t), Some(b)) => (t, b),
                        (Err(reason), _) => {
                            let record = record(InterpreterStatus::Unsupported { reason }, version);
                            return self.not_walked(pid, record, host, sink);
                        }
                        (_, None) => continue,
                    };
                    let mut entry = [0u8; 48];
                    let runtime = interp.runtime.address.wrapping_add(bias);
                    entry[..8].copy_from_slice(&runtime.to_le_bytes());
                    entry[8..40].copy_from_slice(&interp.walk().to_bytes());
                    entry[40..].copy_from_slice(&tsd.to_bytes());
                    self.registrations.push((pid, Some(entry)));
                    let walk = Walking {
                        eval: interp
                            .eval_loop
                            .ranges()
                            .map(|r| r.start.wrapping_add(bias)..r.end.wrapping_add(bias))
                            .collect(),
                        cache: CodeCache::new(interp.layout, interp.type_addresses(bias)),
                        instr_size: interp.walk().instr_size,
                    };
                    let record = record(InterpreterStatus::Walked, version);
                    sink.push(Record::InterpreterProcess(record.clone()))?;
                    self.procs.insert(
                        pid,
                        PyProcess {
                            record,
                            walk: Some(walk),
                            since_ns: host.now_ns(),
                            written: true,
                        },
                    );
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Asks the host for the mappings of the processes not decided yet and decides them
    /// if it can: their mapping events reach the recorder up to a poll later (100 ms),
    /// a short script's whole life. Each is asked at most [`RECHECKS`] times.
    pub fn recheck(
        &mut self,
        starts: impl Fn(u32) -> u64,
        host: &mut dyn Host,
        sink: &mut impl Sink,
    ) -> Result<(), FormatError> {
        let mut pids: Vec<u32> = self.undecided.keys().copied().collect();
        pids.sort_unstable();
        for pid in pids {
            let left = self.undecided.get(&pid).copied().unwrap_or(0);
            if left == 0 {
                self.undecided.remove(&pid);
                continue;
            }
            self.undecided.insert(pid, left - 1);
            match host.mappings(pid) {
                Some(maps) => self.consider(pid, starts(pid), &maps, host, sink)?,
                None => {
                    self.undecided.remove(&pid);
                }
            }
        }
        Ok(())
    }

    /// Whether a process whose frames are walked was decided less than `within_ns` ago
    /// (host clock, `now_ns`): its code objects are read from its memory, which goes
    /// when it exits, so a short script's samples must be read soon.
    pub fn walked_since(&self, now_ns: u64, within_ns: u64) -> bool {
        self.procs
            .values()
            .any(|p| p.walk.is_some() && now_ns.saturating_sub(p.since_ns) < within_ns)
    }

    /// Whether some process waits to be decided ([`Pythons::recheck`]).
    pub fn undecided(&self) -> bool {
        !self.undecided.is_empty()
    }

    /// Whether a new mapping of a process may change what [`Pythons::consider`] decides.
    pub fn maps_matter(&self, pid: u32, m: &Mapping) -> bool {
        !self.procs.contains_key(&pid) && (may_be_python(m) || is_libc(m))
    }

    fn verdict(&mut self, pid: u32, m: &Mapping, host: &mut dyn Host) -> Verdict {
        let key = (m.inode, m.path.clone());
        if let Some(v) = self.verdicts.get(&key) {
            return v.clone();
        }
        let v = match host.read_mapped_file(pid, m, MAX_INTERPRETER_FILE) {
            None => Verdict::NotPython,
            Some(bytes) => match detect(&bytes, Some(&m.path)) {
                Ok(Detection::Supported(interp)) => {
                    Verdict::Supported(Arc::from(interp), loads(&bytes).into())
                }
                Ok(Detection::Unsupported(u)) => Verdict::Unsupported {
                    version: u.version.map(|v| v.to_string()).unwrap_or_default(),
                    reason: u.to_string(),
                },
                Ok(Detection::NotPython(_)) | Err(_) => Verdict::NotPython,
            },
        };
        self.verdicts.insert(key, v.clone());
        v
    }

    fn tsd(&mut self, pid: u32, libc: &Mapping, host: &mut dyn Host) -> Result<TsdLayout, String> {
        let key = (libc.inode, libc.path.clone());
        self.tsd
            .entry(key)
            .or_insert_with(|| match host.read_mapped_file(pid, libc, MAX_LIBC_FILE) {
                None => Err(format!("cannot read {}", libc.path)),
                Some(bytes) => TsdLayout::from_elf(&bytes)
                    .map_err(|e| format!("thread-specific data of {}: {e}", libc.path)),
            })
            .clone()
    }

    /// What the source is to walk from now on (`Some`) or no longer (`None`), by pid,
    /// since the last call.
    pub fn take_registrations(&mut self) -> Vec<(u32, Option<[u8; 48]>)> {
        std::mem::take(&mut self.registrations)
    }

    /// Whether [`Pythons::take_registrations`] has something.
    pub fn registrations_pending(&self) -> bool {
        !self.registrations.is_empty()
    }

    /// The eval loop of `pid` when its frames are walked (empty otherwise).
    pub fn eval_loop(&self, pid: u32) -> &[Range<u64>] {
        self.procs
            .get(&pid)
            .and_then(|p| p.walk.as_ref())
            .map_or(&[], |w| &w.eval)
    }

    /// `pid` replaced its image at `time_ns`: what was decided of it before is forgotten
    /// (not what was decided of the new image already, when the host was asked after
    /// the exec).
    pub fn exec(
        &mut self,
        pid: u32,
        time_ns: u64,
        sink: &mut impl Sink,
    ) -> Result<(), FormatError> {
        if self.procs.get(&pid).is_some_and(|p| p.since_ns < time_ns) {
            self.forget(pid, sink)?;
        }
        Ok(())
    }

    /// `pid` exited: its last counts are written and its walk ends.
    pub fn forget(&mut self, pid: u32, sink: &mut impl Sink) -> Result<(), FormatError> {
        self.undecided.remove(&pid);
        if let Some(p) = self.procs.remove(&pid) {
            if p.walk.is_some() {
                self.registrations.push((pid, None));
            }
            if p.written {
                sink.push(Record::InterpreterProcess(p.record))?;
            }
        }
        Ok(())
    }

    /// Writes `pid`'s interpreter to the current capture if it is decided and was not
    /// yet (its `Process` is written again in a flight recorder's next segment): its
    /// verdict and walk carry over, not re-read.
    pub fn rewrite(&mut self, pid: u32, sink: &mut impl Sink) -> Result<(), FormatError> {
        if let Some(p) = self.procs.get_mut(&pid).filter(|p| !p.written) {
            p.written = true;
            sink.push(Record::InterpreterProcess(p.record.clone()))?;
        }
        Ok(())
    }

    /// The current capture ends and another begins (the flight recorder's next
    /// segment): each process's counts so far go to `ending`, and start over; the frames
    /// are named anew in the next capture. What is walked, and how, stays.
    pub fn next_capture(&mut self, ending: &mut impl Sink) -> Result<(), FormatError> {
        let mut pids: Vec<u32> = self.procs.keys().copied().collect();
        pids.sort_unstable();
        for pid in pids {
            let Some(p) = self.procs.get_mut(&pid) else {
                continue;
            };
            if std::mem::replace(&mut p.written, false) {
                ending.push(Record::InterpreterProcess(p.record.clone()))?;
            }
            let r = &mut p.record;
            (r.samples, r.merged, r.mismatched) = (0, 0, 0);
            (r.without_frames, r.unresolved_frames, r.cut) = (0, 0, 0);
        }
        self.naming = Naming::default();
        Ok(())
    }

    /// Every process's last counts (the recording ends).
    pub fn finish(&mut self, sink: &mut impl Sink) -> Result<(), FormatError> {
        let mut pids: Vec<u32> = self.procs.keys().copied().collect();
        pids.sort_unstable();
        for pid in pids {
            self.forget(pid, sink)?;
        }
        Ok(())
    }

    /// One sample's stack with its Python frames merged in: `frames` (leaf first, as the
    /// normaliser made it) becomes `out`. `eval` are the positions of the eval-loop
    /// frames in `frames`. Code objects are read from the process through `host`.
    #[allow(clippy::too_many_arguments)]
    pub fn merge(
        &mut self,
        pid: u32,
        py: &PythonStack,
        frames: &[hotspot_format::FrameId],
        eval: &[usize],
        host: &mut dyn Host,
        norm: &mut super::normalizer::Normalizer,
        sink: &mut impl Sink,
        out: &mut Vec<hotspot_format::FrameId>,
    ) -> Result<(), FormatError> {
        out.clear();
        let Some(p) = self.procs.get_mut(&pid) else {
            out.extend_from_slice(frames);
            return Ok(());
        };
        let Some(walk) = p.walk.as_mut() else {
            out.extend_from_slice(frames);
            return Ok(());
        };
        let counts = &mut p.record;
        counts.samples += 1;
        if py.frames.is_empty() && eval.is_empty() {
            counts.without_frames += 1;
            out.extend_from_slice(frames);
            return Ok(());
        }
        let mem = HostMemory {
            host: RefCell::new(host),
            pid,
        };
        self.named.clear();
        for f in &py.frames {
            let instr = if walk.instr_size == 4 {
                f.instr as i32 as i64 as u64
            } else {
                f.code.wrapping_add(u64::from(f.instr))
            };
            // Named after the sample: the code object may have been freed since (the
            // process exited, or dropped it), then the one that decoded there last.
            let code = walk
                .cache
                .get(&mem, f.code)
                .or_else(|e| walk.cache.last_good(f.code).ok_or(e));
            let frame = match code {
                Ok(code) => {
                    let line = code.line_at(instr).unwrap_or(0);
                    self.naming.code_frame(&code, line, norm, sink)?
                }
                Err(_) => {
                    counts.unresolved_frames += 1;
                    self.naming.marker(naming::UNREADABLE, norm, sink)?
                }
            };
            self.named.push(PyFrame {
                frame,
                entry: f.entry,
            });
        }
        let cap = match py.end {
            PythonEnd::Cap => Some(self.naming.marker(naming::CUT, norm, sink)?),
            _ => None,
        };
        match merge::merge(frames, eval, &self.named, cap, out) {
            Outcome::Merged => counts.merged += 1,
            Outcome::Cut => {
                counts.merged += 1;
                counts.cut += 1;
            }
            Outcome::Mismatch => {
                counts.mismatched += 1;
                out.push(self.naming.marker(naming::MISMATCH, norm, sink)?);
            }
        }
        Ok(())
    }
}

/// The `PT_LOAD` segments of an ELF file (none when it does not parse).
fn loads(bytes: &[u8]) -> Vec<Load> {
    use object::read::elf::{ElfFile64, ProgramHeader};
    let Ok(elf) = ElfFile64::<object::Endianness>::parse(bytes) else {
        return Vec::new();
    };
    let endian = elf.endian();
    elf.elf_program_headers()
        .iter()
        .filter(|p| p.p_type(endian) == object::elf::PT_LOAD)
        .map(|p| Load {
            offset: p.p_offset(endian),
            vaddr: p.p_vaddr(endian),
            filesz: p.p_filesz(endian),
        })
        .collect()
}

/// A target's memory through the host.
struct HostMemory<'a> {
    host: RefCell<&'a mut dyn Host>,
    pid: u32,
}

impl MemoryReader for HostMemory<'_> {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        let n = self.host.borrow_mut().read_memory(self.pid, addr, buf);
        if n == buf.len() {
            Ok(())
        } else {
            Err(ReadError {
                addr,
                len: buf.len(),
            })
        }
    }
}
