//! `report --format pprof`: a gzipped `profile.proto`, what `go tool pprof`, Pyroscope and
//! Parca read. The messages are written out by hand below (field numbers from
//! `github.com/google/pprof/proto/profile.proto`), so no protoc is needed.
//!
//! A location is one physical frame: its address is the frame's file offset in its
//! mapping (mappings start at 0 with file offset 0, so address = file offset), and its
//! lines are the frame's functions, inlined ones first, as the proto wants. Samples carry
//! two values, `samples/count` and `cpu/nanoseconds` (count × period, period =
//! 1e9 / frequency), and the labels `thread`, `thread_id` and `pid`.
//!
//! Under `--metric off-cpu` and `wall` samples carry four: `samples/count` (periods: a
//! CPU sample is one, an off-CPU sample its periods), `cpu/nanoseconds`,
//! `off_cpu/nanoseconds` and `wall/nanoseconds` (periods × the off-CPU period, in the
//! value of the sample's kind and in wall), the metric's type the default; an off-CPU
//! sample's leaf location is its state's frame and it has a `state` label (S, D, R).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;

use flate2::{Compression, GzBuilder};
use hotspot_format::{FrameAddr, FrameId, ModuleId, ModuleKind, ThreadState};

use super::ExportOptions;
use super::error::ExportError;
use super::slice::{LOST_STACK, NO_FRAMES, Slice};

use crate::kind::FrameKind;
use crate::metric::{self, Class, Metric};
use crate::names::FunctionKey;
use crate::names::{self, FrameName};
use crate::sanitize::display;

#[derive(Clone, PartialEq, prost::Message)]
pub struct Profile {
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    #[prost(int64, tag = "7")]
    pub drop_frames: i64,
    #[prost(int64, tag = "8")]
    pub keep_frames: i64,
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    #[prost(int64, tag = "12")]
    pub period: i64,
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
    #[prost(int64, tag = "14")]
    pub default_sample_type: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueType {
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    /// Leaf first.
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Label {
    #[prost(int64, tag = "1")]
    pub key: i64,
    #[prost(int64, tag = "2")]
    pub str: i64,
    #[prost(int64, tag = "3")]
    pub num: i64,
    #[prost(int64, tag = "4")]
    pub num_unit: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Mapping {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(uint64, tag = "2")]
    pub memory_start: u64,
    #[prost(uint64, tag = "3")]
    pub memory_limit: u64,
    #[prost(uint64, tag = "4")]
    pub file_offset: u64,
    #[prost(int64, tag = "5")]
    pub filename: i64,
    #[prost(int64, tag = "6")]
    pub build_id: i64,
    #[prost(bool, tag = "7")]
    pub has_functions: bool,
    #[prost(bool, tag = "8")]
    pub has_filenames: bool,
    #[prost(bool, tag = "9")]
    pub has_line_numbers: bool,
    #[prost(bool, tag = "10")]
    pub has_inline_frames: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Location {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(uint64, tag = "2")]
    pub mapping_id: u64,
    #[prost(uint64, tag = "3")]
    pub address: u64,
    /// Innermost (inlined) function first, the function they are inlined into last.
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
    #[prost(bool, tag = "5")]
    pub is_folded: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Line {
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    #[prost(int64, tag = "2")]
    pub line: i64,
    #[prost(int64, tag = "3")]
    pub column: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Function {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(int64, tag = "2")]
    pub name: i64,
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    #[prost(int64, tag = "4")]
    pub filename: i64,
    #[prost(int64, tag = "5")]
    pub start_line: i64,
}

/// Builds the tables, interning as it goes; ids are dense from 1 in first-use order.
#[derive(Default)]
struct Builder {
    profile: Profile,
    strings: HashMap<String, i64>,
    functions: HashMap<FunctionKey, u64>,
    locations: HashMap<FrameId, u64>,
    placeholders: HashMap<&'static str, u64>,
    mappings: BTreeMap<ModuleId, u64>,
}

impl Builder {
    fn string(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.strings.get(s) {
            return i;
        }
        let i = self.profile.string_table.len() as i64;
        self.profile.string_table.push(s.to_string());
        self.strings.insert(s.to_string(), i);
        i
    }

    fn function(&mut self, f: &FrameName) -> u64 {
        let key = f.key();
        if let Some(&id) = self.functions.get(&key) {
            return id;
        }
        let id = self.profile.function.len() as u64 + 1;
        let name = self.string(&display(&f.function));
        let filename = match &f.file {
            Some(file) => self.string(&display(file)),
            None => self.string(&display(&f.module)),
        };
        self.profile.function.push(Function {
            id,
            name,
            system_name: name,
            filename,
            start_line: 0,
        });
        self.functions.insert(key, id);
        id
    }

    fn mapping(&mut self, slice: &Slice, module: ModuleId) -> u64 {
        if let Some(&id) = self.mappings.get(&module) {
            return id;
        }
        let id = self.profile.mapping.len() as u64 + 1;
        let m = slice.capture.modules.get(&module);
        let filename = self.string(&display(m.map_or("[unknown]", |m| m.path.as_str())));
        let build_id: String = m
            .map(|m| m.build_id.iter().map(|b| format!("{b:02x}")).collect())
            .unwrap_or_default();
        let build_id = self.string(&build_id);
        self.profile.mapping.push(Mapping {
            id,
            memory_start: 0,
            memory_limit: 0,
            file_offset: 0,
            filename,
            build_id,
            ..Mapping::default()
        });
        self.mappings.insert(module, id);
        id
    }

    /// The location of a physical frame.
    fn location(&mut self, slice: &Slice, frame: FrameId) -> u64 {
        if let Some(&id) = self.locations.get(&frame) {
            return id;
        }
        let capture = slice.capture;
        let mut names = Vec::new();
        names::expand(capture, frame, &mut names);
        let (mapping_id, address) = match capture.frames.get(&frame) {
            Some(f) => {
                let mapping = self.mapping(slice, f.module);
                let address = match f.addr {
                    FrameAddr::FileOffset(off) => off,
                    // Kernel frames are symbol + offset; there is no address to give.
                    FrameAddr::KernelSymbol { .. } => 0,
                };
                let m = &mut self.profile.mapping[mapping as usize - 1];
                m.memory_limit = m.memory_limit.max(address.saturating_add(1));
                if capture.symbols.contains_key(&frame)
                    || matches!(f.addr, FrameAddr::KernelSymbol { .. })
                {
                    m.has_functions = true;
                    m.has_filenames |= names.iter().any(|n| n.file.is_some());
                    m.has_line_numbers |= names.iter().any(|n| n.line > 0);
                    m.has_inline_frames = true;
                }
                (mapping, address)
            }
            None => (0, 0),
        };
        let lines = names
            .iter()
            .map(|n| Line {
                function_id: self.function(n),
                line: i64::from(n.line),
                column: 0,
            })
            .collect();
        let id = self.profile.location.len() as u64 + 1;
        self.profile.location.push(Location {
            id,
            mapping_id,
            address,
            line: lines,
            is_folded: false,
        });
        self.locations.insert(frame, id);
        id
    }

    /// A location for samples without a real frame ([`NO_FRAMES`], [`LOST_STACK`]).
    fn placeholder(&mut self, name: &'static str) -> u64 {
        self.synthetic(name, FrameName::placeholder(name))
    }

    /// The leaf location of an off-CPU sample: its state's frame ([`FrameName::off_cpu`]),
    /// as in every other output.
    fn state(&mut self, state: ThreadState) -> u64 {
        self.synthetic(metric::state_frame(state), FrameName::off_cpu(state))
    }

    /// A location of one function (`frame`, known as `name`) that is no frame of the
    /// capture's.
    fn synthetic(&mut self, name: &'static str, frame: FrameName) -> u64 {
        if let Some(&id) = self.placeholders.get(name) {
            return id;
        }
        let function_id = self.function(&frame);
        let id = self.profile.location.len() as u64 + 1;
        self.profile.location.push(Location {
            id,
            line: vec![Line {
                function_id,
                line: 0,
                column: 0,
            }],
            ..Location::default()
        });
        self.placeholders.insert(name, id);
        id
    }
}

/// The profile message for the selected samples.
pub fn profile(slice: &Slice) -> Profile {
    let (capture, extent) = (slice.capture, &slice.extent);
    let period = slice.period_ns();
    let mut b = Builder::default();
    b.string("");
    let samples = b.string("samples");
    let count = b.string("count");
    let cpu = b.string("cpu");
    let nanoseconds = b.string("nanoseconds");
    let (thread_key, tid_key, pid_key) =
        (b.string("thread"), b.string("thread_id"), b.string("pid"));
    b.profile.sample_type = vec![
        ValueType {
            r#type: samples,
            unit: count,
        },
        ValueType {
            r#type: cpu,
            unit: nanoseconds,
        },
    ];
    b.profile.period_type = Some(ValueType {
        r#type: cpu,
        unit: nanoseconds,
    });
    // Under `off-cpu` and `wall` every sample carries all four values, the metric's the
    // one consumers open on; under `cpu` the profile is what it always was.
    let timed = slice.metric() != Metric::Cpu;
    let state_key = if timed {
        let (off_cpu, wall) = (b.string("off_cpu"), b.string("wall"));
        for t in [off_cpu, wall] {
            b.profile.sample_type.push(ValueType {
                r#type: t,
                unit: nanoseconds,
            });
        }
        let preferred = if slice.metric() == Metric::Wall {
            wall
        } else {
            off_cpu
        };
        b.profile.default_sample_type = preferred;
        b.profile.period_type = Some(ValueType {
            r#type: preferred,
            unit: nanoseconds,
        });
        Some(b.string("state"))
    } else {
        None
    };
    b.profile.period = i64::try_from(period).unwrap_or(i64::MAX);
    let start = extent
        .from_ns
        .or(extent.window_span.map(|w| w.0))
        .or(extent.clock.map(|c| c.start_mono_ns));
    b.profile.time_nanos = start
        .and_then(|s| extent.clock.and_then(|c| c.wall_ns(s)))
        .map_or(0, |w| w.clamp(0, i128::from(i64::MAX)) as i64);
    b.profile.duration_nanos = (slice.duration_s() * 1e9).round() as i64;
    let comment = format!("hotspot capture {}", slice.file_name());
    let comment = b.string(&comment);
    b.profile.comment.push(comment);
    if !slice.selection.is_everything() {
        let c = b.string(&format!("selection: {}", slice.selection.describe()));
        b.profile.comment.push(c);
    }
    // pprof takes the first mapping for the main binary (`go tool pprof` titles the
    // profile `File: <its name>`), so the user-space program goes first, the kernel and
    // the rest after, in first-use order.
    for m in main_modules(slice) {
        b.mapping(slice, m);
    }
    for (tid, stack, class, n) in slice.tally() {
        let mut locations = Vec::new();
        match capture.stacks.get(&stack) {
            Some(frames) => {
                if let Class::OffCpu(state) = class {
                    locations.push(b.state(state));
                }
                // What the model's variants leave out ([`Hide::keeps`]), frame by frame.
                let hide = slice.filter.hide();
                let kinds: Vec<FrameKind> =
                    frames.iter().map(|&f| FrameKind::of(capture, f)).collect();
                let python = kinds.contains(&FrameKind::Python);
                for (&f, &kind) in frames.iter().zip(&kinds) {
                    if hide.keeps(kind, python) {
                        locations.push(b.location(slice, f));
                    }
                }
                if locations.is_empty() {
                    locations.push(b.placeholder(NO_FRAMES));
                }
            }
            None => locations.push(b.placeholder(LOST_STACK)),
        }
        let thread = capture.threads.get(&tid);
        let name = b.string(&display(thread.map_or("", |t| t.name())));
        let mut label = vec![
            Label {
                key: thread_key,
                str: name,
                ..Label::default()
            },
            Label {
                key: tid_key,
                num: i64::from(tid),
                ..Label::default()
            },
        ];
        if let Some(t) = thread {
            label.push(Label {
                key: pid_key,
                num: i64::from(t.pid),
                ..Label::default()
            });
        }
        let value = match state_key {
            None => {
                let n = n as i64;
                vec![n, n.saturating_mul(period as i64)]
            }
            Some(key) => {
                let ns = i64::try_from(metric::ns(n, period)).unwrap_or(i64::MAX);
                let (cpu_ns, off_ns) = match class {
                    Class::OnCpu => (ns, 0),
                    Class::OffCpu(state) => {
                        let letter = b.string(&state.letter().to_string());
                        label.push(Label {
                            key,
                            str: letter,
                            ..Label::default()
                        });
                        (0, ns)
                    }
                };
                vec![i64::try_from(n).unwrap_or(i64::MAX), cpu_ns, off_ns, ns]
            }
        };
        b.profile.sample.push(Sample {
            location_id: locations,
            value,
            label,
        });
    }
    b.profile
}

/// The modules to list first: the profiled executables the selected samples run in, in
/// module order. When none is known (a process that ended before the recorder read its
/// executable, or one replaced since), the user-space file in the most samples' stacks,
/// preferring one not named as a shared library (`*.so*`: libc is in as many stacks as the
/// program), so that a profile with user samples never opens on the kernel.
fn main_modules(slice: &Slice) -> Vec<ModuleId> {
    let capture = slice.capture;
    let exes: BTreeSet<&str> = capture.processes.values().map(|p| p.exe.as_str()).collect();
    // Samples whose stack has a frame in the module.
    let mut samples: BTreeMap<ModuleId, u64> = BTreeMap::new();
    for (_, stack, _class, n) in slice.tally() {
        let Some(frames) = capture.stacks.get(&stack) else {
            continue;
        };
        let modules: BTreeSet<ModuleId> = frames
            .iter()
            .filter_map(|f| capture.frames.get(f))
            .map(|f| f.module)
            .collect();
        for m in modules {
            *samples.entry(m).or_default() += n;
        }
    }
    let known: Vec<ModuleId> = capture
        .modules
        .values()
        .filter(|m| samples.contains_key(&m.id) && exes.contains(m.path.as_str()))
        .map(|m| m.id)
        .collect();
    if !known.is_empty() {
        return known;
    }
    let shared_library = |path: &str| path.rsplit('/').next().is_some_and(|f| f.contains(".so"));
    // (not a shared library, samples, lower id first on a tie)
    samples
        .iter()
        .filter_map(|(&id, &n)| {
            let m = capture.modules.get(&id)?;
            (m.kind == ModuleKind::Elf).then(|| ((!shared_library(&m.path), n, Reverse(id)), id))
        })
        .max()
        .map(|(_, id)| id)
        .into_iter()
        .collect()
}

/// Writes the gzipped encoding of [`profile`]. The gzip header carries no time or name,
/// so the bytes depend on the input only.
pub fn write(slice: &Slice, _: &ExportOptions, w: &mut dyn Write) -> Result<(), ExportError> {
    let raw = prost::Message::encode_to_vec(&profile(slice));
    let render = |source| ExportError::Render {
        what: "pprof profile",
        source,
    };
    let mut gz = GzBuilder::new().mtime(0).write(w, Compression::default());
    gz.write_all(&raw).map_err(render)?;
    gz.finish().map_err(render)?;
    Ok(())
}
